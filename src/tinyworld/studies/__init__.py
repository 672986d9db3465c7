"""Studies on the tiny world that check the estimators against ground truth: the coverage of
their intervals over many samples, and the paper's two semi-synthetic experiments."""
