"""The package version, in one place (pyproject.toml reads it; importing it loads nothing else)."""
__version__ = "0.1.0"
