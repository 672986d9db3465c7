"""Every effect file as one long table: a row per file, group and estimator.

A row holds the estimate, its SEs (paired, and the reference's unpaired one for RATE), the
normal and bootstrap intervals, the estimate and SE normalised as the reference does
(``normalized``: divided by ``reward_std``, the pooled within-group SD of the original scores)
and, beside it, the estimate divided by the SD of all original scores (``normalized_all``,
``reward_std_all``; empty for files made before it was recorded), the true effect and the error
in SEs where the file knows them (the tiny world), whether that error exceeds 2 SE
(``error_beyond_2se``), the counts, the share of each create_dataset
pass's rewrites that passed their checks (of all that pass's rewrites), and a ``note`` where
the estimate is exactly 0 because no rewrite changed the score. An estimator the file does
not hold (the placebo-corrected RATE of a file without placebo rewrites) has no rows. A file's
groups
(``effects.group_by``, or the sources of ``effects.pool_with``) give rows of their own, with
``group`` set; the whole file's rows have ``group`` empty. The table is plain rows of plain
values: the CSV, Markdown and JSON writers here, and :func:`rate.api.load_effects` (a pandas
DataFrame), all take it as it is.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rate.effects.estimators import ESTIMANDS, ESTIMATORS, METHODS, Estimator, beyond_se
from rate.errors import ConfigError, DataFileError
from rate.io import csv_text, json_text, read_json
from rate.results import FORMATS
from rate.results.values import (
    NO_SCORE_CHANGE,
    PASSES,
    interval,
    num,
    score_unchanged,
    shape_problem,
    success_rate,
    value,
)
from rate.store import parse_name

EFFECTS_SUFFIX = "_treatment_effects"
# The columns, in order. Rewrite-success columns are named after create_dataset's passes.
SUCCESS_COLUMNS = tuple(f"{p.replace(' ', '_')}_success" for p in PASSES)
COLUMNS = (
    "file",
    "dataset",
    "concept",
    "score",
    "reward_key",
    "smoke_test",
    "stamp",
    "group_by",
    "group",
    "estimator",
    "estimand",
    "method",
    "estimate",
    "stderr",
    "stderr_unpaired",
    "level",
    "normal_low",
    "normal_high",
    "bootstrap_low",
    "bootstrap_high",
    "normalized",
    "normalized_stderr",
    "normalized_all",
    "truth",
    "error_in_se",
    "error_beyond_2se",
    "n_w1",
    "n_w0",
    "reward_std",
    "reward_std_all",
    *SUCCESS_COLUMNS,
    "note",
)


@dataclass(frozen=True)
class Filters:
    """Which effect files and rows to keep; an empty tuple keeps every value. Names may be
    shell patterns (``imdb_*``)."""

    datasets: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    scores: tuple[str, ...] = ()
    estimands: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    smoke: bool | None = None  # True: smoke tests only; False: full runs only; None: both
    latest: bool = False  # only the newest file of each dataset, concept, score and kind
    groups: bool = True  # also the rows of each file's groups

    def __post_init__(self) -> None:
        for name, given, allowed in (
            ("estimand", self.estimands, ESTIMANDS),
            ("method", self.methods, METHODS),
        ):
            bad = [g for g in given if g not in allowed]
            if bad:
                raise ConfigError(f"unknown {name} {bad[0]!r}; use one of {', '.join(allowed)}")


def _matches(value: Any, patterns: Sequence[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(str(value), p) for p in patterns)


def effect_files(folder: Path) -> list[Path]:
    """The effect files treatment_effects wrote into ``folder`` (not its sub-folders), oldest
    name first."""
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.iterdir()):
        parsed = parse_name(p)
        if (
            p.is_file()
            and p.suffix == ".json"
            and not p.name.startswith(".")
            and not p.name.endswith(".meta.json")
            and parsed is not None
            and parsed[0].endswith(EFFECTS_SUFFIX)
        ):
            out.append(p)
    return out


def read_effects(path: Path) -> dict:
    """An effect file, checked to be one (a JSON object with the naive and RATE estimates)."""
    data = read_json(path)
    if not isinstance(data, dict) or not any(e.name in data for e in ESTIMATORS):
        raise DataFileError(
            f"{path}: not an effect file (a JSON object with {ESTIMATORS[0].name}, ... from "
            "treatment_effects); name effect files, or leave the files out for every one in "
            "PROJECT_DIR/effects"
        )
    problem = shape_problem(data)
    if problem:
        raise DataFileError(
            f"{path}: {problem}; the effect file is damaged: run treatment_effects again for "
            "it, or leave it out"
        )
    return data


def _kind(path: Path, effects: dict) -> tuple[str | None, bool]:
    """(stamp, smoke) of a file: from its name, else from its own ``smoke_test``."""
    parsed = parse_name(path)
    if parsed:
        return parsed[1] + ("" if parsed[2] == 1 else f"-{parsed[2]}"), parsed[3]
    return None, bool(effects.get("smoke_test"))


def select_files(effects: list[tuple[Path, dict]], filters: Filters) -> list[tuple[Path, dict]]:
    """The (path, effects) that pass the file filters, in the order given."""
    kept = []
    for path, e in effects:
        _, smoke = _kind(path, e)
        if (
            _matches(e.get("dataset_name"), filters.datasets)
            and _matches(e.get("concept"), filters.concepts)
            and _matches(e.get("score"), filters.scores)
            and (filters.smoke is None or smoke == filters.smoke)
        ):
            kept.append((path, e))
    if filters.latest:
        newest: dict[tuple, tuple[tuple[str, int], Path, dict]] = {}
        for path, e in kept:
            parsed, smoke = parse_name(path), _kind(path, e)[1]
            when = (parsed[1], parsed[2]) if parsed else ("", 0)  # (stamp, sequence)
            key = (e.get("dataset_name"), e.get("concept"), e.get("score"), smoke)
            if key not in newest or when >= newest[key][0]:
                newest[key] = (when, path, e)
        chosen = {id(v[2]) for v in newest.values()}
        kept = [(p, e) for p, e in kept if id(e) in chosen]
    return kept


def _row(
    base: dict, part: dict, e: Estimator, rates: dict[str, float | None], group: str | None
) -> dict:
    normal = interval(part, e.name, "normal", False)
    boot = interval(part, e.name, "bootstrap", False)
    truth = num((part.get("truth") or {}).get(e.estimand))
    error = num((part.get("error_in_se") or {}).get(e.name))
    return {
        **base,
        "group": group,
        "estimator": e.name,
        "estimand": e.estimand,
        "method": e.method,
        "estimate": num(part.get(e.name)),
        "stderr": num(part.get(f"{e.name}_stderr")),
        "stderr_unpaired": num(part.get(f"{e.name}_stderr_unpaired")),
        "level": num((part.get("intervals") or {}).get("level")) or base["level"],
        "normal_low": normal[0] if normal else None,
        "normal_high": normal[1] if normal else None,
        "bootstrap_low": boot[0] if boot else None,
        "bootstrap_high": boot[1] if boot else None,
        "normalized": value(part, e.name, True),
        "normalized_stderr": value(part, f"{e.name}_stderr", True),
        "normalized_all": value(part, e.name, "all"),
        "truth": truth,
        "error_in_se": error,
        "error_beyond_2se": beyond_se(error),
        "n_w1": part.get("Y1_count"),
        "n_w0": part.get("Y0_count"),
        "reward_std": num(part.get("reward_std")),
        "reward_std_all": num(part.get("reward_std_all")),
        **rates,
        "note": NO_SCORE_CHANGE if score_unchanged(part, e.name) else None,
    }


def _holds(effects: dict, e: Estimator) -> bool:
    """Whether an effect file (or group) has a row for ``e``: every estimator of the reference
    always (null where not identified, as the file has it), the placebo-corrected RATE only
    where the file holds it."""
    return not e.optional or e.name in effects


def file_rows(path: Path, effects: dict, filters: Filters = Filters()) -> list[dict]:
    """The rows of one effect file (and of its groups, unless ``filters.groups`` is false)."""
    stamp, smoke = _kind(path, effects)
    base = {
        "file": str(path),
        "dataset": effects.get("dataset_name"),
        "concept": effects.get("concept"),
        "score": effects.get("score"),
        "reward_key": effects.get("reward_key"),
        "smoke_test": smoke,
        "stamp": stamp,
        "group_by": (effects.get("input") or {}).get("groups_by"),
        "level": num((effects.get("intervals") or {}).get("level")),
    }
    estimators = [
        e
        for e in ESTIMATORS
        if _matches(e.estimand, filters.estimands) and _matches(e.method, filters.methods)
    ]
    # The checks are counted over the whole file, not per group.
    rates = dict(zip(SUCCESS_COLUMNS, (success_rate(effects, p) for p in PASSES), strict=True))
    rows = [_row(base, effects, e, rates, None) for e in estimators if _holds(effects, e)]
    groups = effects.get("groups") if filters.groups else None
    for name, part in (groups or {}).items():
        if isinstance(part, dict):
            none = dict.fromkeys(SUCCESS_COLUMNS)
            rows += [_row(base, part, e, none, str(name)) for e in estimators if _holds(part, e)]
    return rows


def results_rows(
    paths: Iterable[Path | str] | None = None,
    folder: Path | None = None,
    filters: Filters = Filters(),
) -> list[dict]:
    """The table of the effect files ``paths`` (default: every effect file in ``folder``)
    that pass ``filters``: a dict per row with the keys of :data:`COLUMNS`."""
    if paths is None:
        if folder is None:
            raise ConfigError("results: name effect files or the folder that holds them")
        paths = effect_files(folder)
    loaded = [(Path(p), read_effects(Path(p))) for p in paths]
    rows = []
    for path, e in select_files(loaded, filters):
        rows += file_rows(path, e, filters)
    return rows


def _text(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def to_markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table, numbers to 4 significant digits, the file by its name."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [Path(r["file"]).name if c == "file" else _text(r[c]) for c in COLUMNS]
        lines.append("| " + " | ".join(c.replace("|", r"\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def to_csv(rows: list[dict]) -> str:
    """The rows as CSV at full precision; a missing value is an empty cell."""
    return csv_text(rows, COLUMNS)


def to_json(rows: list[dict]) -> str:
    """The rows as a JSON object ``{"columns": [...], "rows": [{column: value}]}``, a missing
    value as null."""
    return json_text({"columns": list(COLUMNS), "rows": rows}, indent=2) + "\n"


WRITERS = {"markdown": to_markdown, "csv": to_csv, "json": to_json}
SUFFIX_FORMATS = {".md": "markdown", ".csv": "csv", ".json": "json"}


def render(rows: list[dict], fmt: str) -> str:
    """The rows in ``fmt`` (markdown, csv or json)."""
    if fmt not in WRITERS:
        raise ConfigError(f"results format {fmt!r}: use one of {', '.join(FORMATS)}")
    return WRITERS[fmt](rows)
