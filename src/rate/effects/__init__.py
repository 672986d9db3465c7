"""Stage 3, treatment_effects: the estimators (one table), the bootstrap and the stage."""
