"""Studies of the pipeline on real text, offline."""
