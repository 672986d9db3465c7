"""Where a policy's fresh samples leave the gold rows, and what the abstention selects.

python experiments/release/fresh_beyond_gold.py samples WORLD WRAPPER CHECKPOINT FAMILY SEEDS
    per gold set (``rate world study certify-coverage``'s seeds, e.g. 20000,20001,20002): the
    corrected reward and log weight of the gold rows and of the policy's fresh samples
    (percentiles 0, 5, 50, 95, 100) and the share of fresh rewards outside the gold range;
python experiments/release/fresh_beyond_gold.py journal SETS_JSONL POLICY FAMILY
    from a coverage study's journal: the DR's mean where the cell answered and where it
    abstained.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tinyworld.certify.certificate import CertifySettings
from tinyworld.certify.certify import gather
from tinyworld.models import load_policy, load_reward_model
from tinyworld.rl_config import load_reward_wrapper
from tinyworld.studies.certify import fresh_gold

PERCENTILES = [0, 5, 50, 95, 100]


def samples(world: Path, wrapper: Path, checkpoint: Path, family: str, seeds: list[int]) -> None:
    policy, reference = load_policy(checkpoint), load_policy(world / "policy")
    rm, transform = load_reward_model(world / "reward_model"), load_reward_wrapper(wrapper)
    for seed in seeds:
        gold = fresh_gold(world, 100, seed)
        settings = CertifySettings(fresh_per_family=300, seed=seed)
        x = gather(policy, reference, rm, gold, transform, str(wrapper), settings)[family]
        outside = np.mean((x.s_fresh < x.s.min()) | (x.s_fresh > x.s.max()))
        print(f"gold set {seed}:")
        print(f"  reward, gold  {np.percentile(x.s, PERCENTILES).round(2)}")
        print(f"  reward, fresh {np.percentile(x.s_fresh, PERCENTILES).round(2)}")
        print(f"  log w, gold   {np.percentile(x.log_w, PERCENTILES).round(2)}")
        print(f"  log w, fresh  {np.percentile(x.log_w_fresh, PERCENTILES).round(2)}")
        print(f"  fresh rewards outside the gold range: {outside:.3f}")


def journal(path: Path, policy: str, family: str) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    cells = [r["policies"][policy][family] for r in lines]
    for name, keep in (("answered", False), ("abstained", True)):
        dr = [c["dr"][0] for c in cells if bool(c["abstain"]) == keep]
        mean = f"{np.mean(dr):.4f}" if dr else "-"
        print(f"{policy} {family} {name}: {len(dr)} sets, DR mean {mean}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("samples")
    s.add_argument("world", type=Path)
    s.add_argument("wrapper", type=Path)
    s.add_argument("checkpoint", type=Path)
    s.add_argument("family")
    s.add_argument("seeds")
    j = sub.add_parser("journal")
    j.add_argument("sets", type=Path)
    j.add_argument("policy")
    j.add_argument("family")
    args = parser.parse_args()
    if args.what == "samples":
        seeds = [int(v) for v in args.seeds.split(",")]
        samples(args.world, args.wrapper, args.checkpoint, args.family, seeds)
    else:
        journal(args.sets, args.policy, args.family)


if __name__ == "__main__":
    main()
