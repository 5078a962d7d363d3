"""Small helpers every layer may use: async helpers, deterministic JSON, DataFrames."""
