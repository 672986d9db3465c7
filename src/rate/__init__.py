"""rate: estimate the causal effect of a text attribute on a reward model's score.

Stage 1 rewrites texts to flip the attribute (and rewrites the rewrites back), stage 2 scores
every version with a reward model, stage 3 estimates the effect, stage 4 plots it. A tiny RLHF
world (`rate.tinyrlhf`) lets the whole pipeline run on a CPU in minutes.
"""

import os

# OpenMP threads that spin while they wait make torch several times slower when the cores are
# shared (measured 3.7x at 2 threads on a loaded 2-core machine: BENCHMARKS.md); yielding costs
# little when they are not. Set before torch loads its OpenMP runtime; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
