"""The data layout under PROJECT_DIR: timestamped output names, `latest`, metadata records.

Every stage writes ``<name>_<YYYYMMDD_HHMMSS>[_smoke_test].<ext>`` into its folder, with a
``<file>.meta.json`` beside it (config, template, counts, git commit, time) so that a result can
be traced to what made it. ``latest`` picks the newest output of the previous stage by the
timestamp in its name, never by the file's mtime (copying a folder changes mtimes).
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rate import __version__
from rate.errors import ConfigError
from rate.io import atomic_write_json
from rate.settings import project_dir

STAMP_FORMAT = "%Y%m%d_%H%M%S"
SMOKE_SUFFIX = "_smoke_test"
_STAMPED = re.compile(r"^(?P<stem>.+)_(?P<stamp>\d{8}_\d{6})(?P<seq>-\d+)?(?P<smoke>_smoke_test)?$")


@dataclass(frozen=True)
class Layout:
    """Where each stage reads and writes, relative to one project folder."""

    root: Path

    @classmethod
    def from_env(cls) -> Layout:
        return cls(project_dir())

    @property
    def rewrites(self) -> Path:
        return self.root / "data" / "rewrites"

    @property
    def scored(self) -> Path:
        return self.root / "data" / "scored"

    @property
    def effects(self) -> Path:
        return self.root / "effects"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def folder(self, name: str) -> Path:
        """The data folder a config's ``dataset_folder`` names (``rewrites`` or ``scored``)."""
        folders = {"rewrites": self.rewrites, "scored": self.scored}
        if name not in folders:
            raise ConfigError(f"unknown dataset_folder {name!r}; use 'rewrites' or 'scored'")
        return folders[name]


def timestamp(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now()).strftime(STAMP_FORMAT)


def output_path(folder: Path, stem: str, ext: str, smoke: bool, stamp: str | None = None) -> Path:
    """A new timestamped file name in ``folder``; never one that exists already."""
    stamp = stamp or timestamp()
    suffix = SMOKE_SUFFIX if smoke else ""
    path = folder / f"{stem}_{stamp}{suffix}{ext}"
    seq = 1
    while path.exists() or meta_path(path).exists():  # two runs within one second
        seq += 1
        path = folder / f"{stem}_{stamp}-{seq}{suffix}{ext}"
    return path


def parse_name(path: Path) -> tuple[str, str, int, bool] | None:
    """(stem, stamp, sequence, smoke) of a timestamped output name, or None."""
    name = path.name
    for ext in (".jsonl", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    m = _STAMPED.match(name)
    if not m:
        return None
    seq = int(m["seq"][1:]) if m["seq"] else 1
    return m["stem"], m["stamp"], seq, bool(m["smoke"])


def find_latest(folder: Path, stem_prefix: str, ext: str, smoke: bool) -> Path:
    """The newest ``<stem_prefix>...<stamp>`` file in ``folder`` of the run kind asked for."""
    candidates = []
    if folder.is_dir():
        for p in folder.iterdir():
            if not p.name.endswith(ext) or p.name.endswith(".meta.json") or p.name.startswith("."):
                continue
            parsed = parse_name(p)
            if not parsed or parsed[3] != smoke:
                continue
            # 'imdb' matches imdb_length_scored_<stamp> but not imdb2_<stamp>.
            if parsed[0] == stem_prefix or parsed[0].startswith(stem_prefix + "_"):
                candidates.append((parsed[1], parsed[2], p))
    if not candidates:
        kind = "smoke-test" if smoke else "full (non-smoke)"
        raise ConfigError(
            f"dataset_filename 'latest': no {kind} file '{stem_prefix}_<timestamp>{ext}' in "
            f"{folder}; run the previous stage first, or name the file explicitly"
        )
    return max(candidates)[2]


def resolve_input(folder: Path, filename: str, stem_prefix: str, ext: str, smoke: bool) -> Path:
    """``latest`` or a file name (relative to ``folder``, or absolute) -> an existing file."""
    if filename == "latest":
        return find_latest(folder, stem_prefix, ext, smoke)
    path = Path(filename).expanduser()
    path = path if path.is_absolute() else folder / path
    if not path.is_file():
        raise ConfigError(
            f"dataset_filename {filename!r}: no such file {path}; check the name, or use 'latest'"
        )
    return path


def effects_stem(dataset_name: str, concept: str, score: str) -> str:
    """The name of an effect file before its stamp."""
    return f"{dataset_name}_{concept}_{score}_treatment_effects"


def scored_stem(source: Path, prefix: str) -> str:
    """The stem of a scored file made from ``source``: adding a model to a scored file keeps
    its dataset name (``<name>_scored_<stamp>`` -> ``<name>``)."""
    parsed = parse_name(source)
    stem = parsed[0] if parsed else source.stem
    return stem.removesuffix("_scored") or prefix


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def git_commit() -> str | None:
    """The commit of the code that made an output (None outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_meta(path: Path, stage: str, **record: Any) -> None:
    """Write ``<path>.meta.json``: what made ``path``, so a result can be traced."""
    meta = {
        "stage": stage,
        "file": path.name,
        "created": dt.datetime.now().isoformat(timespec="seconds"),
        "rate_version": __version__,
        "git_commit": git_commit(),
        **record,
    }
    atomic_write_json(meta_path(path), meta)
