"""The figures of the plots stage, from effect files or their contents, as matplotlib
Figures (built on the Agg canvas, never through pyplot: save them with ``fig.savefig``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from matplotlib.figure import Figure

from rate.errors import ConfigError
from rate.plots.figures import effects_figure, rewrite_bias_figure
from rate.results.table import read_effects


def _effects(given: dict | str | Path) -> dict:
    return given if isinstance(given, dict) else read_effects(Path(given))


def plot_effects(effects: Iterable[dict | str | Path], normalized: bool = True) -> Figure:
    """Naive against RATE for each effect file (paths, or their contents as dicts),
    normalised (``normalized``: divided by ``reward_std``, the pooled within-group SD of the
    original scores, with each row's estimates divided by the SD of all original scores noted
    beside) or in raw units, with intervals and the truth where known."""
    loaded = [_effects(e) for e in effects]
    if not loaded:
        raise ConfigError("plot_effects: no effect files given; pass paths or their dicts")
    return effects_figure(loaded, normalized=normalized)


def plot_rewrite_bias(effects: dict | str | Path) -> Figure:
    """Single rewrite against RATE for ATE, ATT and ATU of one effect file."""
    return rewrite_bias_figure(_effects(effects))
