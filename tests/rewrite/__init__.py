"""Stage 1 and its rewriters."""
