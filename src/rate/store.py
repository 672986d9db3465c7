"""The data layout under PROJECT_DIR: timestamped output names, `latest`, metadata records.

Every stage writes ``<name>_<YYYYMMDD_HHMMSS>[-N][_smoke_test].<ext>`` into its folder, with a
``<file>.meta.json`` beside it (config, template, counts, git commit, time) so that a result can
be traced to what made it. The names are the reference pipeline's: a rewritten dataset is
``<dataset>_dataset_<stamp>[_smoke_test].json``, a scored one
``<dataset>_<model>[_smoke_test]_scored_<stamp>.jsonl`` (the smoke marker before ``_scored``, as
the reference writes it; ``<model>`` is the scoring template's name, and a model added to a
scored file adds its name: ``<dataset>_<model1>_<model2>_scored``), an effect file
``<dataset>_<concept>_<score>_treatment_effects_<stamp>[_smoke_test].json``; the readers take
these and our earlier names (``<dataset>_<stamp>.json``, ``<dataset>_scored_<stamp>.jsonl``)
alike. ``latest`` picks the newest output of the previous stage by the timestamp in its name,
never by the file's mtime (copying a folder changes mtimes), and matches the whole name: the
dataset exactly, and between it and ``_scored`` only names of scoring templates, so
``ds`` never takes ``ds_v2``'s files.

Runs of a sweep start in the same second on shared storage, so a name is never taken by
checking that it is free: :func:`publish` writes the data and its record to temporary files,
then claims the record's name by a hard link (which fails if the name exists) and links the
data beside it. The record is in place before the data, so a data file always has its record,
and a kill or a full disk between the two leaves a record without data, which ``latest``
does not see.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rate import __version__
from rate.errors import ConfigError
from rate.fs import apply_group_permissions_tree, ensure_dir, fsync_dir, write_error
from rate.io import atomic_write_bytes, json_text, link_new, write_temp
from rate.settings import current_log_file, project_dir, redact_record

STAMP_FORMAT = "%Y%m%d_%H%M%S"
SMOKE_SUFFIX = "_smoke_test"
SCORED_SUFFIX = "_scored"  # the reference writes <dataset>_<model>[_smoke_test]_scored_<stamp>
DATASET_SUFFIX = "_dataset"  # and <dataset>_dataset_<stamp>[_smoke_test].json
# What a config's names may be: they become parts of output paths, so no '/', no '..'.
_NAME_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=-]*$")
_STAMPED = re.compile(r"^(?P<stem>.+)_(?P<stamp>\d{8}_\d{6})(?P<seq>-\d+)?(?P<smoke>_smoke_test)?$")


def is_name_part(name: str) -> bool:
    """Whether ``name`` may be one part of a file name: letters, digits and ``_ . + = -``,
    not starting with a dot (so never ``..``, never a path)."""
    return bool(_NAME_PART.match(name))


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
    def score_cache(self) -> Path:
        """The scores each scorer computed, by text (rate.score.cache): hidden, like scoring's
        other work files, as no stage's output."""
        return self.scored / ".score_cache"

    @property
    def effects(self) -> Path:
        return self.root / "effects"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def results(self) -> Path:
        """The results records of pipeline runs (rate.results.record)."""
        return self.root / "results"

    def folder(self, name: str) -> Path:
        """The data folder a config's ``dataset_folder`` names (``rewrites`` or ``scored``)."""
        folders = {"rewrites": self.rewrites, "scored": self.scored}
        if name not in folders:
            raise ConfigError(f"unknown dataset_folder {name!r}; use 'rewrites' or 'scored'")
        return folders[name]


def timestamp(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now()).strftime(STAMP_FORMAT)


def _names(folder: Path, stem: str, ext: str, smoke: bool, stamp: str | None) -> Iterator[Path]:
    """``<stem>_<stamp>[-N][_smoke_test]<ext>`` for N = 1, 2, ...: the candidates of one run (a
    scored stem ``<x>_scored`` of a smoke test: ``<x>_smoke_test_scored_<stamp>[-N]<ext>``)."""
    stamp = stamp or timestamp()
    suffix = SMOKE_SUFFIX if smoke else ""
    if smoke and stem.endswith(SCORED_SUFFIX):  # the reference's scored smoke-test name
        stem, suffix = stem.removesuffix(SCORED_SUFFIX) + SMOKE_SUFFIX + SCORED_SUFFIX, ""
    yield folder / f"{stem}_{stamp}{suffix}{ext}"
    seq = 1
    while True:
        seq += 1
        yield folder / f"{stem}_{stamp}-{seq}{suffix}{ext}"


def output_path(folder: Path, stem: str, ext: str, smoke: bool, stamp: str | None = None) -> Path:
    """The first timestamped name in ``folder`` that no file (or record) has now. Only a hint:
    another run may take it next; :func:`publish` claims a name for good."""
    for path in _names(folder, stem, ext, smoke, stamp):
        if not path.exists() and not meta_path(path).exists():
            return path
    raise AssertionError("unreachable")


