"""Where RATE's misses come from: its bias per variant of the rewriter, on a large pool.

    python experiments/synthetic/bias_decomposition.py WORLD [N]

For `tinyrlhf_dune_pa`, `tinyrlhf_ember_he` and the control `tinyrlhf_anvil_pa`, draws N
examples (default 50,000) once per variant of the template's rewriter (the style map and the
random edits, each alone and together), scores every completion with the reward model and the
true quality, and prints RATE's and the placebo-corrected RATE's (RATE-p) ATT, ATU and ATE
minus the truth over the whole pool: in raw units and in the SE of a 2,000-example run (the
pool's SE times sqrt(N / 2,000)). `experiments/coverage/README.md` sums the table up.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

from rate.catalog import load_dataset_template
from rate.effects.stage import compute_effects
from tinyworld.studies.common import scored_pool

TEMPLATES = ("tinyrlhf_dune_pa", "tinyrlhf_ember_he", "tinyrlhf_anvil_pa")
ESTIMATORS = {"rewritten_rewrite": "RATE", "rewritten_rewrite_placebo": "RATE-p"}
SCORERS = {"tinyrlhf_rm": "reward model", "tinyrlhf_oracle": "true quality"}
RUN_SIZE = 2000
SEED = 0


def variants(options) -> dict[str, object]:
    """The template's rewriter, and each of its two off-target changes alone."""
    return {
        "style map + edits": options,
        "style map only": dataclasses.replace(options, edit_rate=0.0),
        "edits only": dataclasses.replace(options, style_map={}),
    }


def main(world: Path, n: int = 50_000) -> None:
    print("| template | rewriter | scorer | estimator | ATT bias | ATU bias | ATE bias |")
    print("|---|---|---|---|---|---|---|")
    for name in TEMPLATES:
        template = load_dataset_template(name)
        backend, options = template.parts["rewriter"]
        for label, variant in variants(options).items():
            template.parts["rewriter"] = (backend, variant)
            pool = scored_pool(template, n, SEED, world, list(SCORERS))
            for scorer, scorer_label in SCORERS.items():
                s, perfect = pool.estimator_input(scorer)
                r = compute_effects(s, perfect, 0, 0, 0.95)
                for suffix, short in ESTIMATORS.items():
                    cells = []
                    for estimand in ("ATT", "ATU", "ATE"):
                        key = f"{estimand}_{suffix}"
                        bias = r[key] - r["truth"][estimand]
                        se_run = r[f"{key}_stderr"] * math.sqrt(len(s.w) / RUN_SIZE)
                        in_se = f"{bias / se_run:+.2f} SE" if se_run > 0 else "SE 0"
                        cells.append(f"{bias:+.4f} ({in_se})")
                    print(f"| {name} | {label} | {scorer_label} | {short} | "
                          + " | ".join(cells) + " |", flush=True)  # fmt: skip
        template.parts["rewriter"] = (backend, options)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    main(Path(sys.argv[1]), *(int(a) for a in sys.argv[2:]))
