"""Stage 4, plots: the figures of effect files, and the canvas, styles and layout every figure
shares (the score-distribution figure is in :mod:`rate.plots.distributions`, the synthetic-sweep
figure in :mod:`rate.plots.sweeps`).

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
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Sequence
from io import BytesIO

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from rate.effects.estimators import ESTIMANDS, estimator
from rate.records import COMPLETIONS as DATA_COMPLETIONS
from rate.records import ORIGINAL, PERFECT, REWRITE, REWRITTEN
from rate.results.values import (
    ALL_SD,
    NO_SCORE_CHANGE,
    interval,
    level_text,
    rate_key,
    rm_name,
    row_label,
    row_labels,
    score_unchanged,
    truth,
    units,
    value,
)

log = logging.getLogger(__name__)

COMPLETIONS = (*DATA_COMPLETIONS, PERFECT)
STYLE = {  # series -> (colour, marker, legend label)
    "naive": ("tab:orange", "s", "naive"),
    "single_rewrite": ("tab:green", "^", "single rewrite"),
    "rate": ("tab:blue", "o", "RATE (rewrite of rewrite)"),
    "rate_placebo": ("tab:purple", "D", "RATE, placebo-corrected"),
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
# Sizes and layout

# Points, at the saved size (figures are saved at their own size, fonts are never scaled).
MIN_FONT = 9.0
TITLE_FONT = 12.0
PANEL_FONT = 10.0
MAX_COLUMNS = 4  # panels per row of the effects figure; more reward models wrap to more rows
PANEL_WIDTH = 3.4  # inches: one panel's plotting area
ROW_HEIGHT = 0.55  # inches per row (concept) of a panel
LABEL_CHARS = 28  # row labels and panel titles wrap at this many characters
_CHAR_WIDTH = 0.075  # inches per character of 10 pt text, to size the margin for row labels
LEGEND_WIDTH = 7.5  # inches a one-row legend may widen a narrow figure to, before it wraps


def _agg_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _wrap(text: str, chars: int = LABEL_CHARS) -> str:
    """Lines of at most ``chars`` characters, broken at spaces only: a model id such as
    ``RLHFlow/ArmoRM-Llama3-8B-v0.1`` stays whole (:func:`_fit` makes room for it)."""
    return textwrap.fill(
        " ".join(text.split()), chars, break_long_words=False, break_on_hyphens=False
    )


def _inside(box: Bbox, frame: Bbox, pad: float = 0.5) -> bool:
    return (
        box.x0 >= frame.x0 - pad
        and box.x1 <= frame.x1 + pad
        and box.y0 >= frame.y0 - pad
        and box.y1 <= frame.y1 + pad
    )


def _titles(fig: Figure) -> list[Text]:
    """The figure's and the panels' titles: the texts that may be re-wrapped to fit."""
    out = [t for t in fig.texts if t.get_text()]  # the suptitle and supylabel among them
    for ax in fig.axes:
        out += [t for t in (ax.title, ax._left_title, ax._right_title) if t.get_text()]
    return out


def _fit(fig: Figure, passes: int = 8) -> Figure:
    """Make everything fit inside the figure: titles that stick out are wrapped narrower, and
    what still sticks out (a legend wider than the panels, a long unbreakable label) widens or
    heightens the figure. Constrained layout places the panels on each draw."""
    for ax in fig.axes:  # the fonts do not depend on rcParams (a notebook's may be smaller)
        ax.tick_params(labelsize=MIN_FONT)
    for _ in range(passes):
        fig.draw_without_rendering()  # lays out and measures; paints nothing
        renderer = fig.canvas.get_renderer()
        frame = fig.bbox
        changed = False
        for t in _titles(fig):
            box = t.get_window_extent(renderer)
            longest = max(len(line) for line in t.get_text().split("\n"))
            if not _inside(box, frame) and longest > 16:
                # As many characters a line as the figure's width holds, and some to spare.
                share = min(0.8, 0.9 * frame.width / max(box.width, 1.0))
                t.set_text(textwrap.fill(" ".join(t.get_text().split()), int(longest * share)))
                changed = True
        if changed:
            continue
        legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        boxes = [a.get_tightbbox(renderer) for a in fig.axes]
        boxes += [leg.get_window_extent(renderer) for leg in legends]
        boxes += [t.get_window_extent(renderer) for t in _titles(fig)]
        union = Bbox.union([b for b in boxes if b is not None])
        if _inside(union, frame):
            return fig
        dpi = fig.dpi
        grow_w = max(0.0, frame.x0 - union.x0) + max(0.0, union.x1 - frame.x1)
        grow_h = max(0.0, frame.y0 - union.y0) + max(0.0, union.y1 - frame.y1)
        w, h = fig.get_size_inches()
        fig.set_size_inches(w + grow_w / dpi + 0.1, h + grow_h / dpi + 0.1)
    log.warning("figure %r: some text may not fit", fig.get_suptitle() or "")
    return fig


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """The figure rendered in one format, at its own size (:func:`_fit` made everything fit,
    so no tight box is needed: it would cost a second layout and change the size)."""
    buf = BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Drawing helpers


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
        fontsize=MIN_FONT,
        color="0.4",
        style="italic",
    )


def _all_sd_note(ax: Axes, effects: dict, keys: Sequence[tuple[str, str]], y: float, row: str):
    """Under a normalised row, at the panel's right edge: its estimates divided by the SD of
    all original scores instead (nothing for a file made before that SD was recorded)."""
    shown = [(label, value(effects, key, "all")) for label, key in keys]
    parts = [f"{label} {v:+.2f}" for label, v in shown if v is not None]
    if parts:
        ax.annotate(
            f"{ALL_SD}: {', '.join(parts)}",
            (1, y - 0.4),
            xycoords=("axes fraction", "data"),
            xytext=(-3, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=MIN_FONT,
            color="0.35",
            gid=f"all_sd@{row}",
        )


def _unchanged_note(ax: Axes, effects: dict, key: str, point: float | None, y: float, gid: str):
    """Beside an estimate that is exactly 0 because no rewrite changed the score: so it says."""
    if point is not None and score_unchanged(effects, key):
        ax.annotate(
            NO_SCORE_CHANGE,
            (point, y),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize=MIN_FONT,
            color="0.35",
            gid=f"unchanged/{gid}",
        )


def _xlabel(ax: Axes, normalized: bool) -> None:
    """The effect axis, named for what it is divided by."""
    ax.set_xlabel(_wrap(f"effect ({units(normalized)})", 46), fontsize=PANEL_FONT)


def _legend(fig: Figure, series: Sequence[str], bootstrap: bool, truth: bool) -> None:
    handles = [
        Line2D([], [], color=STYLE[s][0], marker=STYLE[s][1], ls="-", label=STYLE[s][2])
        for s in series
    ]
    if bootstrap:
        handles.append(Line2D([], [], color="0.5", lw=7, alpha=0.25, label="bootstrap interval"))
    if truth:
        handles.append(Line2D([], [], color="black", ls="--", label=STYLE["truth"][2]))
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=_legend_columns([h.get_label() for h in handles], fig.get_figwidth()),
        fontsize=MIN_FONT,
    )


def _legend_columns(labels: Sequence[str], width: float) -> int:
    """The most legend columns whose estimated width fits in the figure, or in LEGEND_WIDTH
    inches where the figure is narrower (:func:`_fit` then widens it to the legend)."""
    room = max(width, LEGEND_WIDTH) - 0.3
    entries = [0.55 + 0.058 * len(label) for label in labels]  # inches: handle, gap, 9 pt text
    for ncols in range(len(labels), 1, -1):
        columns = [max(entries[i::ncols]) for i in range(ncols)]
        if sum(columns) <= room:
            return ncols
    return 1


# ---------------------------------------------------------------------------------------------
# The figures


def effects_figure(
    effects: list[dict], normalized: bool = True, title: str | None = None
) -> Figure:
    """Naive vs RATE effect with intervals: one row per concept (and dataset), one panel per
    reward model, the true effect marked where the file knows it.

    Panels wrap onto rows of at most MAX_COLUMNS; a panel has a row only for the files it has
    (no empty cells), and every panel is labelled unless all have the same rows. The figure is
    sized from its content, and titles and legend are fitted inside it (:func:`_fit`)."""
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
    panel_rows = {rm: [r for r in rows if (r, rm) in cells] for rm in rms}
    shared = len({tuple(r) for r in panel_rows.values()}) == 1
    ncols = min(len(rms), MAX_COLUMNS)
    grid = [rms[i : i + ncols] for i in range(0, len(rms), ncols)]
    heights = [max(len(panel_rows[rm]) for rm in line) for line in grid]
    label_width = _CHAR_WIDTH * max(len(s) for r in rows for s in _wrap(r).split("\n")) + 0.3
    width = ncols * PANEL_WIDTH + (label_width if shared else ncols * label_width) + 0.3
    height = sum(ROW_HEIGHT * h + 1.15 for h in heights) + 1.3
    fig = _agg_figure(width, height)
    spec = fig.add_gridspec(len(grid), ncols, height_ratios=[h + 1.6 for h in heights])
    naive_key = estimator("naive", "ATE").name
    for i, line in enumerate(grid):
        for j, rm in enumerate(line):
            ax = fig.add_subplot(spec[i, j])
            ax.axvline(0, color="0.85", lw=1, zorder=0)
            ys = {row: -k for k, row in enumerate(panel_rows[rm])}  # first row at the top
            for row, y in ys.items():
                e = cells[(row, rm)]
                naive = _draw_estimate(ax, e, naive_key, y + 0.15, "naive", row, normalized)
                key, estimand = rate_key(e)
                rate = _draw_estimate(ax, e, key, y - 0.15, "rate", row, normalized)
                if rate is not None and estimand != "ATE":
                    ax.annotate(
                        f"RATE {estimand} only",
                        (rate, y - 0.15),
                        xytext=(0, -11),
                        textcoords="offset points",
                        ha="center",
                        fontsize=MIN_FONT,
                        color=STYLE["rate"][0],
                    )
                if naive is None and rate is None:
                    _not_estimable(ax, y, "effect")
                _draw_truth(ax, truth(e, estimand, normalized), y, 0.35, row)
                _unchanged_note(ax, e, key, rate, y - 0.15, f"rate@{row}")
                if normalized:
                    _all_sd_note(ax, e, [("naive", naive_key), ("RATE", key)], y, row)
            ax.set_title(_wrap(rm), fontsize=PANEL_FONT)
            _xlabel(ax, normalized)
            labelled = not shared or j == 0
            ax.set_yticks(list(ys.values()), [_wrap(r) for r in ys] if labelled else [])
            ax.set_ylim(-heights[i] + 0.5, 0.5)
    kind = "Normalised" if normalized else "Raw"
    fig.suptitle(
        title or f"{kind} effect of W on the reward: naive vs RATE, {level_text(effects)}",
        fontsize=TITLE_FONT,
    )
    _legend(
        fig,
        ["naive", "rate"],
        bootstrap=any("bootstrap" in (e.get("intervals") or {}) for e in effects),
        truth=any(e.get("truth") for e in effects),
    )
    return _fit(fig)


def rewrite_bias_figure(effects: dict, normalized: bool = True) -> Figure:
    """ATE, ATT and ATU of one effect file: RATE vs the single rewrite (and the
    placebo-corrected RATE where the file has it), with intervals and the truth where known
    (the gap between the two is the bias the rewrite itself adds)."""
    fig = _agg_figure(6.4, 3.6)
    ax = fig.subplots()
    ax.axvline(0, color="0.85", lw=1, zorder=0)
    placebo = estimator("rate_placebo", "ATE").name in effects
    for i, estimand in enumerate(ESTIMANDS):
        y = -i
        single_key = estimator("single_rewrite", estimand).name
        single = _draw_estimate(
            ax, effects, single_key, y + 0.15, "single_rewrite", estimand, normalized
        )
        rate_name = estimator("rate", estimand).name
        rate = _draw_estimate(ax, effects, rate_name, y - 0.15, "rate", estimand, normalized)
        if placebo:
            name = estimator("rate_placebo", estimand).name
            _draw_estimate(ax, effects, name, y - 0.3, "rate_placebo", estimand, normalized)
        if single is None and rate is None:
            _not_estimable(ax, y, estimand)
        _draw_truth(ax, truth(effects, estimand, normalized), y, 0.35, estimand)
        _unchanged_note(ax, effects, single_key, single, y + 0.15, f"single_rewrite@{estimand}")
        _unchanged_note(ax, effects, rate_name, rate, y - 0.15, f"rate@{estimand}")
        if normalized:
            keys = [("single", single_key), ("RATE", rate_name)]
            _all_sd_note(ax, effects, keys, y, estimand)
    ax.set_yticks([0, -1, -2], list(ESTIMANDS))
    ax.set_ylim(-2.5, 0.5)
    _xlabel(ax, normalized)
    kind = "normalised" if normalized else "raw"
    ax.set_title(
        f"Rewrite bias, {row_label(effects)}, {rm_name(effects)}: {kind}, {level_text([effects])}",
        fontsize=PANEL_FONT,
    )
    _legend(
        fig,
        ["single_rewrite", "rate"] + (["rate_placebo"] if placebo else []),
        bootstrap="bootstrap" in (effects.get("intervals") or {}),
        truth=bool(effects.get("truth")),
    )
    return _fit(fig)
