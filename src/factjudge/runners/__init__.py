"""Other ways to run an evaluation: provider batch files and Ray Data."""