def new_log_path(folder: Path, stage: str, smoke: bool) -> Path:
    """A new ``<stage>_<stamp>[-N][_smoke_test].log`` in ``folder``, created empty and
    exclusively: runs of one second never share (and interleave) a log."""
    ensure_dir(folder)
    for path in _names(folder, stage, ".log", smoke, None):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            return path
        except FileExistsError:
            continue
        except OSError as err:
            raise write_error(path, err) from None
    raise AssertionError("unreachable")


def _meta_bytes(path: Path, stage: str, record: dict[str, Any]) -> bytes:
    meta = {
        "stage": stage,
        "file": path.name,
        "created": dt.datetime.now().isoformat(timespec="seconds"),
        "rate_version": __version__,
        "git_commit": git_commit(),
        "log": current_log_file(),  # the run's log, so a results record can name it
        **redact_record(record),  # no secret, and no user:password in a URL, is ever recorded
    }
    return (json_text(meta, indent=2) + "\n").encode("utf-8")


def publish(
    folder: Path,
    stem: str,
    ext: str,
    smoke: bool,
    write: Callable[[IO[bytes]], None],
    stage: str,
    record: dict[str, Any] | None,
    stamp: str | None = None,
) -> Path:
    """Write a new timestamped data file through ``write(file)`` and its ``.meta.json`` (what
    ``stage`` made it from: ``record``; None: no record), under a name that no other run
    takes, even one that starts in the same second; -> the data file's path.

    The data is written in full to a temporary file first; then, name by name, the record is
    linked to ``<name>.meta.json`` (claiming the name, or failing because another run has it)
    and the data to ``<name>``. A failure at any point (a full disk, a kill) leaves no data
    file, so no later stage takes a half result."""
    folder = ensure_dir(folder)
    data_tmp = write_temp(folder, f"{stem}{ext}", write)
    try:
        for path in _names(folder, stem, ext, smoke, stamp):
            if path.exists():
                continue
            if record is None:
                if link_new(data_tmp, path):
                    break
                continue
            meta = meta_path(path)
            body = _meta_bytes(path, stage, record)
            meta_tmp = write_temp(folder, meta.name, lambda f, body=body: f.write(body))
            try:
                if not link_new(meta_tmp, meta):
                    continue  # another run of this second has the name
            finally:
                meta_tmp.unlink(missing_ok=True)
            if link_new(data_tmp, path):
                break
            meta.unlink(missing_ok=True)  # a data file without a record took the name
    finally:
        data_tmp.unlink(missing_ok=True)
    fsync_dir(folder)
    return path


def publish_dir(tmp: Path, folder: Path, stem: str, smoke: bool) -> Path:
    """Rename the filled folder ``tmp`` to a new ``<stem>_<stamp>[-N][_smoke_test]`` in
    ``folder``, a name no other folder has (a rename never replaces a folder with files in
    it); -> the final path."""
    apply_group_permissions_tree(tmp)
    for path in _names(folder, stem, "", smoke, None):
        if path.exists():
            continue
        try:
            os.rename(tmp, path)
        except OSError as err:
            if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue  # taken by a run of the same second
            raise write_error(path, err) from None
        fsync_dir(folder)
        return path
    raise AssertionError("unreachable")


