"""How much of the DR estimate's spread the cross-fitting's fold split makes.

For each policy, on a few fresh gold sets (seeds 30,000 on, apart from the coverage study's),
certifies each family's inputs once and recomputes the DR point estimate over many random
two-fold splits of the same gold set: their SD beside the bootstrap SE of one split. The
bootstrap keeps the folds fixed, so a large ratio would be variance that the interval misses.

    python experiments/release/fold_split_variance.py WORLD WRAPPER NAME=CHECKPOINT ...
        [--sets 3] [--splits 200]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from tinyworld.certify.certificate import CertifySettings
from tinyworld.certify.certify import gather
from tinyworld.certify.estimators import bootstrap_counts, dr_covariates, dr_replicates, folds_of
from tinyworld.models import load_policy, load_reward_model
from tinyworld.rl_config import load_reward_wrapper
from tinyworld.studies.certify import fresh_gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("world", type=Path)
    parser.add_argument("wrapper", type=Path)
    parser.add_argument("policies", nargs="+", help="NAME=CHECKPOINT")
    parser.add_argument("--sets", type=int, default=3)
    parser.add_argument("--splits", type=int, default=200)
    args = parser.parse_args()
    if not all("=" in a for a in args.policies):
        parser.error("each policy is NAME=CHECKPOINT_DIR")
    reference = load_policy(args.world / "policy")
    rm = load_reward_model(args.world / "reward_model")
    transform = load_reward_wrapper(args.wrapper)
    print("| policy | gold set | family | SD over fold splits | bootstrap SE | ratio |")
    print("|---|---|---|---|---|---|")
    for name, folder in (a.split("=", 1) for a in args.policies):
        policy = load_policy(Path(folder))
        for g in range(args.sets):
            gold = fresh_gold(args.world, 100, 30_000 + g)
            settings = CertifySettings(300, 1000, seed=g)
            inputs = gather(policy, reference, rm, gold, transform, str(args.wrapper), settings)
            for fam, x in inputs.items():
                cov, fresh_cov = (
                    dr_covariates(x.s, x.log_w),
                    dr_covariates(x.s_fresh, x.log_w_fresh),
                )
                n, m = len(x.y), len(x.s_fresh)
                rng = np.random.default_rng(g)
                ones, fresh_ones = np.ones((1, n)), np.ones((1, m))
                points = [
                    dr_replicates(
                        x.y, x.log_w, cov, fresh_cov, folds_of(n, 2, rng), ones, fresh_ones
                    )[0]
                    for _ in range(args.splits)
                ]
                counts, fresh_counts = (
                    bootstrap_counts(n, 1000, rng),
                    bootstrap_counts(m, 1000, rng),
                )
                reps = dr_replicates(
                    x.y, x.log_w, cov, fresh_cov, folds_of(n, 2, rng), counts, fresh_counts
                )
                sd, se = float(np.std(points)), float(np.nanstd(reps, ddof=1))
                print(f"| {name} | {30_000 + g} | {fam} | {sd:.4f} | {se:.4f} | {sd / se:.2f} |")


if __name__ == "__main__":
    main()
