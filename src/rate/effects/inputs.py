"""What the estimators take, decided once for treatment_effects and the Python API alike: which
scores are refused (missing, not numbers, non-finite, too large to sum), and which estimates
exist (with one W value there is no contrast, so the naive effect, the ATEs and the absent
group's effect are NaN, with a note saying why).

The stage reads a scored file's columns; :mod:`rate.api.data` builds the same columns from a
DataFrame or arrays, so that both refuse the same inputs with the same messages and give the
same numbers.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from rate.columns import ScoreColumns
from rate.effects.estimators import Scores, estimate, needs_both_groups, present
from rate.errors import DataFileError

log = logging.getLogger(__name__)

# No reward model scores this far from 0; beyond it, squares and sums of scores overflow.
MAX_SCORE = 1e100
# How the stage's user keeps going without the refused examples (the API passes its own).
STAGE_DROP = "set effects.drop_incomplete: true"
MISSING = "lack a completion or its score"


def extract_scores(
    cols: ScoreColumns,
    reward_key: str | None,
    source: Path | str,
    drop_incomplete: bool,
    *,
    drop_fix: str = STAGE_DROP,
    missing_what: str = MISSING,
) -> tuple[Scores, np.ndarray | None, np.ndarray, dict]:
    """Arrays for the estimators (and the true counterfactual's scores where every kept row has
    one); -> (scores, perfect or None, the positions kept, exclusion counts). A bad score is
    an error naming ``source`` and its examples, unless ``drop_incomplete`` drops them."""
    if len(cols) == 0:
        raise DataFileError(f"{source}: no examples")
    if not cols.has_key:
        raise DataFileError(
            f"{source}: no scores under reward_key {reward_key!r}; reward keys present: "
            f"{', '.join(cols.reward_keys) or '(none: score the file first)'}"
        )
    under = f" under {reward_key!r}" if reward_key else ""
    # NaN where a score is missing or not a number (NaN scores in the file are non-finite
    # ones; they are told apart here). A score beyond MAX_SCORE is finite but overflows the
    # estimators' squares and sums, so it is refused as well.
    finite = np.isfinite(cols.scores).all(axis=1)
    huge = finite & (np.abs(np.where(finite[:, None], cols.scores, 0.0)) > MAX_SCORE).any(axis=1)
    wrong = cols.wrong_type or [None] * len(cols)
    not_number = np.array([w is not None for w in wrong], dtype=bool)
    bad = {
        "missing": [cols.index[i] for i in np.flatnonzero(cols.missing & ~not_number)],
        "not_a_number": [
            f"{cols.index[i]} ({wrong[i][0]!r}: {wrong[i][1]})" for i in np.flatnonzero(not_number)
        ],
        "non_finite": [cols.index[i] for i in np.flatnonzero(~finite & ~cols.missing)],
        "too_large": [cols.index[i] for i in np.flatnonzero(huge)],
    }
    for kind, what in (
        ("missing", missing_what),
        ("not_a_number", "have a score that is not a number"),
        ("non_finite", "have a non-finite score (NaN or infinity)"),
        ("too_large", f"have a score beyond +-{MAX_SCORE:g} (it would overflow the estimators)"),
    ):
        idx = bad[kind]
        if idx and not drop_incomplete:
            shown = ", ".join(idx[:10]) + (" ..." if len(idx) > 10 else "")
            raise DataFileError(
                f"{source}: {len(idx)} of {len(cols)} examples {what}{under} "
                f"(examples {shown}); rescore them, or {drop_fix} to exclude them"
            )
        if idx:
            log.warning("excluded %d examples that %s", len(idx), what)
    finite &= ~huge
    keep = np.flatnonzero(finite)
    if keep.size == 0:
        raise DataFileError(f"{source}: no complete examples{under}")
    table = cols.scores[keep]
    scores = Scores(
        cols.w[keep], table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy(),
        _placebo(cols, keep, source),
    )  # fmt: skip
    perfect = cols.perfect[keep] if cols.has_perfect[keep].all() else None
    excluded = {
        "missing": len(bad["missing"]) + len(bad["not_a_number"]),
        "non_finite": len(bad["non_finite"]) + len(bad["too_large"]),
    }
    return scores, perfect, keep, excluded


def _placebo(cols: ScoreColumns, keep: np.ndarray, source: Path | str) -> np.ndarray | None:
    """The placebo rewrites' scores of the kept rows where every one has a usable score, else
    None (the placebo-corrected estimators are then left out, with a warning where some rows
    have one)."""
    if cols.placebo is None:
        return None
    p = cols.placebo[keep]
    usable = np.isfinite(p) & (np.abs(np.nan_to_num(p)) <= MAX_SCORE)
    if usable.all():
        return p.copy()
    if usable.any():
        log.warning(
            "%s: %d of %d examples have a placebo rewrite score; the placebo-corrected RATE "
            "needs one for every example and is left out",
            source,
            int(usable.sum()),
            usable.size,
        )
    return None


def identified_estimates(s: Scores) -> tuple[dict[str, float], list[str]]:
    """Every estimator on ``s``, NaN (no estimate) for those that need both W values where
    one is absent; -> (estimates, notes saying which are missing and why)."""
    est = estimate(s)
    n1, n0 = est["Y1_count"], est["Y0_count"]
    if n1 and n0:
        return est, []
    # With one W value there is no contrast: only that group's effect is defined.
    for e in present(est):
        if needs_both_groups(e):
            est[e.name] = est[f"{e.name}_stderr"] = math.nan
            if e.unpaired_se:
                est[f"{e.name}_stderr_unpaired"] = math.nan
    only = "W=1" if n1 else "W=0"
    note = (
        f"every example has {only}: only {'ATT' if n1 else 'ATU'} can be estimated; the "
        "naive effect and the other estimands are null"
    )
    return est, [note]