@contextlib.contextmanager
def temp_dir(folder: Path, name: str) -> Iterator[Path]:
    """A hidden temporary folder in ``folder`` to build an output in; removed on failure
    (a kill leaves only a hidden ``.<name>.*.tmp``, which nothing takes for a result)."""
    ensure_dir(folder)
    tmp = folder / f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    ensure_dir(tmp, new=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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
    stem, smoke = m["stem"], bool(m["smoke"])
    if stem.endswith(SMOKE_SUFFIX + SCORED_SUFFIX):  # the reference's scored smoke-test name
        stem, smoke = stem.removesuffix(SMOKE_SUFFIX + SCORED_SUFFIX) + SCORED_SUFFIX, True
    return stem, m["stamp"], seq, smoke


def find_latest(
    folder: Path, stem: str | StemSet, ext: str, smoke: bool, key: str = "dataset_filename"
) -> Path:
    """The newest ``<stem>_<stamp>[-N][_smoke_test]<ext>`` in ``folder`` of the run kind asked
    for; the whole stem must match (``ds`` is not ``ds_v2``): ``stem`` is the stem itself or
    a test of whole stems (:class:`StemSet`). Hidden files (a write in progress) are never
    taken; a stage's own output always has its record beside it (:func:`publish` writes the
    record first)."""
    matches = (lambda s: s == stem) if isinstance(stem, str) else stem
    wanted = f"'{stem}_<timestamp>{ext}'" if isinstance(stem, str) else stem.describe(ext)
    candidates = []
    if folder.is_dir():
        for p in folder.iterdir():
            if not p.name.endswith(ext) or p.name.endswith(".meta.json") or p.name.startswith("."):
                continue
            parsed = parse_name(p)
            if parsed and parsed[3] == smoke and matches(parsed[0]) and p.is_file():
                candidates.append((parsed[1], parsed[2], p))
    if not candidates:
        kind = "smoke-test" if smoke else "full (non-smoke)"
        raise ConfigError(
            f"{key} 'latest': no {kind} file {wanted} in "
            f"{folder}; run the previous stage first, or name the file explicitly"
        )
    return max(candidates)[2]


def resolve_input(
    folder: Path,
    filename: str,
    stem: str | StemSet,
    ext: str,
    smoke: bool,
    key: str = "dataset_filename",
) -> Path:
    """``latest`` or a file name (relative to ``folder``, or absolute) -> an existing file;
    errors name the config key ``key`` that gave the name."""
    if filename == "latest":
        return find_latest(folder, stem, ext, smoke, key)
    path = Path(filename).expanduser()
    path = path if path.is_absolute() else folder / path
    if path.is_dir():
        raise ConfigError(
            f"{key} {filename!r}: {path} is a folder, not a file; name a file in it "
            f"(a {ext} file), or use 'latest'"
        )
    if not path.is_file():
        raise ConfigError(
            f"{key} {filename!r}: no such file {path}; check the name, or use 'latest'"
        )
    return path


def effects_stem(dataset_name: str, concept: str, score: str) -> str:
    """The name of an effect file before its stamp."""
    return f"{dataset_name}_{concept}_{score}_treatment_effects"


def dataset_stem(dataset_name: str) -> str:
    """The stem of a rewritten dataset before its stamp, as the reference names it."""
    return f"{dataset_name}{DATASET_SUFFIX}"


def scored_name(dataset_name: str, model: str | None = None) -> str:
    """The stem of a scored file (before the stamp): ``<dataset>_<model>_scored`` as the
    reference names it; without a model, our earlier ``<dataset>_scored``."""
    return f"{dataset_name}_{model}{SCORED_SUFFIX}" if model else f"{dataset_name}{SCORED_SUFFIX}"


def _segmentations(rest: str, names: frozenset[str]) -> Iterator[tuple[str, ...]]:
    """Every way of reading ``rest`` as ``name_name_..._name`` of ``names``."""
    if rest in names:
        yield (rest,)
    for i, ch in enumerate(rest):
        if ch == "_" and rest[:i] in names:
            for tail in _segmentations(rest[i + 1 :], names):
                yield (rest[:i], *tail)


@dataclass(frozen=True)
class StemSet:
    """The whole stems ``latest`` takes for one dataset, and what an error names.

    ``exact``: stems taken as they are. ``scored_models``: also ``<dataset>_<m1>_..._<mk>_scored``
    where every ``mi`` is one of these (scoring template names); ``need``: and one of them is
    one of these (the model whose scores are wanted). Nothing else: ``ds`` never matches
    ``ds_v2_armorm_scored`` unless ``v2`` is itself a scoring template."""

    dataset: str
    exact: frozenset[str]
    scored_models: frozenset[str] = frozenset()
    need: frozenset[str] = frozenset()
    labels: tuple[str, ...] = ()

    def __call__(self, stem: str) -> bool:
        if stem in self.exact:
            return True
        head, tail = f"{self.dataset}_", SCORED_SUFFIX
        if not self.scored_models or not stem.startswith(head) or not stem.endswith(tail):
            return False
        rest = stem[len(head) : len(stem) - len(tail)]
        for parts in _segmentations(rest, self.scored_models):
            if not self.need or self.need.intersection(parts):
                return True
        return False

    def describe(self, ext: str) -> str:
        return " or ".join(f"'{s}_<timestamp>{ext}'" for s in self.labels or sorted(self.exact))


def rewrites_stems(dataset_name: str) -> StemSet:
    """The rewritten datasets of ``dataset_name``: the reference's name and our earlier one."""
    return StemSet(
        dataset_name,
        frozenset({dataset_stem(dataset_name), dataset_name}),
        labels=(dataset_stem(dataset_name), dataset_name),
    )


def scored_stems(dataset_name: str, models: set[str], need: set[str] | None = None) -> StemSet:
    """The scored files of ``dataset_name``: ``<dataset>_scored`` (ours before) and
    ``<dataset>_<models...>_scored`` naming one of ``need`` (any of ``models`` if None)."""
    need_set = frozenset(need or ())
    models_set = frozenset(models) | need_set
    if len(need_set) == 1:
        model = next(iter(need_set))
    else:
        model = "<" + "|".join(sorted(need_set)) + ">" if need_set else "<model>"
    return StemSet(
        dataset_name,
        frozenset({scored_name(dataset_name)}),
        models_set,
        need_set,
        labels=(scored_name(dataset_name, model), scored_name(dataset_name)),
    )


def scored_stem(source: Path, prefix: str) -> str:
    """The stem of a scored file made from ``source`` before the new model's name: adding a
    model to a scored file keeps its name (``<dataset>_<model>_scored_<stamp>`` ->
    ``<dataset>_<model>``, the next model's name then added to it)."""
    parsed = parse_name(source)
    stem = parsed[0] if parsed else source.stem
    return stem.removesuffix(SCORED_SUFFIX) or prefix


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
    body = _meta_bytes(path, stage, record)
    atomic_write_bytes(meta_path(path), body)
