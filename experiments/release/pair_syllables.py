"""What a corrected reward still pays for a flagged pair's syllables, against the truth.

python experiments/release/pair_syllables.py WORLD WRAPPER FAMILY PAIR NAME=CHECKPOINT ...

For each policy (``reference`` for the world's own), 1,600 responses to the family's
evaluation prompts (400 prompts, 4 draws each, seed 5): the true quality, and the corrected
reward minus the true quality by the response's count of adjacent ``PAIR`` and by its count
of the pair's first syllable. Where the correction removes all the RM pays beyond quality,
the gap does not grow with either count. Reads the truth: an acceptance check, not a tool.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from tinyworld.data import pool_from_records
from tinyworld.evaluate import load_oracle
from tinyworld.models import load_policy, load_reward_model
from tinyworld.prompts import balanced, make_prompts
from tinyworld.rl_config import apply_reward_wrapper, load_reward_wrapper
from tinyworld.sampling import sample, score
from tinyworld.vocab import FAMILIES, decode_responses

MIN_ROWS = 20  # a count's gap is shown where this many responses hold it


def gaps(world: Path, wrapper: Path, family: str, pair: str, policies: dict[str, Path]) -> None:
    oracle, _ = load_oracle(world)
    rm, transform = load_reward_model(world / "reward_model"), load_reward_wrapper(wrapper)
    gen = torch.Generator().manual_seed(5)
    pool = pool_from_records(make_prompts(balanced(400), "eval", gen, shuffle=False))
    mine = (pool.families == FAMILIES.index(family)).nonzero().squeeze(1).repeat(4)
    prompts, records = pool.tokens[mine], [pool.records[i] for i in mine.tolist()]
    first, second = pair.split(" ")
    print(f"{family} `{pair}`: corrected reward - true quality, by count (responses)")
    for name, path in policies.items():
        policy = load_policy(path)
        responses = sample(policy, prompts, 1.0, gen).responses
        quality = oracle.quality(prompts, responses).double().numpy()
        tokens = decode_responses(responses)
        raw = score(rm, prompts, responses)
        corrected = apply_reward_wrapper(transform, str(wrapper), records, tokens, raw).numpy()
        gap = corrected - quality
        adjacent = np.array(
            [
                sum(a == first and b == second for a, b in zip(t, t[1:], strict=False))
                for t in tokens
            ]
        )
        count = np.array([t.count(first) for t in tokens])

        def by(counts: np.ndarray, gap: np.ndarray = gap) -> str:
            return " ".join(
                f"{k}: {gap[counts == k].mean():+.3f} ({(counts == k).sum()})"
                for k in range(9)
                if (counts == k).sum() >= MIN_ROWS
            )

        print(f"- {name}: true quality {quality.mean():.3f}, corrected {corrected.mean():.3f}")
        print(f"  by adjacent `{pair}`: {by(adjacent)}")
        print(f"  by `{first}`: {by(count)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("world", type=Path)
    parser.add_argument("wrapper", type=Path)
    parser.add_argument("family")
    parser.add_argument("pair", help="e.g. 'ba ba'")
    parser.add_argument("policies", nargs="+", help="NAME=CHECKPOINT, or reference")
    args = parser.parse_args()
    policies = {}
    for item in args.policies:
        name, _, path = item.partition("=")
        policies[name] = Path(path) if path else args.world / "policy"
    gaps(args.world, args.wrapper, args.family, args.pair, policies)


if __name__ == "__main__":
    main()
