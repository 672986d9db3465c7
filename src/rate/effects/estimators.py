"""The estimators of RATE (Reber et al., ICML 2025) and its baselines, as one table.

Inputs are per-example arrays: ``w`` (the attribute of the original text), and the reward
model's scores of the original, the rewrite (W flipped) and the rewrite of the rewrite (W back),
and, where the dataset has one, of the placebo rewrite (the rewrite rewritten again with W kept).
Every estimator is the mean of one per-example quantity over one group of examples
(:data:`ESTIMATORS`); estimates, bootstrap statistics, intervals, normalisation, figures, the
demo table and the coverage study all iterate over that table, so adding an estimator is one
entry (and, for a new quantity, one line of :data:`QUANTITIES`). Key names follow the
reference pipeline so that existing notebooks keep working.

Standard errors: unpaired for the naive contrast; paired (sd of the within-example difference
over sqrt(n)) for the single-rewrite and, by default, the RATE estimators, which are
within-example differences too. The reference's conservative unpaired RATE SEs are reported
beside them with the suffix ``_stderr_unpaired``.

The placebo-corrected RATE (``*_rewritten_rewrite_placebo``): a rewriter that makes random
edits in every pass leaves two rounds of them on the rewrite of the rewrite and one on the
rewrite, so RATE's difference carries the drift of one round besides W's effect. The placebo
rewrite has two rounds too, with W as in the rewrite, so the rewrite of the rewrite against the
placebo rewrite compares two texts with two rounds each: RATE minus the drift
``sign * (placebo - rewrite)``, with the paired SE of the within-example difference. Scores
without placebo scores simply lack these estimators (:func:`estimators_for`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rate.errors import RateError

ESTIMANDS = ("ATE", "ATT", "ATU")
# Each method's label in tables, long and short.
METHOD_LABELS = {
    "naive": ("naive", "naive"),
    "single_rewrite": ("single rewrite", "single"),
    "rate": ("RATE", "RATE"),
    "rate_placebo": ("RATE, placebo-corrected", "RATE-p"),
}
METHODS = tuple(METHOD_LABELS)


@dataclass(frozen=True)
class Scores:
    """Per-example W and scores; all arrays have the same length n."""

    w: np.ndarray  # bool (n,)
    original: np.ndarray  # (n,)
    rewrite: np.ndarray  # (n,)
    rewritten_rewrite: np.ndarray  # (n,)
    placebo: np.ndarray | None = None  # (n,) the placebo rewrite's, where there is one

    def __post_init__(self) -> None:
        n = len(self.w)
        for name in ("original", "rewrite", "rewritten_rewrite", "placebo"):
            arr = getattr(self, name)
            if arr is None:
                continue
            if arr.shape != (n,):
                raise RateError(f"scores '{name}' has shape {arr.shape}, expected ({n},)")
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                raise RateError(
                    f"{bad.size} non-finite '{name}' score(s), first at example {bad[0]}; "
                    "rescore those examples or drop them"
                )

    @property
    def sign(self) -> np.ndarray:
        """+1 where W=1, -1 where W=0: orients every difference as "W=1 minus W=0"."""
        return np.where(self.w.astype(bool), 1.0, -1.0)


# Per-example quantities, each oriented "W=1 minus W=0" where it is a difference; None where
# the scores lack what the quantity needs.
QUANTITIES: dict[str, Callable[[Scores], np.ndarray | None]] = {
    "original": lambda s: s.original,
    # Single rewrite: the original against its rewrite.
    "single": lambda s: s.sign * (s.original - s.rewrite),
    # RATE: the rewrite of the rewrite against the rewrite; both passed through the rewriter.
    "rate": lambda s: s.sign * (s.rewritten_rewrite - s.rewrite),
    # RATE against the placebo rewrite: both texts have had two rounds of the rewriter's edits.
    "rate_placebo": lambda s: (
        None if s.placebo is None else s.sign * (s.rewritten_rewrite - s.placebo)
    ),
}
# The two arms of a difference (the score of the W=1 text, of the W=0 text) for the unpaired
# SE, which treats them as independent samples.
ARMS: dict[str, Callable[[Scores], tuple[np.ndarray, np.ndarray]]] = {
    "rate": lambda s: (
        np.where(s.w, s.rewritten_rewrite, s.rewrite),
        np.where(s.w, s.rewrite, s.rewritten_rewrite),
    ),
}


@dataclass(frozen=True)
class Estimator:
    """One row of the table: the mean of ``quantity`` over ``group``."""

    name: str  # the reference's key, e.g. ATT_rewritten_rewrite
    estimand: str  # ATE, ATT or ATU: the true effect it targets
    method: str  # naive, single_rewrite or rate
    quantity: str  # a key of QUANTITIES
    # w1 / w0: the mean over that group; all: over every example (the n-weighted mean of the
    # two); contrast: the W=1 mean minus the W=0 mean, with an unpaired SE.
    group: str
    unpaired_se: bool = False  # also the reference's unpaired SE (needs ARMS[quantity])
    # Only where the scores have what its quantity needs (placebo rewrites); files and results
    # without it simply lack it.
    optional: bool = False


ESTIMATORS: tuple[Estimator, ...] = (
    Estimator("naive_effect", "ATE", "naive", "original", "contrast"),
    Estimator("ATT_single_rewrite", "ATT", "single_rewrite", "single", "w1"),
    Estimator("ATU_single_rewrite", "ATU", "single_rewrite", "single", "w0"),
    Estimator("ATE_single_rewrite", "ATE", "single_rewrite", "single", "all"),
    Estimator("ATT_rewritten_rewrite", "ATT", "rate", "rate", "w1", unpaired_se=True),
    Estimator("ATU_rewritten_rewrite", "ATU", "rate", "rate", "w0", unpaired_se=True),
    Estimator("ATE_rewritten_rewrite", "ATE", "rate", "rate", "all", unpaired_se=True),
    Estimator(
        "ATT_rewritten_rewrite_placebo",
        "ATT",
        "rate_placebo",
        "rate_placebo",
        "w1",
        optional=True,
    ),
    Estimator(
        "ATU_rewritten_rewrite_placebo",
        "ATU",
        "rate_placebo",
        "rate_placebo",
        "w0",
        optional=True,
    ),
    Estimator(
        "ATE_rewritten_rewrite_placebo",
        "ATE",
        "rate_placebo",
        "rate_placebo",
        "all",
        optional=True,
    ),
)
BY_NAME = {e.name: e for e in ESTIMATORS}
# An estimate this many of its own SEs from a known truth is flagged in every table that
# prints the two side by side.
FLAG_SE = 2.0


def beyond_se(error_in_se: float | None, limit: float = FLAG_SE) -> bool | None:
    """Whether an error of ``error_in_se`` SEs exceeds ``limit`` (None where it is unknown)."""
    if error_in_se is None or not math.isfinite(error_in_se):
        return None
    return abs(error_in_se) > limit


def quantities(s: Scores) -> dict[str, np.ndarray]:
    """The per-example quantities that ``s`` has the scores for."""
    values = {name: q(s) for name, q in QUANTITIES.items()}
    return {name: v for name, v in values.items() if v is not None}


def estimators_for(s: Scores) -> list[Estimator]:
    """The estimators of the table that ``s`` has the scores for (the placebo-corrected ones
    need placebo scores)."""
    have = quantities(s)
    return [e for e in ESTIMATORS if e.quantity in have]


def present(est: dict) -> list[Estimator]:
    """The estimators of the table that an effect result or file holds."""
    return [e for e in ESTIMATORS if e.name in est]


def by_estimand(estimand: str) -> dict[str, Estimator]:
    """{method: estimator} of the estimators that target ``estimand``."""
    return {e.method: e for e in ESTIMATORS if e.estimand == estimand}


def estimator(method: str, estimand: str) -> Estimator | None:
    """The estimator of ``method`` for ``estimand`` (None where there is none, e.g. a naive
    ATT)."""
    return by_estimand(estimand).get(method)


def needs_both_groups(e: Estimator) -> bool:
    """Whether the estimator is defined only when both W values are present."""
    return e.group in ("contrast", "all")


def _mean_se_paired(diff: np.ndarray) -> tuple[float, float]:
    n = diff.size
    if n == 0:
        return math.nan, math.nan
    se = float(np.std(diff, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return float(np.mean(diff)), se


def _se_unpaired(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or b.size < 2:
        return math.nan
    return float(math.sqrt(np.var(a, ddof=1) / a.size + np.var(b, ddof=1) / b.size))


def _mask(group: str, w: np.ndarray) -> np.ndarray | slice:
    return {"w1": w, "w0": ~w}.get(group, slice(None))


def estimate(s: Scores) -> dict[str, float]:
    """Every estimator of the table with its standard error(s), plus counts and diagnostics."""
    w = s.w.astype(bool)
    n1, n0 = int(w.sum()), int((~w).sum())
    if n1 + n0 == 0:
        raise RateError("no examples to estimate effects from")
    out: dict[str, float] = {"Y1_count": n1, "Y0_count": n0}
    values = quantities(s)
    table = estimators_for(s)
    for e in table:
        q = values[e.quantity]
        if e.group == "contrast":
            if n1 and n0:
                out[e.name] = float(q[w].mean() - q[~w].mean())
                out[f"{e.name}_stderr"] = _se_unpaired(q[w], q[~w])
            else:
                out[e.name] = out[f"{e.name}_stderr"] = math.nan
        else:
            out[e.name], out[f"{e.name}_stderr"] = _mean_se_paired(q[_mask(e.group, w)])
    for e in table:
        if e.unpaired_se:
            arm1, arm0 = ARMS[e.quantity](s)
            mask = _mask(e.group, w)
            out[f"{e.name}_stderr_unpaired"] = _se_unpaired(arm1[mask], arm0[mask])

    # Pooled sd of the original scores of the two groups, for normalised effects (the
    # reference's reward_std, a Cohen's d scale). Within groups it can be far smaller than
    # the spread of all scores, so that spread is reported beside it.
    o = s.original
    if n1 > 1 and n0 > 1:
        v1, v0 = np.var(o[w], ddof=1), np.var(o[~w], ddof=1)
        out["reward_std"] = float(math.sqrt(((n1 - 1) * v1 + (n0 - 1) * v0) / (n1 + n0 - 2)))
    else:
        out["reward_std"] = float(np.std(o, ddof=1)) if o.size > 1 else math.nan
    out["reward_std_all"] = float(np.std(o, ddof=1)) if o.size > 1 else math.nan

    # Rewriter signature: how far a round trip moves the score, within each group.
    for label, mask in (("w_1", w), ("w_0", ~w)):
        m, se = _mean_se_paired((s.rewritten_rewrite - o)[mask])
        out[f"rewrite_effect_{label}"], out[f"rewrite_effect_{label}_stderr"] = m, se
    # The drift of one more rewrite round with W kept: placebo rewrite minus rewrite (what the
    # placebo-corrected RATE takes off RATE, sign aside).
    if s.placebo is not None:
        for label, mask in (("w_1", w), ("w_0", ~w)):
            m, se = _mean_se_paired((s.placebo - s.rewrite)[mask])
            out[f"placebo_drift_{label}"], out[f"placebo_drift_{label}_stderr"] = m, se
    return out


def unchanged_scores(s: Scores) -> list[str]:
    """The within-example estimators whose every difference is exactly 0: no rewrite changed
    the score, so their estimate (and SE) is exactly 0 for that reason alone."""
    w = s.w.astype(bool)
    values = quantities(s)
    out = []
    for e in estimators_for(s):
        if e.group != "contrast":
            diff = values[e.quantity][_mask(e.group, w)]
            if diff.size and not np.any(diff):
                out.append(e.name)
    return out


def normalised_keys(est: dict) -> list[str]:
    """The keys of ``est`` that are in reward units (divided by reward_std to normalise)."""
    keys = []
    for e in ESTIMATORS:
        keys += [e.name, f"{e.name}_stderr"] + (
            [f"{e.name}_stderr_unpaired"] if e.unpaired_se else []
        )
    for label in ("w_1", "w_0"):
        keys += [f"rewrite_effect_{label}", f"rewrite_effect_{label}_stderr"]
        keys += [f"placebo_drift_{label}", f"placebo_drift_{label}_stderr"]
    return [k for k in keys if k in est]
