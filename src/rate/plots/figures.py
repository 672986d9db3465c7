"""Stage 4, plots: figures and tables from effect files, scored files and synthetic sweeps.

Every figure function returns a matplotlib ``Figure`` drawn on the Agg canvas. Figures are built
with the object-oriented API, never through pyplot, so no figure is registered globally, nothing
is shown, a script needs no display, and a notebook's inline backend is left as it was (a
notebook shows a returned figure with ``display(fig)``). ``make_plots`` writes every figure
atomically and drops its reference; there is no pyplot window to close.

Missing values are JSON null in the effect files (an estimand that the data cannot identify,
e.g. the ATE when every example has W=1). Figures skip them, and the RATE point falls back to
the ATT or ATU where the ATE is null (marked on the plot).

Every plotted artist carries a ``gid`` so that tests and notebooks can find it:
``"<series>@<row>"`` for a point, ``"<series>/normal@<row>"`` and ``"<series>/bootstrap@<row>"``
for its intervals, ``"truth@<row>"`` for the true effect.

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

import logging
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rate.effects.estimators import ESTIMANDS, estimator
from rate.errors import DataFileError
from rate.plots.values import (
    interval,
    level_text,
    num,
    rate_key,
    rm_name,
    row_labels,
    truth,
    units,
    value,
)
from rate.records import COMPLETIONS as DATA_COMPLETIONS
from rate.records import ORIGINAL, PERFECT, REWRITE, REWRITTEN, W, reward_keys, scores_of

log = logging.getLogger(__name__)

COMPLETIONS = (*DATA_COMPLETIONS, PERFECT)
STYLE = {  # series -> (colour, marker, legend label)
    "naive": ("tab:orange", "s", "naive"),
    "single_rewrite": ("tab:green", "^", "single rewrite"),
    "rate": ("tab:blue", "o", "RATE (rewrite of rewrite)"),
    "truth": ("black", "", "true effect"),
}
COMPLETION_COLOURS = {
    ORIGINAL: "tab:gray",
    REWRITE: "tab:red",
    REWRITTEN: "tab:blue",
    PERFECT: "black",
}
DPI = 150

# ---------------------------------------------------------------------------------------------
# Drawing helpers


def _agg_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _draw_estimate(
    ax: Axes,
    effects: dict,
    key: str,
    y: float,
    series: str,
    row: str,
    normalized: bool,
) -> float | None:
    """One estimate at height y with its normal interval (and bootstrap interval, if any);
    -> the plotted value, or None if the file has none."""
    point = value(effects, key, normalized)
    if point is None:
        return None
    colour, marker, _ = STYLE[series]
    boot = interval(effects, key, "bootstrap", normalized)
    if boot is not None:
        ax.plot(
            boot,
            [y, y],
            color=colour,
            lw=7,
            alpha=0.25,
            solid_capstyle="butt",
            gid=f"{series}/bootstrap@{row}",
        )
    normal = interval(effects, key, "normal", normalized)
    if normal is not None:
        ax.plot(
            normal, [y, y], color=colour, lw=1.5, marker="|", ms=8, gid=f"{series}/normal@{row}"
        )
    ax.plot([point], [y], color=colour, marker=marker, ms=7, ls="", gid=f"{series}@{row}")
    return point


def _draw_truth(ax: Axes, value: float | None, y: float, half: float, row: str) -> None:
    if value is not None:
        ax.plot(
            [value, value], [y - half, y + half], color="black", ls="--", lw=1.5, gid=f"truth@{row}"
        )


def _not_estimable(ax: Axes, y: float, what: str) -> None:
    ax.text(
        0.5,
        y,
        f"{what}: not estimable",
        transform=ax.get_yaxis_transform(),
        ha="center",
        va="center",
        fontsize=8,
        color="0.4",
        style="italic",
    )


def _legend(fig: Figure, series: Sequence[str], bootstrap: bool, truth: bool) -> None:
    handles = [
        Line2D([], [], color=STYLE[s][0], marker=STYLE[s][1], ls="-", label=STYLE[s][2])
        for s in series
    ]
    if bootstrap:
        handles.append(Line2D([], [], color="0.5", lw=7, alpha=0.25, label="bootstrap interval"))
    if truth:
        handles.append(Line2D([], [], color="black", ls="--", label=STYLE["truth"][2]))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)


# ---------------------------------------------------------------------------------------------
# The figures


def effects_figure(effects: list[dict], normalized: bool = True) -> Figure:
    """Naive vs RATE effect with intervals: one row per concept, one panel per reward model,
    the true effect marked where the file knows it."""
    if not effects:
        raise ValueError("effects_figure: no effect files given")
    labels = row_labels(effects)
    rms = list(dict.fromkeys(rm_name(e) for e in effects))
    rows = list(dict.fromkeys(labels))
    cells: dict[tuple[str, str], dict] = {}
    for e, label in zip(effects, labels, strict=True):
        if (label, rm_name(e)) in cells:
            log.warning("two effect files for %s and %s: drawing the later one", label, rm_name(e))
        cells[(label, rm_name(e))] = e
    fig = _agg_figure(3.6 * len(rms) + 1.2, 0.75 * len(rows) + 1.8)
    axes = fig.subplots(1, len(rms), sharey=True, squeeze=False)[0]
    ys = {row: -i for i, row in enumerate(rows)}  # first row at the top
    for ax, rm in zip(axes, rms, strict=True):
        ax.axvline(0, color="0.85", lw=1, zorder=0)
        for row in rows:
            e = cells.get((row, rm))
            if e is None:
                continue
            y = ys[row]
            naive_key = estimator("naive", "ATE").name
            naive = _draw_estimate(ax, e, naive_key, y + 0.15, "naive", row, normalized)
            key, estimand = rate_key(e)
            rate = _draw_estimate(ax, e, key, y - 0.15, "rate", row, normalized)
            if rate is not None and estimand != "ATE":
                ax.annotate(
                    f"RATE {estimand} only",
                    (rate, y - 0.15),
                    xytext=(0, -10),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                    color=STYLE["rate"][0],
                )
            if naive is None and rate is None:
                _not_estimable(ax, y, "effect")
            _draw_truth(ax, truth(e, estimand, normalized), y, 0.35, row)
        ax.set_title(rm, fontsize=10)
        ax.set_xlabel(f"effect ({units(normalized)})", fontsize=9)
        ax.set_yticks(list(ys.values()), list(ys))
        ax.set_ylim(-len(rows) + 0.5, 0.5)
    kind = "Normalised" if normalized else "Raw"
    fig.suptitle(f"{kind} effect of W on the reward: naive vs RATE, {level_text(effects)}")
    _legend(
        fig,
        ["naive", "rate"],
        bootstrap=any("bootstrap" in (e.get("intervals") or {}) for e in effects),
        truth=any(e.get("truth") for e in effects),
    )
    return fig


def rewrite_bias_figure(effects: dict, normalized: bool = True) -> Figure:
    """ATE, ATT and ATU of one effect file: RATE vs the single rewrite, with intervals and the
    truth where known (the gap between the two is the bias the rewrite itself adds)."""
    fig = _agg_figure(6.0, 3.4)
    ax = fig.subplots()
    ax.axvline(0, color="0.85", lw=1, zorder=0)
    for i, estimand in enumerate(ESTIMANDS):
        y = -i
        single_key = estimator("single_rewrite", estimand).name
        single = _draw_estimate(
            ax, effects, single_key, y + 0.15, "single_rewrite", estimand, normalized
        )
        rate_name = estimator("rate", estimand).name
        rate = _draw_estimate(ax, effects, rate_name, y - 0.15, "rate", estimand, normalized)
        if single is None and rate is None:
            _not_estimable(ax, y, estimand)
        _draw_truth(ax, truth(effects, estimand, normalized), y, 0.35, estimand)
    ax.set_yticks([0, -1, -2], list(ESTIMANDS))
    ax.set_ylim(-2.5, 0.5)
    ax.set_xlabel(f"effect ({units(normalized)})", fontsize=9)
    what = " / ".join(str(effects.get(k)) for k in ("dataset_name", "concept") if effects.get(k))
    kind = "normalised" if normalized else "raw"
    ax.set_title(
        f"Rewrite bias, {what or 'effects'} ({rm_name(effects)}): {kind}, {level_text([effects])}",
        fontsize=9,
    )
    _legend(
        fig,
        ["single_rewrite", "rate"],
        bootstrap="bootstrap" in (effects.get("intervals") or {}),
        truth=bool(effects.get("truth")),
    )
    return fig


def score_distribution_figure(rows: list[dict], reward_key: str) -> Figure:
    """Histograms of the scores of the originals, rewrites and rewrites of rewrites (and the
    true counterfactuals, where known), one panel per W value; dotted lines mark the means."""
    present = reward_keys(rows)
    if reward_key not in present:
        raise DataFileError(
            f"no scores under reward_key {reward_key!r}; reward keys present: "
            f"{', '.join(present) or '(none: score the file first)'}"
        )
    data = {(w, c): scores_of(rows, reward_key, w, c) for w in (True, False) for c in COMPLETIONS}
    completions = [c for c in COMPLETIONS if any(data[(w, c)].size for w in (True, False))]
    every = np.concatenate([data[(w, c)] for w in (True, False) for c in completions])
    edges = np.histogram_bin_edges(every, bins=int(np.clip(np.sqrt(every.size), 5, 40)))
    fig = _agg_figure(9.0, 3.4)
    axes = fig.subplots(1, 2, sharex=True)
    for ax, w in zip(axes, (True, False), strict=True):
        n = sum(1 for r in rows if r.get(W) is w)
        ax.set_title(f"W = {int(w)} (n = {n})", fontsize=10)
        ax.set_xlabel(f"score ({reward_key})", fontsize=9)
        drawn = False
        for c in completions:
            vals = data[(w, c)]
            if not vals.size:
                continue
            colour = COMPLETION_COLOURS[c]
            counts, _ = np.histogram(vals, bins=edges)
            ax.stairs(
                counts, edges, color=colour, lw=1.5, label=f"{c} (mean {vals.mean():.3g})", gid=c
            )
            ax.axvline(vals.mean(), color=colour, ls=":", lw=1, gid=f"mean/{c}")
            drawn = True
        if drawn:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, f"no examples with W = {int(w)}", transform=ax.transAxes, ha="center")
    axes[0].set_ylabel("examples")
    fig.suptitle("Scores of originals vs rewrites and rewrites of rewrites, by W")
    return fig


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
    ax.set_xlabel(str(sweep.get("x_label") or "level"))
    ax.set_ylabel(str(sweep.get("y_label") or "estimated effect"))
    ax.set_title(str(sweep.get("title") or name), fontsize=10)
    ax.legend(fontsize=8)
    return fig
