"""Progress bars: tqdm on a terminal, silent when RATE_PROGRESS=0 (``rate -q`` sets it) or
output is not a terminal. Each bar shows tqdm's estimate of the time left."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
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


@contextmanager
def steps(desc: str, names: list[str]) -> Iterator[Callable[[str], None]]:
    """A bar over the named steps of a long job: call the yielded function with each step's
    name as it starts; the bar shows the step, how many are done and the time left."""
    bar = progress(None, desc, total=len(names), unit="step")
    started = False

    def begin(name: str) -> None:
        nonlocal started
        if started:
            bar.update(1)
        started = True
        bar.set_postfix_str(name, refresh=True)

    try:
        yield begin
        if started:
            bar.update(1)
    finally:
        bar.close()
