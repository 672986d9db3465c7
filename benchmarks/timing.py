"""One timer for every benchmark module."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Run ``fn()``; -> (wall seconds, its result)."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result
