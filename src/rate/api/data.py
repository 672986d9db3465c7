"""Data in, numbers out: a scored file as a DataFrame, the estimators on a DataFrame, arrays or
lists, and every effect file as one DataFrame.

The column names are the completions' with spaces as underscores: ``w``, ``original``,
``rewrite``, ``rewritten_rewrite`` (the scores under one reward key) and, where known,
``perfect_rewrite`` (the tiny world's true counterfactual), so that a DataFrame from
:func:`load_scored` goes straight into :func:`estimate` and :func:`compute_effects`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rate.columns import ScoreColumns
from rate.config import EffectsConfig
from rate.effects import stage
from rate.effects.estimators import Scores
from rate.effects.inputs import extract_scores, identified_estimates
from rate.errors import ConfigError, DataFileError
from rate.records import (
    CHECKS,
    COMPLETIONS,
    INDEX,
    METADATA,
    PERFECT,
    PLACEBO,
    PROMPT,
    TEXTS,
    W,
    read_examples,
    refuse_repeated_index,
    reward_keys,
)
from rate.results.table import COLUMNS, Filters, results_rows
from rate.schema import check_argument
from rate.settings import load_settings
from rate.store import Layout

log = logging.getLogger(__name__)

SCORE_COLUMNS = tuple(c.replace(" ", "_") for c in COMPLETIONS)  # original, rewrite, ...
PERFECT_COLUMN = PERFECT.replace(" ", "_")
PLACEBO_COLUMN = PLACEBO.replace(" ", "_")


def _column(name: str) -> str:
    return name.replace(" ", "_")


def load_scored(path: str | Path, reward_key: str | None = None) -> pd.DataFrame:
    """A scored file (or a rewritten dataset, without scores) as a DataFrame, a row per
    example: ``index``, ``w``, ``prompt``, ``text_<completion>``, ``check_<pass>`` (the rewrite
    checks' labels), ``metadata.<field>``, and the scores under ``reward_key`` as
    ``original``, ``rewrite``, ``rewritten_rewrite`` (and ``perfect_rewrite`` and
    ``placebo_rewrite`` where present; NaN where a score is missing). ``reward_key`` may be left out when the file has one."""
    path = Path(path)
    rows = read_examples(path)
    keys = reward_keys(rows)
    if reward_key is None and len(keys) > 1:
        raise DataFileError(f"{path}: reward keys {', '.join(keys)}; say which with reward_key=...")
    if reward_key is not None and reward_key not in keys:
        raise DataFileError(
            f"{path}: no scores under reward_key {reward_key!r}; reward keys present: "
            f"{', '.join(keys) or '(none: score the file first)'}"
        )
    key = reward_key or (keys[0] if keys else None)
    records = []
    for row in rows:
        out: dict[str, Any] = {"index": row[INDEX], "w": row[W], "prompt": row[PROMPT]}
        for name, text in row[TEXTS].items():
            out[f"text_{_column(name)}"] = text
        for name, label in (row.get(CHECKS) or {}).items():
            out[f"check_{_column(name)}"] = label
        meta = row.get(METADATA)
        for field, value in meta.items() if isinstance(meta, dict) else ():
            if not isinstance(value, (dict, list)):
                out[f"metadata.{field}"] = value
        scores = row.get(key) if key else None
        for name in (*COMPLETIONS, PERFECT, PLACEBO):
            v = scores.get(name) if isinstance(scores, dict) else None
            if name in COMPLETIONS or v is not None:
                ok = isinstance(v, (int, float)) and not isinstance(v, bool)
                out[_column(name)] = float(v) if ok else np.nan
        records.append(out)
    frame = pd.DataFrame.from_records(records)
    frame.attrs.update(source=str(path), reward_key=key)
    return frame


def _array(name: str, values: Any, n: int | None) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected numbers (a list, an array or a column)") from None
    if arr.ndim != 1:
        raise ConfigError(f"{name}: expected one number per example, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ConfigError(f"{name}: {arr.size} values, but w has {n}; give one per example")
    return arr


def _w(values: Any) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ConfigError("w: expected one true/false (or 1/0) per example")
    if arr.dtype != bool:
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ConfigError("w: expected true/false or 1/0 values") from None
        if not np.isin(as_float, (0.0, 1.0)).all():
            raise ConfigError("w: expected true/false or 1/0 values, got others")
        arr = as_float == 1.0
    return arr


def _given(data: Any, **given: Any) -> dict[str, Any]:
    """The four inputs, each from its keyword or else ``data``'s column."""
    for name in given:
        if given[name] is None:
            if data is None or name not in data:
                raise ConfigError(
                    f"{name}: missing; pass a DataFrame with the columns "
                    f"{', '.join(given)}, or {name}=[...]"
                )
            given[name] = data[name]
    return given


def _screened(
    data: Any, given: dict[str, Any], drop_incomplete: bool, placebo: Any = None
) -> tuple[Scores, np.ndarray, int]:
    """The scores the stage would take from these inputs (its checks, its messages), with the
    placebo rewrites' (``placebo``, or ``data``'s column) where given; -> (the scores, the
    positions of the examples kept, the number of examples given)."""
    wa = _w(given["w"])
    table = np.column_stack([_array(c, given[c], wa.size) for c in SCORE_COLUMNS])
    if placebo is None and data is not None and PLACEBO_COLUMN in data:
        placebo = data[PLACEBO_COLUMN]
    if placebo is not None:
        placebo = _array(PLACEBO_COLUMN, placebo, wa.size)
    attrs = data.attrs if isinstance(data, pd.DataFrame) else {}
    where = attrs.get("source") or "the scores given"
    if data is not None and INDEX in data:
        index = [str(v) for v in data[INDEX]]
        if len(index) != wa.size:
            raise ConfigError(f"{INDEX}: {len(index)} values, but w has {wa.size}; one per example")
        # A repeated example would be counted twice, as in a scored file.
        refuse_repeated_index(
            index,
            where,
            [f"position {i}" for i in range(len(index))],
            "remove the duplicate (pooling several files? make their indices distinct)",
        )
    else:
        index = [str(i) for i in range(wa.size)]
    cols = ScoreColumns(
        index=index,
        w=wa,
        scores=table,
        # NaN is a DataFrame's missing value (load_scored's too): missing, not non-finite.
        missing=np.isnan(table).any(axis=1),
        perfect=np.full(wa.size, np.nan),
        has_perfect=np.zeros(wa.size, dtype=bool),
        has_key=True,
        reward_keys=[],
        placebo=placebo,
    )
    s, _, keep, _ = extract_scores(
        cols,
        attrs.get("reward_key"),
        where,
        drop_incomplete,
        drop_fix="pass drop_incomplete=True",
        missing_what="lack a score (NaN)",
    )
    return s, keep, wa.size


def scores(
    data: pd.DataFrame | Mapping[str, Any] | None = None,
    *,
    w: Any = None,
    original: Any = None,
    rewrite: Any = None,
    rewritten_rewrite: Any = None,
    placebo_rewrite: Any = None,
    drop_incomplete: bool = False,
) -> Scores:
    """The estimators' input from a DataFrame (or a dict) with the columns ``w``,
    ``original``, ``rewrite``, ``rewritten_rewrite`` (and, if present, ``index``: each example
    once; ``placebo_rewrite``: the placebo rewrites' scores, for the placebo-corrected RATE),
    or from those given as arrays or lists (a keyword given beside ``data`` replaces its
    column). Scores that treatment_effects refuses (missing, non-finite, beyond +-1e100) are
    refused alike, or dropped with ``drop_incomplete``."""
    given = _given(
        data, w=w, original=original, rewrite=rewrite, rewritten_rewrite=rewritten_rewrite
    )
    return _screened(data, given, drop_incomplete, placebo_rewrite)[0]


def estimate(
    data: pd.DataFrame | Mapping[str, Any] | None = None,
    *,
    w: Any = None,
    original: Any = None,
    rewrite: Any = None,
    rewritten_rewrite: Any = None,
    placebo_rewrite: Any = None,
    drop_incomplete: bool = False,
) -> dict[str, float]:
    """Every estimator (naive, single-rewrite and RATE ATT, ATU, ATE, and the
    placebo-corrected RATE given placebo scores) with its SE, the
    counts, the two SDs of the original scores (``reward_std``: pooled within the W groups,
    the reference's; ``reward_std_all``: of all of them) and the rewrite-effect diagnostics;
    input as :func:`scores`.
    Where every example has one W value, the estimates that need both are NaN (a warning
    says which), as treatment_effects leaves them null."""
    given = {"w": w, "original": original, "rewrite": rewrite}
    given |= {"rewritten_rewrite": rewritten_rewrite, "placebo_rewrite": placebo_rewrite}
    s = scores(data, **given, drop_incomplete=drop_incomplete)
    est, notes = identified_estimates(s)
    for note in notes:
        log.warning(note)
    return est


def compute_effects(
    data: pd.DataFrame | Mapping[str, Any] | None = None,
    *,
    w: Any = None,
    original: Any = None,
    rewrite: Any = None,
    rewritten_rewrite: Any = None,
    perfect_rewrite: Any = None,
    placebo_rewrite: Any = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    drop_incomplete: bool = False,
) -> dict:
    """What treatment_effects writes for these scores: every estimate with its SEs, normal
    and (``n_bootstrap`` > 0) bootstrap percentile intervals at ``level``, the effects
    normalised (``normalized``: divided by ``reward_std``, the pooled within-group SD of the
    original scores, as the reference does; ``normalized_all``: by the SD of all original
    scores), the estimators that are exactly 0 because no rewrite changed the score
    (``no_score_change``), and, given the true counterfactual's scores
    (``perfect_rewrite``, or that column of ``data``), the true effects and each estimator's
    error in SEs; given the placebo rewrites' scores (``placebo_rewrite``, or that column),
    the placebo-corrected RATE too. Input as :func:`scores`."""
    # The arguments are the stage's settings: checked by the config schema's declarations.
    n_bootstrap = check_argument(EffectsConfig, "n_bootstrap", n_bootstrap, "n_bootstrap")
    seed = check_argument(EffectsConfig, "bootstrap_seed", seed, "seed")
    level = check_argument(EffectsConfig, "level", level, "level")
    drop_incomplete = check_argument(
        EffectsConfig, "drop_incomplete", drop_incomplete, "drop_incomplete"
    )
    given = _given(
        data, w=w, original=original, rewrite=rewrite, rewritten_rewrite=rewritten_rewrite
    )
    s, keep, n = _screened(data, given, drop_incomplete, placebo_rewrite)
    if perfect_rewrite is None and data is not None and PERFECT_COLUMN in data:
        perfect_rewrite = data[PERFECT_COLUMN]
    perfect = (
        None if perfect_rewrite is None else _array("perfect_rewrite", perfect_rewrite, n)[keep]
    )
    if perfect is not None and not np.isfinite(perfect).all():
        perfect = None  # the truth only where every example has it, as the stage does
    result = stage.compute_effects(s, perfect, n_bootstrap, seed, level)
    for note in result["notes"]:
        log.warning(note)
    return result


def _names(key: str, value: str | Sequence[str]) -> tuple[str, ...]:
    """A filter's names: one name, or a list of them (a string is one name, never its
    letters)."""
    names = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{key}: give a name or a list of names, got {value!r}")
    return names


def load_effects(
    paths: Iterable[str | Path] | str | Path | None = None,
    *,
    project_dir: str | Path | None = None,
    datasets: Sequence[str] = (),
    concepts: Sequence[str] = (),
    scores: Sequence[str] = (),
    estimands: Sequence[str] = (),
    methods: Sequence[str] = (),
    smoke: bool | None = None,
    latest: bool = False,
    groups: bool = True,
) -> pd.DataFrame:
    """Effect files as one DataFrame, a row per file, group and estimator (the table of
    `rate results`: :data:`rate.results.table.COLUMNS`): ``paths`` (a file, or a list), or
    every effect file of ``project_dir``'s effects/ (default: PROJECT_DIR, from the
    environment or a .env as `rate` reads it), filtered as
    `rate results` filters (names may be shell patterns)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if project_dir is None:
        load_settings()  # PROJECT_DIR as `rate` sees it: the environment, else a .env
    elif paths is None and not Path(project_dir).is_dir():
        raise DataFileError(f"project_dir {project_dir}: no such folder; give a PROJECT_DIR")
    folder = (Layout(Path(project_dir)) if project_dir else Layout.from_env()).effects
    names = {"datasets": datasets, "concepts": concepts, "scores": scores}
    names |= {"estimands": estimands, "methods": methods}
    filters = Filters(
        **{key: _names(key, value) for key, value in names.items()},
        smoke=smoke,
        latest=latest,
        groups=groups,
    )
    rows = results_rows(None if paths is None else list(paths), folder, filters)
    return pd.DataFrame(rows, columns=list(COLUMNS))
