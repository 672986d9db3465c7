"""The sweep's choice under stricter screens, read off sweeps already run and checked.

The sweep chooses the highest corrected reward among the checkpoints its screen passes
(ESS >= 10 and n * exp(-KL) >= 15 in every family). Near the floors the screen passes and
fails by turns along one run, so the choice leans toward checkpoints whose gold weights
happened to look light. Two stricter screens, applied to the same checkpoints:

- **prefix**: a run's checkpoints pass only up to its first failure;
- **margin**: a checkpoint passes only if it passes and its smallest family ESS is >= 1.2 x
  the floor (12).

Each is read off `rate world study sweep-truth`'s JSON (the screen's decision, the corrected reward
and the true quality of every checkpoint) and the sweep's markdown (its min ESS column). The
runs stay those the sweep trained: a stricter screen would also have moved the refinement
runs, which this does not redo.

    python experiments/release/screen_rules.py TRUTH.json SWEEP.md [TRUTH.json SWEEP.md ...]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

ESS_FLOOR = 10.0
MARGIN = 1.2


def min_ess_of(sweep_md: Path) -> dict[tuple[float, int], float]:
    """Per (kl_coef, step), the smallest family ESS in the sweep's markdown table."""
    out = {}
    for line in sweep_md.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[1].isdigit():
            continue
        out[(float(cells[0]), int(cells[1]))] = float(cells[4])
    return out


def choices(truth: dict, min_ess: dict[tuple[float, int], float]) -> dict[str, dict]:
    """The checkpoint each screen chooses: the highest corrected reward among those it passes."""
    candidates = truth["candidates"]
    passes = {(c["kl_coef"], c["step"]) for c in candidates if c["decision"] == "certifiable"}
    runs: dict[float, list[int]] = defaultdict(list)
    for c in candidates:
        runs[c["kl_coef"]].append(c["step"])
    prefix = set()
    for kl, run_steps in runs.items():
        for step in sorted(run_steps):
            if (kl, step) not in passes:
                break
            prefix.add((kl, step))
    margin = {k for k in passes if min_ess.get(k, 0.0) >= MARGIN * ESS_FLOOR}
    screens = {"as shipped": passes, "prefix": prefix, "margin": margin}
    out = {}
    for name, kept in screens.items():
        pool = [c for c in candidates if (c["kl_coef"], c["step"]) in kept]
        out[name] = max(pool, key=lambda c: c["corrected_reward"]) if pool else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", help="TRUTH.json SWEEP.md, repeated")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give the files in pairs: TRUTH.json SWEEP.md")
    print("| sweep | grid's best (true) | screen | chosen | true | below the best |")
    print("|---|---|---|---|---|---|")
    for truth_file, md_file in zip(args.pairs[::2], args.pairs[1::2], strict=True):
        try:
            truth = json.loads(Path(truth_file).read_text())
            best = max(c["true_quality"] for c in truth["candidates"])
            found = choices(truth, min_ess_of(Path(md_file)))
        except OSError as err:
            parser.error(f"{err.filename}: cannot read ({err.strerror})")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            parser.error(
                f"{truth_file}, {md_file}: not a `rate world study sweep-truth` JSON and its sweep's "
                f"markdown ({type(err).__name__}: {err})"
            )
        for name, c in found.items():
            if c is None:
                print(f"| {Path(truth_file).stem} | {best:.3f} | {name} | none | | |")
                continue
            print(
                f"| {Path(truth_file).stem} | {best:.3f} | {name} | kl {c['kl_coef']}, "
                f"step {c['step']} | {c['true_quality']:.3f} | {best - c['true_quality']:.4f} |"
            )


if __name__ == "__main__":
    main()
