"""Sources, W rules and the paper's dataset templates."""
