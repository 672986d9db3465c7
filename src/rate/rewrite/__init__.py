"""Stage 1, create_dataset, and its rewriter backends."""
