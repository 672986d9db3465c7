"""Reading values out of an effect file for figures and tables: an estimate, its interval,
the truth, in raw or normalised units. Missing values are JSON null in the files (an estimand
the data cannot identify); every reader here returns None for them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rate.effects.estimators import BY_NAME, ESTIMANDS, estimator
from rate.records import REWRITE, REWRITTEN
from rate.stats import z_quantile

# create_dataset's two passes, as an effect file's ``rewrite_checks`` names them.
PASSES = (REWRITE, REWRITTEN)


# The sections of an effect file that hold JSON objects; a hand-edited or damaged file may not.
SECTIONS = (
    "intervals",
    "truth",
    "rewrite_checks",
    "error_in_se",
    "input",
    "normalized",
    "normalized_all",
    "groups",
)

# What normalised values are divided by. ``normalized=True``: the reference's reward_std, the
# pooled within-group SD of the original scores (a Cohen's d scale: it leaves out the spread
# that W itself makes, so it can be far smaller than the spread of all scores);
# ``normalized="all"``: the SD of all original scores, reported beside it.
SD_KEYS = {True: "reward_std", "all": "reward_std_all"}
WITHIN_SD = "÷ reward_std, the pooled within-group SD of the original scores"
ALL_SD = "÷ SD of all original scores"
NO_SCORE_CHANGE = "no rewrite changed the score"


def shape_problem(effects: dict, at: str = "") -> str | None:
    """What is wrong with the shape of an effect file's sections (None: nothing), for a
    one-line refusal before any reader trips over it."""
    for key in SECTIONS:
        value = effects.get(key)
        if value is not None and not isinstance(value, dict):
            return f"key '{at}{key}' is {type(value).__name__}, not an object"
    for kind in ("normal", "bootstrap"):  # the kinds of interval readers look up by estimator
        value = (effects.get("intervals") or {}).get(kind)
        if value is not None and not isinstance(value, dict):
            return f"key '{at}intervals.{kind}' is {type(value).__name__}, not an object"
    for name, part in (effects.get("groups") or {}).items():
        if not isinstance(part, dict):
            return f"key '{at}groups.{name}' is {type(part).__name__}, not an object"
        problem = shape_problem(part, f"{at}groups.{name}.")
        if problem:
            return problem
    return None


def num(x: Any) -> float | None:
    """A finite number, or None (JSON null, NaN, a missing key, or not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def divisor(effects: dict, normalized: bool | str) -> float | None:
    """What raw values are divided by (:data:`SD_KEYS`): reward_std when ``normalized``,
    reward_std_all when it is ``"all"`` (None for a file made before it was recorded), else
    1."""
    if not normalized:
        return 1.0
    std = num(effects.get(SD_KEYS[normalized]))
    return std if std is not None and std > 0 else None


def value(effects: dict, key: str, normalized: bool | str) -> float | None:
    """An estimate in the units asked for (normalised values are raw / reward_std, as in the
    file's ``normalized`` section; ``"all"``: raw / reward_std_all, its ``normalized_all``)."""
    raw, by = num(effects.get(key)), divisor(effects, normalized)
    return None if raw is None or by is None else raw / by


def level(effects: dict) -> float:
    """The file's interval coverage (0.95 when it does not say)."""
    given = num((effects.get("intervals") or {}).get("level"))
    return given if given is not None and 0 < given < 1 else 0.95


def interval(
    effects: dict, key: str, kind: str, normalized: bool | str
) -> tuple[float, float] | None:
    """The file's ``intervals[kind][key]`` in the units asked for; a normal interval missing
    from the file is rebuilt from the estimate and its SE."""
    by = divisor(effects, normalized)
    pair = ((effects.get("intervals") or {}).get(kind) or {}).get(key)
    if pair is None and kind == "normal":
        est, se = num(effects.get(key)), num(effects.get(f"{key}_stderr"))
        if est is not None and se is not None:
            z = z_quantile(level(effects))
            pair = [est - z * se, est + z * se]
    if by is None or not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return None
    lo, hi = num(pair[0]), num(pair[1])
    return None if lo is None or hi is None else (lo / by, hi / by)


def truth(effects: dict, estimand: str, normalized: bool | str) -> float | None:
    """The true effect the file knows (the tiny world), in the units asked for."""
    raw, by = num((effects.get("truth") or {}).get(estimand)), divisor(effects, normalized)
    return None if raw is None or by is None else raw / by


def success_rate(effects: dict, rewrite_pass: str) -> float | None:
    """The share of one pass's rewrites that passed create_dataset's checks, of all of them
    (the file's ``rewrite_checks``), or None where the file has none (made without checks)."""
    entry = (effects.get("rewrite_checks") or {}).get(rewrite_pass)
    return num(entry.get("success_rate")) if isinstance(entry, dict) else None


def success_counts(effects: dict, rewrite_pass: str) -> tuple[int | None, int | None]:
    """(passed, all) rewrites of one pass, as the file's ``rewrite_checks`` counts them."""
    entry = (effects.get("rewrite_checks") or {}).get(rewrite_pass)
    if not isinstance(entry, dict):
        return None, None
    passed, n = num(entry.get("passed")), num(entry.get("checked"))
    return (None, None) if passed is None or n is None else (int(passed), int(n))


def score_unchanged(effects: dict, key: str) -> bool:
    """Whether the estimate ``key`` is exactly 0 because no rewrite changed the score: the
    file's ``no_score_change``; for a file made before it, an estimate and SE both exactly 0
    (a mean of 0 with no spread: every difference was 0)."""
    listed = effects.get("no_score_change")
    if isinstance(listed, list):
        return key in listed
    within = key in BY_NAME and BY_NAME[key].group != "contrast"
    return within and num(effects.get(key)) == 0.0 and num(effects.get(f"{key}_stderr")) == 0.0


def rm_name(effects: dict) -> str:
    return str(effects.get("score") or effects.get("reward_key") or "reward model")


def units(normalized: bool | str) -> str:
    """What an axis or column holds: raw units, or what the values were divided by."""
    if not normalized:
        return "raw reward units"
    return f"normalised, {ALL_SD if normalized == 'all' else WITHIN_SD}"


def level_text(effects: Sequence[dict]) -> str:
    levels = {round(level(e), 6) for e in effects}
    return f"{levels.pop():.0%} intervals" if len(levels) == 1 else "intervals at each file's level"


def rate_key(effects: dict) -> tuple[str, str]:
    """(key, estimand) of the RATE estimate to draw: the ATE, else the ATT or ATU where the
    data identify only that (every example has the same W)."""
    for estimand in ESTIMANDS:
        key = estimator("rate", estimand).name
        if num(effects.get(key)) is not None:
            return key, estimand
    return estimator("rate", "ATE").name, "ATE"


def row_label(effects: dict) -> str:
    """A file's row in the figures: ``concept · dataset``, the same form for every file."""
    return f"{effects.get('concept') or '?'} · {effects.get('dataset_name') or '?'}"


def row_labels(effects: Sequence[dict]) -> list[str]:
    """One label per file (:func:`row_label`)."""
    return [row_label(e) for e in effects]
