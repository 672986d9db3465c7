"""A profile's forest plot: one row per attribute, sorted by RATE's effect (largest on top),
RATE with its interval and the naive effect beside it, the attributes that survive
Benjamini-Hochberg marked; laid out by :func:`rate.plots.figures._fit`, so nothing is clipped.

Points carry gids as the stage's figures do: ``rate@<attribute>``, ``rate/normal@<attribute>``,
``naive@<attribute>``, and ``bh@<attribute>`` for a survivor's mark.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from rate.plots.figures import MIN_FONT, ROW_HEIGHT, STYLE, TITLE_FONT, _agg_figure, _fit

OFFSET = 0.18  # the naive point sits this far below its row's RATE point


def forest_figure(rows: list[dict], title: str, level: float, fdr: float) -> Figure:
    """The forest plot of ``rows`` (:func:`rate.profile.report.adjusted`'s order)."""
    fig = _agg_figure(6.5, 1.6 + ROW_HEIGHT * max(len(rows), 1))
    ax = fig.add_subplot()
    n = len(rows)
    labels = []
    for i, r in enumerate(rows):
        y = n - 1 - i  # the first row on top
        name = r["attribute"]
        estimand = r["estimand"] or ""
        labels.append(f"{name} ({estimand})" if estimand and estimand != "ATE" else name)
        colour, marker, _ = STYLE["rate"]
        if r["rate_norm"] is None:
            ax.text(0, y, "  not estimated", va="center", fontsize=MIN_FONT, color="gray")
            continue
        if r["rate_norm_low"] is not None:
            ax.plot(
                [r["rate_norm_low"], r["rate_norm_high"]], [y, y], color=colour, lw=1.6,
                gid=f"rate/normal@{name}",
            )  # fmt: skip
        ax.plot(r["rate_norm"], y, marker=marker, color=colour, ms=7, ls="", gid=f"rate@{name}")
        if r["naive_norm"] is not None:
            colour, marker, _ = STYLE["naive"]
            ax.plot(
                r["naive_norm"], y - OFFSET, marker=marker, color=colour, ms=6, ls="",
                gid=f"naive@{name}",
            )  # fmt: skip
        if r["bh_survives"]:
            ax.annotate(
                "*", (r["rate_norm"], y), xytext=(0, 5), textcoords="offset points",
                ha="center", fontsize=TITLE_FONT, fontweight="bold", gid=f"bh@{name}",
            )  # fmt: skip
    ax.axvline(0, color="gray", lw=0.8, ls="--")
    ax.set_yticks(range(n - 1, -1, -1), labels)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("effect ÷ reward_std (within-group SD of the original scores)")
    handles = [
        ax.plot([], [], marker=STYLE[k][1], color=STYLE[k][0], ls="")[0] for k in ("rate", "naive")
    ]
    labels_legend = [f"RATE, {level:.0%} normal interval", "naive (where both W occur)"]
    handles.append(ax.plot([], [], marker="$*$", color="black", ls="", ms=8)[0])
    labels_legend.append(f"survives Benjamini-Hochberg at {fdr:g}")
    fig.legend(handles, labels_legend, loc="outside lower center", ncols=2, fontsize=MIN_FONT)
    fig.suptitle(title, fontsize=TITLE_FONT)
    notes = {
        "ATU": "(ATU): no original has it, so only adding it is estimated",
        "ATT": "(ATT): every original has it, so only removing it is estimated",
    }
    shown = [notes[e] for e in notes if any(r["estimand"] == e for r in rows)]
    if shown:
        ax.set_title("; ".join(shown), fontsize=MIN_FONT)
    return _fit(fig)
