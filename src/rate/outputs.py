"""What a command may write: never over one of its inputs, never over a stage's published file.

Every command's ``--out`` is checked here before the command starts (:func:`check_out`, called
by ``rate.cli.main``), so the rule holds for the pipeline's commands and the plugins' alike:

* **Not an input.** Every path the command was given (each ``Path`` among its arguments, a
  folder or a file) is an input; ``--out`` may be none of them. A command writing
  ``OUT.json`` with ``OUT.md``/``.csv``/``.png`` beside is checked for each of those names.
* **Not a stage's file.** A file with a ``<file>.meta.json`` record beside it was published by
  a pipeline stage (a dataset, a scored file, an effect file, a results record); no command
  writes one through ``--out``, so a ``--out`` naming one (or its record) would destroy data
  that later stages and ``rate results`` read.
* **One command at a time.** While a command runs, it holds ``--out``'s lock (an ``flock`` on
  ``.OUT.out.lock`` beside it, dropped by the kernel however the command ends); a second
  command given the same ``--out`` stops at once naming the first's pid, so two runs never
  write one output (:func:`claim_out`).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

from rate.errors import BusyError, ConfigError
from rate.filesets import WRITER_KEY
from rate.io import read_json
from rate.provenance import folder_lock
from rate.store import meta_path

# The files a command writes beside OUT (an audit's OUT.json with .csv, .md and .png; a
# certificate's OUT.json and OUT.md).
BESIDE = (".json", ".md", ".csv", ".png", ".jsonl", ".py")
META = ".meta.json"


def _inputs(args: argparse.Namespace) -> Iterator[tuple[str, Path]]:
    """(--flag, path) for every path among the parsed arguments but --out."""
    for dest, value in vars(args).items():
        if dest == "out":
            continue
        flag = "--" + dest.replace("_", "-")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, Path):
                yield flag, v


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def _names(out: Path) -> list[Path]:
    """``out`` and the files a command may write beside it."""
    if out.name.endswith(META):
        return [out]
    return [out, *(out.with_suffix(s) for s in BESIDE if out.suffix != s)]


def _published_by(path: Path) -> str | None:
    """The stage that published ``path`` (its record's ``stage``), or None where no record
    is beside it; ``path`` may be the record itself."""
    record = path if path.name.endswith(META) else meta_path(path)
    if not record.is_file() or (record != path and not path.exists()):
        return None
    try:
        stage = read_json(record).get("stage")
    except (AttributeError, OSError, ValueError, RuntimeError):
        stage = None
    return str(stage or "a pipeline stage")


def _set_writer(path: Path) -> str | None:
    """The command that wrote the file set whose primary is ``path`` (None: not one, or written
    from Python)."""
    if path.suffix != ".json" or not path.is_file():
        return None
    try:
        record = read_json(path)
    except (OSError, ValueError, RuntimeError):
        return None
    return record.get(WRITER_KEY) if isinstance(record, dict) else None


def check_out(args: argparse.Namespace) -> None:
    """Refuse ``args.out`` where it would replace one of the command's inputs, a stage's
    published file or another command's output (one line naming it and the fix); nothing is
    written."""
    out = getattr(args, "out", None)
    if not isinstance(out, Path):
        return
    this = getattr(args, "command_name", None)
    for flag, given in _inputs(args):
        if _same(out, given) or (given.is_file() and any(_same(n, given) for n in _names(out))):
            raise ConfigError(
                f"--out {out}: would write over {given}, which this command reads ({flag}); "
                "choose another --out"
            )
    for name in _names(out):
        writer = _set_writer(name)
        if writer is not None and writer != this:
            raise ConfigError(
                f"--out {out}: would write over {name}, which another command wrote "
                f"({writer}); choose another --out"
            )
        stage = _published_by(name)
        if stage is not None:
            raise ConfigError(
                f"--out {out}: would write over {name}, a file that the {stage} stage "
                "published (its record is beside it); choose another --out"
            )


@contextlib.contextmanager
def claim_out(args: argparse.Namespace) -> Iterator[None]:
    """Hold ``args.out``'s lock while the command runs (a command without ``--out``, or with
    none given, claims nothing): a second command writing the same output stops at once."""
    out = getattr(args, "out", None)
    if not isinstance(out, Path):
        yield
        return
    busy = lambda pid: BusyError(  # noqa: E731
        f"--out {out}: another rate command (pid {pid}) is writing there; wait for it to "
        "finish, or choose another --out"
    )
    with folder_lock(out.absolute().parent, busy, name=f".{out.name}.out.lock"):
        yield
