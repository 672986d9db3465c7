"""The tiny RLHF world."""
