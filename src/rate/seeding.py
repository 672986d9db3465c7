"""Seeds derived from any parts, stable across processes and machines."""

from __future__ import annotations

import hashlib


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from any parts (hash-based, so it is stable across processes)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")
