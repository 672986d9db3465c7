"""What RATE measures in the typo sweep: W's effect in the rewriter's corrected text.

    python experiments/synthetic/typo_contexts.py WORLD

`make world-study-synthetic`'s typo sweep (b) turns two positions of a share of the W=1 originals into
'ga', which the rewriter's style map always writes as 'ka'. Its truth compares each original,
'ga' and all, with its perfect rewrite (W flipped, nothing else). RATE compares two rewriter
outputs, where each 'ga' is already a 'ka'. Where the reward model pays W differently beside a
'ka' than beside a 'ga', the two part ways with the share. This harness rebuilds the sweep's
sample (same pool, seed and draws as `rate world study synthetic`) and, at each share, sets RATE's
ATT beside two truths: the sweep's (the 'ga' text) and the same contrast with every 'ga' of
the original and of its perfect rewrite written as 'ka' (the text the rewriter hands on).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from rate.catalog import load_dataset_template
from rate.records import ORIGINAL, PERFECT, REWRITE, REWRITTEN, TEXTS
from rate.rewrite.backends import build_rewriter
from tinyworld.studies.common import ScoredPool, score_rows_with, scored_pool
from tinyworld.studies.synthetic import TEMPLATE, TYPO, _estimates, typo_level_rows

SCORER = "tinyrlhf_rm"
SHARES = (0.0, 0.5, 1.0)


def as_corrected(text: str, corrected: str) -> str:
    return " ".join(corrected if t == TYPO else t for t in text.split())


def main(world: Path, pool_size: int = 40_000, n: int = 2000, seed: int = 0) -> None:
    template = load_dataset_template(TEMPLATE)
    rule = template.part("w_classifier")
    corrected = template.part("rewriter").style_map[TYPO]
    pool = scored_pool(template, pool_size, seed, world, [SCORER])
    rewriter = build_rewriter(template, seed)
    rng = np.random.default_rng(seed)  # the sweep's draws, in the sweep's order
    base = pool.subset(rng.choice(len(pool.w), n, replace=False))
    u = rng.random(n)
    print(f"| share | RATE (ATT) | truth: 'ga' text | truth: '{corrected}' text |")
    print("|---|---|---|---|")
    for share in SHARES:
        rows = typo_level_rows(base, u, share, rewriter, rule)
        plain = []
        for row in rows:
            fixed_text = as_corrected(row[TEXTS][ORIGINAL], corrected)
            fixed_perfect = as_corrected(row[TEXTS][PERFECT], corrected)
            plain.append(  # only the original and the perfect rewrite are read back
                {
                    **row,
                    TEXTS: {
                        ORIGINAL: fixed_text,
                        REWRITE: fixed_text,
                        REWRITTEN: fixed_perfect,
                        PERFECT: fixed_perfect,
                    },
                }  # fmt: skip
            )
        scores = score_rows_with(rows, [SCORER], world)[SCORER]
        rate = _estimates(ScoredPool(rows, base.w, {SCORER: scores}), SCORER, "ATT")["rate"]
        fixed = score_rows_with(plain, [SCORER], world)[SCORER]
        treated = base.w.astype(bool)
        ka_truth = float(np.mean((fixed[ORIGINAL] - fixed[PERFECT])[treated]))
        print(
            f"| {share:g} | {rate['estimate']:+.4f} [{rate['low']:+.4f}, {rate['high']:+.4f}] "
            f"| {rate['truth']:+.4f} | {ka_truth:+.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    main(Path(sys.argv[1]))
