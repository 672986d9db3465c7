"""The score-distribution figure: histograms of each completion's scores, by W."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from rate.errors import DataFileError
from rate.plots.figures import (
    COMPLETION_COLOURS,
    COMPLETIONS,
    MIN_FONT,
    PANEL_FONT,
    TITLE_FONT,
    _agg_figure,
    _fit,
    _wrap,
)
from rate.records import W, reward_keys, scores_of


def score_distribution_figure(rows: list[dict], reward_key: str) -> Figure:
    """Histograms of the scores of the originals, rewrites and rewrites of rewrites (and the
    true counterfactuals, where known): one small panel per completion (rows) and W value
    (columns), on one score axis, so that no histogram hides another; a dotted line marks
    each mean. Axes carry the gid ``"W=<w>/<completion>"``."""
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
    fig = _agg_figure(9.0, 1.2 * len(completions) + 1.3)
    axes = fig.subplots(len(completions), 2, sharex=True, squeeze=False)
    for j, w in enumerate((True, False)):
        n = sum(1 for r in rows if r.get(W) is w)
        axes[0, j].set_title(f"W = {int(w)} (n = {n})", fontsize=PANEL_FONT)
        axes[-1, j].set_xlabel(f"score ({reward_key})", fontsize=PANEL_FONT)
        for i, c in enumerate(completions):
            ax, vals, colour = axes[i, j], data[(w, c)], COMPLETION_COLOURS[c]
            ax.set_gid(f"W={int(w)}/{c}")
            if j == 0:
                ax.set_ylabel(_wrap(c, 12), fontsize=PANEL_FONT)
            if not vals.size:
                ax.text(0.5, 0.5, f"no {c} scores with W = {int(w)}", transform=ax.transAxes,
                        ha="center", va="center", fontsize=MIN_FONT, color="0.4")  # fmt: skip
                continue
            counts, _ = np.histogram(vals, bins=edges)
            ax.stairs(counts, edges, fill=True, facecolor=to_rgba(colour, 0.3),
                      edgecolor=colour, lw=1.2, gid=c)  # fmt: skip
            ax.axvline(vals.mean(), color=colour, ls=":", lw=1.5, gid=f"mean/{c}")
            ax.text(0.99, 0.92, f"mean {vals.mean():.3g}", transform=ax.transAxes, ha="right",
                    va="top", fontsize=MIN_FONT, color=colour)  # fmt: skip
            ax.set_ylim(0, max(1, counts.max()) * 1.3)  # room for the mean's label
    fig.supylabel("examples", fontsize=PANEL_FONT)
    fig.suptitle(
        "Scores of originals vs rewrites and rewrites of rewrites, by W", fontsize=TITLE_FONT
    )
    return _fit(fig)
