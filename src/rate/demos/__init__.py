"""The demos: the tiny world checked against its truth, and real text offline."""
