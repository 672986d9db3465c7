"""Stage 2's scorers."""
