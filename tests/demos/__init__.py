"""The demos."""
