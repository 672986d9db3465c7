"""The synthetic-sweep figure: each series' estimate against the level, with interval bands.

Synthetic sweep files (``PROJECT_DIR/plots/synthetic/*.json``), drawn by ``sweep_figure``::

    {
      "experiment": "correlation_sweep",        # a short name, for file names and logs
      "title": "Estimates as W and length become correlated",
      "x_label": "correlation of W with length",
      "y_label": "estimated effect",             # optional; default "estimated effect"
      "levels": [0.0, 0.2, 0.4],                 # the x values
      "series": {                                # any of these names, others are drawn too
        "naive":          {"estimate": [...], "low": [...], "high": [...]},
        "single_rewrite": {...},
        "rate":           {...},
        "truth":          {"estimate": [...]}    # low/high optional for every series
      },
      "slopes": {"naive": 0.8, "rate": 0.01}     # optional: fitted slope of estimate on level
    }

Each list has one entry per level; an entry may be null (not estimated at that level).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from rate.errors import DataFileError
from rate.plots.figures import MIN_FONT, PANEL_FONT, STYLE, _agg_figure, _fit
from rate.results.values import num


def _sweep_array(sweep: dict, name: str, field: str, n: int) -> np.ndarray | None:
    values = sweep["series"][name].get(field)
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != n:
        raise DataFileError(
            f"sweep {sweep.get('experiment')!r}: series.{name}.{field} must be a list with one "
            f"entry per level ({n})"
        )
    return np.array([math.nan if num(v) is None else float(v) for v in values])


def sweep_figure(sweep: dict) -> Figure:
    """Estimate vs level for each series of a synthetic sweep (format: the module docstring),
    with shaded interval bands and the fitted slope in the legend."""
    levels, series = sweep.get("levels"), sweep.get("series")
    name = sweep.get("experiment", "?")
    if not isinstance(levels, list) or not levels or not isinstance(series, dict) or not series:
        raise DataFileError(
            f"sweep {name!r}: needs 'levels' (a list of numbers) and 'series' "
            "({name: {estimate, low, high}}); see the format in rate.plots"
        )
    x = np.array([float(v) for v in levels])
    slopes = sweep.get("slopes") or {}
    fig = _agg_figure(6.5, 4.0)
    ax = fig.subplots()
    for s in sorted(series, key=lambda s: list(STYLE).index(s) if s in STYLE else len(STYLE)):
        if not isinstance(series[s], dict):
            raise DataFileError(f"sweep {name!r}: series.{s} must be an object")
        colour, marker, label = STYLE.get(s, (None, "o", s))
        est = _sweep_array(sweep, s, "estimate", len(x))
        if est is None:
            raise DataFileError(f"sweep {name!r}: series.{s} has no 'estimate'")
        low, high = _sweep_array(sweep, s, "low", len(x)), _sweep_array(sweep, s, "high", len(x))
        slope = num(slopes.get(s))
        if slope is not None:
            label = f"{label} (slope {slope:.3g})"
        is_truth = s == "truth"
        (line,) = ax.plot(
            x,
            est,
            color=colour,
            marker=marker or None,
            ls="--" if is_truth else "-",
            label=label,
            gid=f"sweep/{s}",
        )
        if low is not None and high is not None:
            ax.fill_between(
                x, low, high, color=line.get_color(), alpha=0.2, lw=0, gid=f"sweep/{s}/band"
            )
    ax.set_xlabel(str(sweep.get("x_label") or "level"), fontsize=PANEL_FONT)
    ax.set_ylabel(str(sweep.get("y_label") or "estimated effect"), fontsize=PANEL_FONT)
    ax.set_title(str(sweep.get("title") or name), fontsize=PANEL_FONT)
    ax.legend(fontsize=MIN_FONT)
    return _fit(fig)
