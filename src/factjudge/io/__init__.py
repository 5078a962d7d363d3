"""Reading input (facts, configs, tables, datasets) and the eval run folder; output files."""
