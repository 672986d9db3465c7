"""The certificate's gold plan against fresh gold sets: predicted and observed pass shares.

Reads `rate world study certify-coverage --gold-per-family N --out OUT` folders (the journal's header
names the world, the wrapper, the policies and N; each line records which cells abstained on
one fresh gold set of N rows a family, labelled by the oracle). For each policy it certifies
as an analyst would, on the world's own gold set (`rate world certify`'s defaults), and
prints per family:
- the KL the certificate read, and the plan's rows where the family abstains there;
- the share of gold sets of N rows that the plan's simulation says pass both floors
  (`tinyworld.certify.estimators.GoldDraws`, from the plan's unlabelled samples of both policies),
  and, beside it, the same from the reference's samples alone (the first design);
- the share of the study's fresh gold sets on which the family did not abstain.

    python experiments/release/gold_plan_check.py OUT [OUT ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tinyworld.certify.certificate import CertifySettings
from tinyworld.certify.certify import certify_policy, plan_log_ratios
from tinyworld.certify.estimators import GoldDraws
from tinyworld.models import load_policy


def observed_pass(journal: Path) -> tuple[dict, dict[str, dict[str, float]]]:
    """The journal's header, and per policy and family the share of sets that answered."""
    lines = [json.loads(x) for x in journal.read_text().splitlines() if x.strip()]
    header, sets = lines[0], lines[1:]
    shares: dict[str, dict[str, float]] = {}
    for name in header["policies"]:
        cells = sets[0]["policies"][name]
        shares[name] = {
            cell: float(np.mean([not s["policies"][name][cell]["abstain"] for s in sets]))
            for cell in cells
        }
    return header, shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("studies", nargs="+", type=Path, help="certify-coverage output folders")
    parser.add_argument("--sets", type=int, default=1000, help="simulated gold sets a size")
    args = parser.parse_args()
    settings = CertifySettings()
    print(
        "| gold rows | policy | family | KL | plan (world's gold set) | predicted: both "
        "policies' samples | predicted: reference's alone | observed (fresh gold sets) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for study in args.studies:
        header, shares = observed_pass(study / "sets.jsonl")
        world, n = Path(header["world"]), header["gold_per_family"]
        wrapper = Path(header["wrapper"]) if header["wrapper"] else None
        reference = load_policy(world / "policy")
        for name, directory in header["policies"].items():
            report = certify_policy(world, Path(directory), wrapper, settings=settings)
            rows = report["per_family"]
            plans = plan_log_ratios(load_policy(Path(directory)), reference, list(rows), settings)
            rng = np.random.default_rng(0)
            for fam, row in rows.items():
                ref_w, new_w = plans[fam]
                both = GoldDraws(ref_w, new_w).pass_share(n, row["kl"], rng, sets=args.sets)
                alone = GoldDraws(ref_w, new_w[:0]).pass_share(n, row["kl"], rng, sets=args.sets)
                plan = (row.get("gold_plan") or {}).get("rows", "-") if row["abstain"] else "-"
                print(
                    f"| {n} | {name} | {fam} | {row['kl']:.2f} | {plan or 'none'} | "
                    f"{both:.2f} | {alone:.2f} | {shares[name][fam]:.2f} |"
                )


if __name__ == "__main__":
    main()
