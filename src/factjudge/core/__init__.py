"""The pure core: scope, reconciliation, metrics and aggregation (data in, data out)."""
