"""What a person reads: Markdown and HTML reports, facts.csv, number formatting."""
