"""The studies against ground truth."""
