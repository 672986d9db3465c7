"""Stage 4's figures and tables."""
