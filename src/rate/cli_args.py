"""Flags that mean the same thing in every command, each declared in one place, and the type
that holds every numeric flag to a declared range as the settings schema holds a key."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import typing
from pathlib import Path
from typing import Any

from rate.schema import Bound


class Number:
    """An argparse ``type``: a number of ``kind`` within ``bound``. A value outside it (NaN and
    the infinities included) stops the command before any work with one line naming the flag,
    the range and the value, as :class:`~rate.schema.Bound` words it for a config key."""

    def __init__(self, kind: type[int] | type[float], bound: Bound) -> None:
        self.kind, self.bound = kind, bound

    def __call__(self, text: str) -> int | float:
        try:
            value = self.kind(text)
        except ValueError:
            wanted = "a whole number" if self.kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        problem = self.bound.problem(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value

    def __repr__(self) -> str:  # argparse names a type by it in its own messages
        return f"{self.kind.__name__} {self.bound.rule()}"


class Commas:
    """An argparse ``type``: values separated by commas, each checked by ``item`` (a
    :class:`Number`); a string default goes through it too."""

    def __init__(self, item: Number) -> None:
        self.item = item

    def __call__(self, text: str) -> list[int | float]:
        values = [self.item(v.strip()) for v in text.split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"expected values separated by commas, got {text!r}")
        return values

    def __repr__(self) -> str:
        return f"comma-separated {self.item!r}"


def count(high: int, why: str = "", low: int = 1) -> Number:
    """A whole number from ``low`` (1: a count of things) to ``high``, which every flag that
    sizes work declares."""
    return Number(int, Bound(low, high=high, why=why))


class Setting(Number):
    """The flag that sets key ``name`` of a settings class (``"module:Class"``): its type and
    declared range, so that the flag and the key cannot drift apart. The class is imported
    when a value is given, not when the parser is built (``rate --help`` stays fast)."""

    def __init__(self, cls: str, name: str) -> None:
        self.cls, self.name = cls, name

    def __call__(self, text: str) -> int | float:
        if not hasattr(self, "bound"):
            module, _, qualname = self.cls.partition(":")
            cls = getattr(importlib.import_module(module), qualname)
            (f,) = [f for f in dataclasses.fields(cls) if f.name == self.name]
            self.kind, self.bound = typing.get_type_hints(cls)[self.name], f.metadata["bound"]
        return super().__call__(text)

    def __repr__(self) -> str:
        return f"{self.cls}.{self.name}"


def add_out_argument(p: argparse.ArgumentParser, help: str = "", **kwargs: Any) -> None:
    """--out: where the command writes (a file, a folder or a path prefix, as ``help`` says)."""
    p.add_argument("--out", type=Path, metavar="OUT", help=help or "where to write", **kwargs)


POLL = Number(float, Bound(0, strict=True, high=3600, why="seconds"))


def add_poll_argument(p: argparse.ArgumentParser, help: str) -> None:
    """--poll: seconds between checks of SLURM jobs' states (default 5, or RATE_SLURM_POLL)."""
    p.add_argument(
        "--poll",
        type=POLL,
        # A string default goes through ``type`` too: a bad RATE_SLURM_POLL is named as --poll's.
        default=os.environ.get("RATE_SLURM_POLL", "5"),
        help=f"{help} (default 5, or RATE_SLURM_POLL)",
    )
