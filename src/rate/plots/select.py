"""Choosing the effect files to draw: by glob pattern, dataset and concept, of one run kind
(smoke-test or full). The plot stage's ``plots.effects_files`` globs and the results notebook
both choose through here."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from rate.errors import ConfigError
from rate.io import read_json
from rate.store import parse_name

GLOB_CHARS = frozenset("*?[")


def is_glob(name: str) -> bool:
    return any(ch in GLOB_CHARS for ch in name)


def run_kind(paths: Iterable[Path], smoke: bool) -> list[Path]:
    """The files of the run kind asked for (smoke-test or full), oldest first by the stamp in
    their names (ours and the reference's, whose scored files say _smoke_test before _scored);
    hidden files (a write in progress) and metadata records left out."""
    out = []
    for p in map(Path, paths):
        if p.name.startswith(".") or p.name.endswith(".meta.json"):
            continue
        parsed = parse_name(p)
        stamp, seq = (parsed[1], parsed[2]) if parsed else ("", 0)
        is_smoke = parsed[3] if parsed else p.stem.endswith("_smoke_test")
        if is_smoke == smoke:
            out.append((stamp, seq, p.name, p))
    return [p for *_, p in sorted(out)]


def glob_inside(folder: Path, pattern: str, root: Path, key: str) -> list[Path]:
    """The files that ``pattern`` (relative to ``folder``; ``**`` for any depth) matches,
    none outside ``root``; a pattern that reaches outside ``root`` is an error naming ``key``."""
    if Path(pattern).expanduser().is_absolute():
        raise ConfigError(
            f"{key}: {pattern!r}: a pattern is relative to {folder}; drop the leading folder"
        )
    top = Path(os.path.abspath(root))
    if not Path(os.path.normpath(Path(os.path.abspath(folder)) / pattern)).is_relative_to(top):
        raise ConfigError(
            f"{key}: {pattern!r} reaches outside PROJECT_DIR ({root}); keep it inside"
        )
    found = []
    for name in glob.glob(pattern, root_dir=folder, recursive=True):
        path = folder / name
        # A link may lead out of the project even where the pattern does not: never follow it out.
        if path.is_file() and path.resolve().is_relative_to(top.resolve()):
            found.append(path)
    return found


def _wanted(value: str | Sequence[str] | None) -> set[str] | None:
    if value is None or value == "" or value == []:
        return None
    return {value} if isinstance(value, str) else set(value)


def select_effect_files(
    folder: Path,
    smoke: bool,
    pattern: str = "*.json",
    dataset: str | Sequence[str] | None = None,
    concept: str | Sequence[str] | None = None,
    root: Path | None = None,
) -> list[Path]:
    """The effect files in ``folder`` (PROJECT_DIR/effects) of one run kind that match the glob
    ``pattern`` and, where given, one of the datasets and concepts (the files' own
    ``dataset_name`` and ``concept``), oldest first. Nothing matching is an empty list; the
    pattern may not reach outside ``root`` (default: the folder above ``folder``)."""
    root = folder.parent if root is None else root
    datasets, concepts = _wanted(dataset), _wanted(concept)
    out = []
    for path in run_kind(glob_inside(folder, pattern, root, "pattern"), smoke):
        if datasets is None and concepts is None:
            out.append(path)
            continue
        effects = read_json(path)
        if not isinstance(effects, dict):
            continue  # not an effect file (another JSON the pattern caught)
        if datasets is not None and str(effects.get("dataset_name")) not in datasets:
            continue
        if concepts is not None and str(effects.get("concept")) not in concepts:
            continue
        out.append(path)
    return out
