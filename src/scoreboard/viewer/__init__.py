"""The local web viewer over the history store (`scoreboard view`)."""
