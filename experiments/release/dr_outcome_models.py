"""The doubly robust estimate's outcome model, side by side on the same fresh gold sets.

Reruns the certification coverage of given policies over fresh gold sets (seeds 20,000 on, as
`rate world study certify-coverage`), once for each outcome model:
- shipped: y ~ a + b s + c log w (the corrected reward, kept within the gold set's range on
  the fresh samples, and the log weight);
- reward-line: y ~ a + b s, the corrected reward's calibration line alone (rate before
  2026-12-02: it ran low at the sweep's edge);
- weighted-line: that line fitted by least squares weighted by the policy's importance weights
  (so that it fits where the policy goes); it did not remove the low bias;
- unbounded: the shipped model without bounds (rate before 2026-12-03: the line extrapolated
  where a wrapper's error put fresh samples far below every gold row);
- bounded-both: the log weight bounded too (it brought back the low bias at the edge).
Prints, per cell, coverage where it answers, misses below the truth, and the mean and mean
absolute error; each model's study is saved under OUT/<model>/.

    python experiments/release/dr_outcome_models.py WORLD WRAPPER OUT SETS NAME=CHECKPOINT ...
        [--models shipped,reward-line,weighted-line]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import tinyworld.certify.certificate as certify
from rate.io import atomic_write_json
from tinyworld.certify import estimators
from tinyworld.studies.certify import coverage_study, markdown


def reward_only(s: np.ndarray, log_w: np.ndarray) -> np.ndarray:
    """The covariates of the calibration line alone: the corrected reward."""
    return s


def weighted_dr(y, log_w, covariates, fresh_covariates, folds, counts, fresh_counts):
    """:func:`tinyworld.certify.estimators.dr_replicates` with the model fitted under the weights."""
    w = np.exp(log_w - log_w.max())
    gold_x, fresh_x = estimators.outcome_design(covariates, fresh_covariates)
    fresh_mean = (fresh_counts @ fresh_x) / fresh_counts.sum(1, keepdims=True)
    folds = np.broadcast_to(folds, counts.shape)
    total = np.zeros(counts.shape[0])
    for k in np.unique(folds):
        inside = folds == k
        beta = estimators._least_squares(counts * ~inside * w, gold_x, y)
        cw = counts * inside * w
        with np.errstate(invalid="ignore", divide="ignore"):
            residual = (cw @ y - (cw * (beta @ gold_x.T)).sum(1)) / cw.sum(1)
        total += inside.sum(1) / len(y) * ((fresh_mean * beta).sum(1) + residual)
    return total


def bounded_dr(columns: tuple[int, ...]):
    """:func:`tinyworld.certify.estimators.dr_replicates` with the fresh samples' covariates in
    ``columns`` (0: the corrected reward, 1: the log weight) kept within the gold set's range
    (the shipped model bounds the corrected reward alone)."""

    def dr(y, log_w, covariates, fresh_covariates, folds, counts, fresh_counts):
        return estimators.dr_replicates(
            y, log_w, covariates, fresh_covariates, folds, counts, fresh_counts, columns
        )

    return dr


MODELS = {
    "shipped": (certify.dr_replicates, certify.dr_covariates),
    "unbounded": (bounded_dr(()), certify.dr_covariates),
    "bounded-both": (bounded_dr((0, 1)), certify.dr_covariates),
    "reward-line": (certify.dr_replicates, reward_only),
    "weighted-line": (weighted_dr, reward_only),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("world", type=Path)
    parser.add_argument("wrapper", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("sets", type=int)
    parser.add_argument("policies", nargs="+", help="NAME=CHECKPOINT")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    unknown = sorted(set(args.models.split(",")) - set(MODELS))
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    if not all("=" in a for a in args.policies):
        parser.error("each policy is NAME=CHECKPOINT_DIR")
    policies = {k: Path(v) for k, v in (a.split("=", 1) for a in args.policies)}
    shipped = certify.dr_replicates, certify.dr_covariates
    try:
        for name in args.models.split(","):
            # certify_inputs looks both up in its own module
            certify.dr_replicates, certify.dr_covariates = MODELS[name]
            study = coverage_study(args.world, policies, args.out / name, args.wrapper, args.sets)
            atomic_write_json(args.out / name / "coverage.json", study)
            (args.out / name / "coverage.md").write_text(markdown(study))
            print(f"{name}: DR coverage where it answers {study['summary']}")
            for c in study["cells"]:
                answered = c["sets"] - c["abstained"]
                print(
                    f"{name}: {c['policy']} {c['cell']}: covers {c['dr_covered']}/{answered}, "
                    f"{c['dr_missed_low']} below, mean error {c['dr_mean_error']}, "
                    f"mean abs error {c['dr_mean_abs_error']}"
                )
    finally:
        certify.dr_replicates, certify.dr_covariates = shipped


if __name__ == "__main__":
    main()
