"""Running judges: one document (pipeline), many (runner), and judging the judge."""
