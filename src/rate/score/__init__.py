"""Stage 2, score_dataset, and its scorer backends."""
