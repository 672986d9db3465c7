"""Running a model over batches that shrink when memory runs out (scorers and generation)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch

log = logging.getLogger(__name__)


def run_halving(
    order: list[int],
    batch_size: int,
    run: Callable[[list[int]], list],
    device: str,
    what: str = "batch size",
    on_batch: Callable[[int], None] | None = None,
) -> tuple[dict[int, Any], int]:
    """``run(indices)`` over ``order`` in batches of ``batch_size``; an out-of-memory error
    halves the batch and retries it (at 1 it is raised). -> (result per index, the batch size
    that fitted, to keep for later calls)"""
    results: dict[int, Any] = {}
    i = 0
    while i < len(order):
        chunk = order[i : i + batch_size]
        try:
            values = run(chunk)
        except torch.OutOfMemoryError:
            if batch_size == 1:
                raise
            batch_size = max(1, batch_size // 2)
            log.warning("out of memory: %s halved to %d", what, batch_size)
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
            continue
        results.update(zip(chunk, values, strict=True))
        i += len(chunk)
        if on_batch is not None:
            on_batch(len(chunk))
    return results, batch_size
