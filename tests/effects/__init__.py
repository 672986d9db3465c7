"""Stage 3: the estimators, the bootstrap and the stage."""
