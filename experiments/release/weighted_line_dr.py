"""Is the doubly robust estimate's low bias at the sweep's edge its calibration line's?

Reruns the certification coverage of given policies over fresh gold sets (seeds 20,000 on, as
`rate study certify-coverage`), once as shipped and once with the line a + b s fitted by least
squares weighted by the policy's importance weights (the line then fits where the policy
goes, not where the reference goes). Prints, per cell, coverage where it answers, misses below
the truth, and the mean and mean absolute error.

    python experiments/release/weighted_line_dr.py WORLD WRAPPER OUT SETS NAME=CHECKPOINT ...
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import rate.certify.certify as certify
from rate.certify import estimators
from rate.studies.certify import coverage_study


def weighted_line_dr(y, log_w, s, s_fresh, folds, counts, fresh_counts):
    """:func:`rate.certify.estimators.dr_replicates` with the line fitted under the weights."""
    w = np.exp(log_w - log_w.max())
    fresh_mean = (fresh_counts @ s_fresh) / fresh_counts.sum(1)
    total = np.zeros(counts.shape[0])
    for k in np.unique(folds):
        inside = folds == k
        a, b = estimators._line_fit(counts * ~inside * w, s, y)
        c = counts[:, inside]
        wk, yk, sk = w[inside], y[inside], s[inside]
        with np.errstate(invalid="ignore", divide="ignore"):
            residual = (c @ (wk * yk) - a * (c @ wk) - b * (c @ (wk * sk))) / (c @ wk)
        total += inside.sum() / len(y) * (a + b * fresh_mean + residual)
    return total


def main() -> None:
    world, wrapper, out, sets = (
        Path(sys.argv[1]),
        Path(sys.argv[2]),
        Path(sys.argv[3]),
        int(sys.argv[4]),
    )
    policies = {k: Path(v) for k, v in (a.split("=", 1) for a in sys.argv[5:])}
    shipped = certify.dr_replicates
    for name, dr in (("shipped", shipped), ("weighted line", weighted_line_dr)):
        certify.dr_replicates = dr  # certify_inputs looks the estimator up in its module
        study = coverage_study(world, policies, out / name.replace(" ", "_"), wrapper, sets)
        for c in study["cells"]:
            answered = c["sets"] - c["abstained"]
            print(
                f"{name}: {c['policy']} {c['cell']}: covers {c['dr_covered']}/{answered}, "
                f"{c['dr_missed_low']} below, mean error {c['dr_mean_error']}, "
                f"mean abs error {c['dr_mean_abs_error']}"
            )
    certify.dr_replicates = shipped


if __name__ == "__main__":
    main()
