"""Progress bars: tqdm on a terminal, silent when RATE_PROGRESS=0 or output is not a terminal."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def enabled() -> bool:
    """Whether progress bars are shown (RATE_PROGRESS=0 silences them)."""
    return os.environ.get("RATE_PROGRESS", "1") != "0"


def progress(iterable: Iterable[T], desc: str, total: int | None = None, **kwargs) -> Iterable[T]:
    """Wrap ``iterable`` in a progress bar (tqdm's disable=None hides it when not on a TTY)."""
    return tqdm(
        iterable, desc=desc, total=total, disable=None if enabled() else True, leave=False, **kwargs
    )
