"""The results record of a pipeline run: one ``results_<stamp>[_smoke_test].json`` that names
every file the four stages wrote (lm-evaluation-harness's ``results_<stamp>.json``).

The plots stage ends a run and writes it. The stages before it are found by following the
records beside the files (``<file>.meta.json``): each names what its stage read (``input``), the
config it ran with and its log, so the chain leads from the effect files drawn back through the
scored files (a reward model added to a scored file reads the one before) to the rewritten
dataset and its template. Every step lists its inputs, its outputs and its log; the record adds
the config of the plots run and the versions of rate and the libraries. Records are redacted
like every metadata record: no secret is ever written.
"""

from __future__ import annotations

import datetime as dt
import logging
import platform
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from rate import __version__
from rate.io import json_writer, read_json
from rate.settings import current_log_file, redact_record
from rate.store import git_commit, meta_path, publish

log = logging.getLogger(__name__)

STAGE_ORDER = ("create_dataset", "score_dataset", "merge_scores", "treatment_effects", "plots")
PACKAGES = ("numpy", "pyarrow", "pandas", "torch", "transformers", "datasets", "matplotlib")


def versions() -> dict[str, str | None]:
    """rate's version and commit, Python's, and the installed libraries' (None: absent); read
    from the package metadata, so nothing is imported."""
    out: dict[str, str | None] = {
        "rate": __version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
    }
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _inputs(meta: dict) -> list[str]:
    """What a stage read, as its record says: ``input`` (a file or a list), else (stage 1)
    the dataset template and the local files of its source."""
    given = meta.get("input")
    if isinstance(given, str):
        return [given]
    if isinstance(given, list):
        return [str(x) for x in given]
    template = meta.get("template") if isinstance(meta.get("template"), dict) else {}
    found = [str(template["path"])] if template.get("path") else []
    source = template.get("source") if isinstance(template.get("source"), dict) else {}
    files = source.get("data_files")
    for f in [files] if isinstance(files, str) else files if isinstance(files, list) else []:
        found.append(str(f))
    return found


def trace(paths: Sequence[Path]) -> list[dict]:
    """The steps that made ``paths`` and everything they read, back to the first stage: one
    dict per output with its stage, inputs, outputs (the file and its record), log and
    config; an input without a record (a file from elsewhere) is named, not followed."""
    steps: list[dict] = []
    seen: set[str] = set()
    todo = [Path(p) for p in paths]
    while todo:
        path = todo.pop(0)
        if str(path) in seen:
            continue
        seen.add(str(path))
        record = meta_path(path)
        if not record.is_file():
            continue
        meta = read_json(record)
        if not isinstance(meta, dict):
            continue
        inputs = _inputs(meta)
        steps.append(
            {
                "stage": meta.get("stage"),
                "created": meta.get("created"),
                "inputs": inputs,
                "outputs": [str(path), str(record)],
                "log": meta.get("log"),
                "config": meta.get("config"),
                "git_commit": meta.get("git_commit"),
            }
        )
        todo += [Path(p) for p in inputs if p.endswith((".json", ".jsonl"))]
    rank = {s: i for i, s in enumerate(STAGE_ORDER)}
    steps.sort(key=lambda s: (rank.get(s["stage"], len(rank)), s["created"] or ""))
    return steps


def run_record(
    effects_paths: Sequence[Path],
    config: dict | None,
    project: Path,
    plots: tuple[Sequence[Path], Sequence[Path]] | None = None,
) -> dict:
    """The record of a run that ended with ``effects_paths``, and (``plots``: its inputs and
    outputs) by drawing them; ``config``: the config of the run's last stage."""
    steps = trace(effects_paths)
    if plots is not None:
        steps.append(
            {
                "stage": "plots",
                "created": dt.datetime.now().isoformat(timespec="seconds"),
                "inputs": [str(p) for p in plots[0]],
                "outputs": [str(p) for p in plots[1]],
                "log": current_log_file(),
                "config": config,
                "git_commit": git_commit(),
            }
        )
    files: set[str] = set()
    for step in steps:
        files.update(step["outputs"])
        files.update([step["log"]] if step["log"] else [])
    stages: dict[str, list[dict]] = {}
    for step in steps:
        stages.setdefault(str(step.pop("stage")), []).append(step)
    if config is None:  # the last stage's own config: the (first) effect file's
        config = next(iter(stages.get("treatment_effects") or [{}])).get("config")
    record: dict[str, Any] = {
        "record": "results of a pipeline run",
        "created": dt.datetime.now().isoformat(timespec="seconds"),
        "project_dir": str(project),
        "smoke_test": bool((config or {}).get("smoke_test")),
        "effects_files": [str(p) for p in effects_paths],
        "versions": versions(),
        "config": config,
        "stages": stages,
        "files": sorted(files),
    }
    return redact_record(record)


def write_run_record(folder: Path, record: dict) -> Path:
    """Write ``record`` to a new ``results_<stamp>[-N][_smoke_test].json`` in ``folder``, a
    name no other run takes (claimed by a hard link, as every output is); -> its path."""
    out = publish(folder, "results", ".json", record["smoke_test"], json_writer(record), "", None)
    log.info("results record of the run: %s", out)
    return out
