"""rate: estimate the causal effect of a text attribute on a reward model's score.

Stage 1 rewrites texts to flip the attribute (and rewrites the rewrites back), stage 2 scores
every version with a reward model, stage 3 estimates the effect, stage 4 plots it. Importing
rate changes nothing in the process (thread settings are the `rate` command's own).
"""

import importlib

__version__ = "0.1.0"

# The Python API (docs/results.md), loaded on first use so that `import rate` (and
# `rate --help`) loads neither pandas, numpy nor matplotlib: {name: module}.
_EXPORTS = {
    "load_scored": "rate.api.data",
    "scores": "rate.api.data",
    "estimate": "rate.api.data",
    "compute_effects": "rate.api.data",
    "load_effects": "rate.api.data",
    "plot_effects": "rate.api.figures",
    "plot_rewrite_bias": "rate.api.figures",
    "Scores": "rate.effects.estimators",
    "ESTIMATORS": "rate.effects.estimators",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rate' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # the next look-up finds it directly
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
