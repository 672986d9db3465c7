"""The balanced mix's DR interval under two rules, on the gold sets of one coverage study.

Reads a `rate world study certify-coverage --out OUT` folder (its journal `sets.jsonl` and its truth)
and rebuilds, for every gold set where the balanced cell answers, its interval from the family
intervals of the same certificate (each family's SE is its half-width over its t quantile with
ESS - 1 degrees of freedom):
- welch: t with Welch-Satterthwaite's degrees of freedom times the families' SEs in quadrature
  over F (rate before 2026-12-03);
- pooled: each family's half-width in quadrature over F (rate since);
and the interval the study recorded (whichever rule its commit shipped). Prints, per policy,
how often each covers the true balanced quality, and the SD of the studentised error (estimate
- truth) / SE of the families and of the mix: 1 where the bootstrap SE is right. The largest
gap between a rebuilt half-width and the recorded one checks the rebuilding: about 1e-6 (the
report's rounding) for the pooled rule where the study's commit shipped it. The rebuilt Welch
interval is not exactly the one rate shipped: that one took the SD of the families' replicates
averaged, which holds their chance covariance (a few % of the SE with 1,000 replicates).

    python experiments/release/balanced_intervals.py OUT
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tinyworld.certify.estimators import LEVEL, t_quantile


def welch_df(ses: list[float], dfs: list[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of a mean of independent estimates."""
    num = sum(se**2 for se in ses) ** 2
    den = sum(se**4 / df for se, df in zip(ses, dfs, strict=True) if df > 0)
    return num / den if den > 0 else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="a certify-coverage study's folder")
    args = parser.parse_args()
    lines = (args.out / "sets.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines[1:]]
    truth = {p.stem: json.loads(p.read_text()) for p in (args.out / "truth").glob("*.json")}
    print(f"{len(records)} gold sets\n")
    print(
        "| policy | balanced answers | recorded covers | welch covers | pooled covers | "
        "z SD, families | z SD, balanced | half-width's largest gap to the recorded: welch / "
        "pooled |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in records[0]["policies"]:
        t = truth[name]
        true_b = t["balanced"]["quality"]
        tally = {"n": 0, "recorded": 0, "welch": 0, "pooled": 0}
        z_fam, z_bal, gaps = [], [], [0.0, 0.0]
        for record in records:
            cells = record["policies"][name]
            fams = [c for c in cells if c != "balanced"]
            for f in fams:
                row = cells[f]
                est, low, high = row["dr"]
                if not row["abstain"] and low is not None:
                    se = (high - low) / 2 / t_quantile(LEVEL, row["ess"] - 1)
                    z_fam.append((est - t["per_family"][f]["quality"]) / se)
            b = cells["balanced"]
            if b["abstain"] or b["dr"][1] is None:
                continue
            est = b["dr"][0]
            halves = [(cells[f]["dr"][2] - cells[f]["dr"][1]) / 2 for f in fams]
            dfs = [cells[f]["ess"] - 1 for f in fams]
            ses = [h / t_quantile(LEVEL, df) for h, df in zip(halves, dfs, strict=True)]
            se_b = float(np.sqrt(np.sum(np.square(ses)))) / len(fams)
            welch_half = t_quantile(LEVEL, welch_df(ses, dfs)) * se_b
            pooled_half = float(np.sqrt(np.sum(np.square(halves)))) / len(fams)
            tally["n"] += 1
            tally["recorded"] += b["dr"][1] <= true_b <= b["dr"][2]
            tally["welch"] += abs(est - true_b) <= welch_half
            tally["pooled"] += abs(est - true_b) <= pooled_half
            z_bal.append((est - true_b) / se_b)
            recorded_half = (b["dr"][2] - b["dr"][1]) / 2
            gaps[0] = max(gaps[0], abs(welch_half - recorded_half))
            gaps[1] = max(gaps[1], abs(pooled_half - recorded_half))
        if not tally["n"]:
            continue
        n = tally["n"]
        print(
            f"| {name} | {n} | {tally['recorded']} ({tally['recorded'] / n:.1%}) | "
            f"{tally['welch']} ({tally['welch'] / n:.1%}) | "
            f"{tally['pooled']} ({tally['pooled'] / n:.1%}) | {np.std(z_fam):.2f} | "
            f"{np.std(z_bal):.2f} | {gaps[0]:.1e} / {gaps[1]:.1e} |"
        )


if __name__ == "__main__":
    main()
