"""rate: estimate the causal effect of a text attribute on a reward model's score.

Stage 1 rewrites texts to flip the attribute (and rewrites the rewrites back), stage 2 scores
every version with a reward model, stage 3 estimates the effect, stage 4 plots it. A tiny RLHF
world (`rate.tinyrlhf`) lets the whole pipeline run on a CPU in minutes.
"""

__version__ = "0.1.0"
