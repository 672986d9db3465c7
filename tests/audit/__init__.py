"""The attribute audit."""
