"""The estimators of RATE (Reber et al., ICML 2025) and its baselines, as pure functions.

Inputs are per-example arrays: ``w`` (the attribute of the original text), and the reward
model's scores of the original, the rewrite (W flipped) and the rewrite of the rewrite (W back).
Key names follow the reference pipeline so that existing notebooks keep working.

Standard errors: unpaired for the naive contrast; paired (sd of the within-example difference
over sqrt(n)) for the single-rewrite and, by default, the RATE estimators, which are
within-example differences too. The reference's conservative unpaired RATE SEs are reported
beside them with the suffix ``_stderr_unpaired``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rate.errors import RateError

RATE_KEYS = ("ATT_rewritten_rewrite", "ATU_rewritten_rewrite", "ATE_rewritten_rewrite")
SINGLE_KEYS = ("ATT_single_rewrite", "ATU_single_rewrite", "ATE_single_rewrite")


@dataclass(frozen=True)
class Scores:
    """Per-example W and scores; all arrays have the same length n."""

    w: np.ndarray  # bool (n,)
    original: np.ndarray  # (n,)
    rewrite: np.ndarray  # (n,)
    rewritten_rewrite: np.ndarray  # (n,)

    def __post_init__(self) -> None:
        n = len(self.w)
        for name in ("original", "rewrite", "rewritten_rewrite"):
            arr = getattr(self, name)
            if arr.shape != (n,):
                raise RateError(f"scores '{name}' has shape {arr.shape}, expected ({n},)")
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                raise RateError(
                    f"{bad.size} non-finite '{name}' score(s), first at example {bad[0]}; "
                    "rescore those examples or drop them"
                )


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


def estimate(s: Scores) -> dict[str, float]:
    """Every estimator of SPEC A.1 with its standard error(s), plus counts and diagnostics."""
    w = s.w.astype(bool)
    n1, n0 = int(w.sum()), int((~w).sum())
    if n1 + n0 == 0:
        raise RateError("no examples to estimate effects from")
    o, r, rr = s.original, s.rewrite, s.rewritten_rewrite
    sign = np.where(w, 1.0, -1.0)  # orients every difference as "W=1 minus W=0"
    out: dict[str, float] = {"Y1_count": n1, "Y0_count": n0}

    # Naive: a difference of group means of the original scores.
    if n1 and n0:
        out["naive_effect"] = float(o[w].mean() - o[~w].mean())
        out["naive_effect_stderr"] = _se_unpaired(o[w], o[~w])
    else:
        out["naive_effect"] = out["naive_effect_stderr"] = math.nan

    # Single rewrite: original against its rewrite.
    single = sign * (o - r)
    out["ATT_single_rewrite"], out["ATT_single_rewrite_stderr"] = _mean_se_paired(single[w])
    out["ATU_single_rewrite"], out["ATU_single_rewrite_stderr"] = _mean_se_paired(single[~w])
    out["ATE_single_rewrite"], out["ATE_single_rewrite_stderr"] = _mean_se_paired(single)

    # RATE: the rewrite of the rewrite against the rewrite; both passed through the rewriter.
    rate = sign * (rr - r)
    out["ATT_rewritten_rewrite"], out["ATT_rewritten_rewrite_stderr"] = _mean_se_paired(rate[w])
    out["ATU_rewritten_rewrite"], out["ATU_rewritten_rewrite_stderr"] = _mean_se_paired(rate[~w])
    out["ATE_rewritten_rewrite"], out["ATE_rewritten_rewrite_stderr"] = _mean_se_paired(rate)
    # The reference's unpaired SEs: as if the two arms were independent samples.
    do1 = np.where(w, rr, r)  # the text with W=1 of each pair
    do0 = np.where(w, r, rr)
    out["ATT_rewritten_rewrite_stderr_unpaired"] = _se_unpaired(rr[w], r[w])
    out["ATU_rewritten_rewrite_stderr_unpaired"] = _se_unpaired(r[~w], rr[~w])
    out["ATE_rewritten_rewrite_stderr_unpaired"] = _se_unpaired(do1, do0)

    # Pooled sd of the original scores of the two groups, for normalised effects.
    if n1 > 1 and n0 > 1:
        v1, v0 = np.var(o[w], ddof=1), np.var(o[~w], ddof=1)
        out["reward_std"] = float(math.sqrt(((n1 - 1) * v1 + (n0 - 1) * v0) / (n1 + n0 - 2)))
    else:
        out["reward_std"] = float(np.std(o, ddof=1)) if o.size > 1 else math.nan

    # Rewriter signature: how far a round trip moves the score, within each group.
    for label, mask in (("w_1", w), ("w_0", ~w)):
        m, se = _mean_se_paired((rr - o)[mask])
        out[f"rewrite_effect_{label}"], out[f"rewrite_effect_{label}_stderr"] = m, se
    return out
