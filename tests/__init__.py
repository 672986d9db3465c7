"""The test suite; its folders mirror src/rate."""
