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
import re
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rate.datafiles import COMPLETIONS as DATA_COMPLETIONS
from rate.datafiles import PERFECT, read_examples, reward_keys
from rate.errors import ConfigError, DataFileError
from rate.io import atomic_write_bytes, atomic_write_text, read_json

log = logging.getLogger(__name__)

FORMATS = ("png", "pdf", "svg")
ESTIMANDS = ("ATE", "ATT", "ATU")
COMPLETIONS = (*DATA_COMPLETIONS, PERFECT)
STYLE = {  # series -> (colour, marker, legend label)
    "naive": ("tab:orange", "s", "naive"),
    "single_rewrite": ("tab:green", "^", "single rewrite"),
    "rate": ("tab:blue", "o", "RATE (rewrite of rewrite)"),
    "truth": ("black", "", "true effect"),
}
COMPLETION_COLOURS = {
    "original": "tab:gray",
    "rewrite": "tab:red",
    "rewritten rewrite": "tab:blue",
    "perfect rewrite": "black",
}
DPI = 150


# ---------------------------------------------------------------------------------------------
# Reading values out of an effect file


def _num(x: Any) -> float | None:
    """A finite number, or None (JSON null, NaN, a missing key, or not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _scale(effects: dict, normalized: bool) -> float | None:
    """What raw values are divided by: the reward's SD when normalised, else 1."""
    if not normalized:
        return 1.0
    std = _num(effects.get("reward_std"))
    return std if std is not None and std > 0 else None


def _value(effects: dict, key: str, normalized: bool) -> float | None:
    """An estimate in the units asked for (normalised values are raw / reward_std, as in the
    file's ``normalized`` section)."""
    raw, scale = _num(effects.get(key)), _scale(effects, normalized)
    return None if raw is None or scale is None else raw / scale


def _level(effects: dict) -> float:
    level = _num((effects.get("intervals") or {}).get("level"))
    return level if level is not None and 0 < level < 1 else 0.95


def _interval(effects: dict, key: str, kind: str, normalized: bool) -> tuple[float, float] | None:
    """The file's ``intervals[kind][key]`` in the units asked for; a normal interval missing
    from the file is rebuilt from the estimate and its SE."""
    scale = _scale(effects, normalized)
    pair = ((effects.get("intervals") or {}).get(kind) or {}).get(key)
    if pair is None and kind == "normal":
        est, se = _num(effects.get(key)), _num(effects.get(f"{key}_stderr"))
        if est is not None and se is not None:
            z = NormalDist().inv_cdf(0.5 + _level(effects) / 2)
            pair = [est - z * se, est + z * se]
    if scale is None or not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return None
    lo, hi = _num(pair[0]), _num(pair[1])
    return None if lo is None or hi is None else (lo / scale, hi / scale)


def _truth(effects: dict, estimand: str, normalized: bool) -> float | None:
    raw, scale = _num((effects.get("truth") or {}).get(estimand)), _scale(effects, normalized)
    return None if raw is None or scale is None else raw / scale


def _rm_name(effects: dict) -> str:
    return str(effects.get("score") or effects.get("reward_key") or "reward model")


def _units(normalized: bool) -> str:
    return "normalised: reward SDs" if normalized else "raw reward units"


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
    value = _value(effects, key, normalized)
    if value is None:
        return None
    colour, marker, _ = STYLE[series]
    boot = _interval(effects, key, "bootstrap", normalized)
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
    normal = _interval(effects, key, "normal", normalized)
    if normal is not None:
        ax.plot(
            normal, [y, y], color=colour, lw=1.5, marker="|", ms=8, gid=f"{series}/normal@{row}"
        )
    ax.plot([value], [y], color=colour, marker=marker, ms=7, ls="", gid=f"{series}@{row}")
    return value


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


def _level_text(effects: Sequence[dict]) -> str:
    levels = {round(_level(e), 6) for e in effects}
    return f"{levels.pop():.0%} intervals" if len(levels) == 1 else "intervals at each file's level"


# ---------------------------------------------------------------------------------------------
# The figures


def _row_labels(effects: list[dict]) -> list[str]:
    """One label per file: its concept, with the dataset where a concept comes from several."""
    datasets: dict[str, set] = {}
    for e in effects:
        datasets.setdefault(str(e.get("concept") or "?"), set()).add(e.get("dataset_name"))
    out = []
    for e in effects:
        concept = str(e.get("concept") or "?")
        several = len(datasets[concept]) > 1
        out.append(f"{concept} ({e.get('dataset_name')})" if several else concept)
    return out


def _rate_key(effects: dict) -> tuple[str, str]:
    """(key, estimand) of the RATE estimate to draw: the ATE, else the ATT or ATU where the
    data identify only that (every example has the same W)."""
    for estimand in ESTIMANDS:
        key = f"{estimand}_rewritten_rewrite"
        if _num(effects.get(key)) is not None:
            return key, estimand
    return "ATE_rewritten_rewrite", "ATE"


def effects_figure(effects: list[dict], normalized: bool = True) -> Figure:
    """Naive vs RATE effect with intervals: one row per concept, one panel per reward model,
    the true effect marked where the file knows it."""
    if not effects:
        raise ValueError("effects_figure: no effect files given")
    labels = _row_labels(effects)
    rms = list(dict.fromkeys(_rm_name(e) for e in effects))
    rows = list(dict.fromkeys(labels))
    cells: dict[tuple[str, str], dict] = {}
    for e, label in zip(effects, labels, strict=True):
        if (label, _rm_name(e)) in cells:
            log.warning("two effect files for %s and %s: drawing the later one", label, _rm_name(e))
        cells[(label, _rm_name(e))] = e
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
            naive = _draw_estimate(ax, e, "naive_effect", y + 0.15, "naive", row, normalized)
            key, estimand = _rate_key(e)
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
            _draw_truth(ax, _truth(e, estimand, normalized), y, 0.35, row)
        ax.set_title(rm, fontsize=10)
        ax.set_xlabel(f"effect ({_units(normalized)})", fontsize=9)
        ax.set_yticks(list(ys.values()), list(ys))
        ax.set_ylim(-len(rows) + 0.5, 0.5)
    kind = "Normalised" if normalized else "Raw"
    fig.suptitle(f"{kind} effect of W on the reward: naive vs RATE, {_level_text(effects)}")
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
        single = _draw_estimate(
            ax,
            effects,
            f"{estimand}_single_rewrite",
            y + 0.15,
            "single_rewrite",
            estimand,
            normalized,
        )
        rate = _draw_estimate(
            ax, effects, f"{estimand}_rewritten_rewrite", y - 0.15, "rate", estimand, normalized
        )
        if single is None and rate is None:
            _not_estimable(ax, y, estimand)
        _draw_truth(ax, _truth(effects, estimand, normalized), y, 0.35, estimand)
    ax.set_yticks([0, -1, -2], list(ESTIMANDS))
    ax.set_ylim(-2.5, 0.5)
    ax.set_xlabel(f"effect ({_units(normalized)})", fontsize=9)
    what = " / ".join(str(effects.get(k)) for k in ("dataset_name", "concept") if effects.get(k))
    kind = "normalised" if normalized else "raw"
    ax.set_title(
        f"Rewrite bias, {what or 'effects'} ({_rm_name(effects)}): {kind}, {_level_text([effects])}",
        fontsize=9,
    )
    _legend(
        fig,
        ["single_rewrite", "rate"],
        bootstrap="bootstrap" in (effects.get("intervals") or {}),
        truth=bool(effects.get("truth")),
    )
    return fig


def _scores(rows: list[dict], reward_key: str, w: bool, completion: str) -> np.ndarray:
    vals = []
    for row in rows:
        if row.get("w_original") is w:
            v = _num((row.get(reward_key) or {}).get(completion))
            if v is not None:
                vals.append(v)
    return np.array(vals, dtype=float)


def score_distribution_figure(rows: list[dict], reward_key: str) -> Figure:
    """Histograms of the scores of the originals, rewrites and rewrites of rewrites (and the
    true counterfactuals, where known), one panel per W value; dotted lines mark the means."""
    present = reward_keys(rows)
    if reward_key not in present:
        raise DataFileError(
            f"no scores under reward_key {reward_key!r}; reward keys present: "
            f"{', '.join(present) or '(none: score the file first)'}"
        )
    data = {(w, c): _scores(rows, reward_key, w, c) for w in (True, False) for c in COMPLETIONS}
    completions = [c for c in COMPLETIONS if any(data[(w, c)].size for w in (True, False))]
    every = np.concatenate([data[(w, c)] for w in (True, False) for c in completions])
    edges = np.histogram_bin_edges(every, bins=int(np.clip(np.sqrt(every.size), 5, 40)))
    fig = _agg_figure(9.0, 3.4)
    axes = fig.subplots(1, 2, sharex=True)
    for ax, w in zip(axes, (True, False), strict=True):
        n = sum(1 for r in rows if r.get("w_original") is w)
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
    return np.array([math.nan if _num(v) is None else float(v) for v in values])


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
        slope = _num(slopes.get(s))
        if slope is not None:
            label = f"{label} (slope {slope:.3g})"
        truth = s == "truth"
        (line,) = ax.plot(
            x,
            est,
            color=colour,
            marker=marker or None,
            ls="--" if truth else "-",
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


# ---------------------------------------------------------------------------------------------
# Tables


def _cell(text: Any, max_chars: int) -> str:
    """One Markdown table cell: whitespace collapsed, shortened with an ellipsis, pipes escaped."""
    s = re.sub(r"\s+", " ", str(text if text is not None else "")).strip()
    if len(s) > max_chars:
        s = s[: max_chars - 1].rstrip() + "…"
    return s.replace("|", r"\|")


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def sample_rewrites_table(rows: list[dict], k: int = 5, seed: int = 0, max_chars: int = 160) -> str:
    """A Markdown table of k examples drawn at random (seeded), in file order: W, the original,
    its rewrite and the rewrite of the rewrite."""
    if not rows:
        return "_no examples_\n"
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(rows), size=min(k, len(rows)), replace=False))
    body = []
    for i in picked:
        row = rows[i]
        texts = row.get("completions") or {}
        w = row.get("w_original")
        body.append(
            [_cell(row.get("index", i), 20), "?" if w is None else str(int(w))]
            + [_cell(texts.get(c), max_chars) for c in COMPLETIONS[:3]]
        )
    return _table(["index", "W", "original", "rewrite", "rewritten rewrite"], body)


def _fmt(x: Any) -> str:
    v = _num(x)
    return "n/a" if v is None else f"{v:.4g}"


def _fmt_interval(pair: tuple[float, float] | None) -> str:
    return "n/a" if pair is None else f"[{pair[0]:.4g}, {pair[1]:.4g}]"


def effects_summary_table(effects: list[dict], names: Sequence[str] | None = None) -> str:
    """A Markdown table with one line per effect file: counts, naive, single-rewrite and RATE
    ATE (raw units, RATE's normal interval and its normalised value) and the true ATE."""
    header = ["dataset", "concept", "RM", "n (W=1 / W=0)", "naive", "single rewrite ATE"]
    header += ["RATE ATE", "RATE ATE interval", "RATE ATE (SDs)", "true ATE", "reward SD"]
    if names is not None:
        header.insert(0, "file")
    body = []
    for i, e in enumerate(effects):
        line = [str(e.get("dataset_name") or "?"), str(e.get("concept") or "?"), _rm_name(e)]
        line += [
            f"{e.get('Y1_count', '?')} / {e.get('Y0_count', '?')}",
            _fmt(e.get("naive_effect")),
        ]
        line += [_fmt(e.get("ATE_single_rewrite")), _fmt(e.get("ATE_rewritten_rewrite"))]
        line += [_fmt_interval(_interval(e, "ATE_rewritten_rewrite", "normal", False))]
        line += [_fmt(_value(e, "ATE_rewritten_rewrite", True))]
        line += [_fmt((e.get("truth") or {}).get("ATE")), _fmt(e.get("reward_std"))]
        if names is not None:
            line.insert(0, _cell(names[i], 200))
        body.append(line)
    return _table(header, body)


# ---------------------------------------------------------------------------------------------
# Writing


def _save(fig: Figure, out_dir: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    """Render `fig` once per format and write each file atomically."""
    written = []
    for fmt in formats:
        buf = BytesIO()
        fig.savefig(buf, format=fmt, dpi=DPI)
        path = out_dir / f"{stem}.{fmt}"
        atomic_write_bytes(path, buf.getvalue())
        log.info("wrote %s", path)
        written.append(path)
    fig.clear()  # frees the artists now; the figure was never registered with pyplot
    return written


def _read_effects(path: Path) -> dict:
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataFileError(
            f"{path}: expected an effect file (a JSON object from treatment_effects)"
        )
    return data


def _with_file(path: Path, err: DataFileError) -> DataFileError:
    msg = str(err)
    return err if msg.startswith(str(path)) else DataFileError(f"{path}: {msg}")


def _reward_key(rows: list[dict], given: str | None, effects: list[dict], path: Path) -> str:
    """The reward key to draw: the one given, else the effect files' (if the scored file has
    it), else the scored file's only one."""
    if given:
        return given
    present = reward_keys(rows)
    for e in effects:
        if e.get("reward_key") in present:
            return e["reward_key"]
    if len(present) == 1:
        return present[0]
    raise DataFileError(
        f"{path}: reward keys {present or '(none)'}; say which to draw (plots: reward_key)"
    )


def make_plots(
    effects_paths: Sequence[Path],
    out_dir: Path,
    formats: Sequence[str] = ("png",),
    scored_path: Path | None = None,
    reward_key: str | None = None,
    sweep_paths: Sequence[Path] = (),
) -> list[Path]:
    """Write every figure (and the tables) into out_dir; -> the written paths.

    Files: effects_normalized and effects_raw (all effect files), rewrite_bias_<effect file
    stem> (one per file), effects_summary.md; with a scored file, score_distributions and
    sample_rewrites.md; sweep_<sweep file stem> per sweep.
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ConfigError(f"figure formats {list(formats)}: use some of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in effects_paths]
    effects = [_read_effects(p) for p in paths]
    written: list[Path] = []
    if effects:
        written += _save(
            effects_figure(effects, normalized=True), out_dir, "effects_normalized", formats
        )
        written += _save(effects_figure(effects, normalized=False), out_dir, "effects_raw", formats)
        stems: set[str] = set()
        for p, e in zip(paths, effects, strict=True):
            stem = f"rewrite_bias_{p.stem}"
            while stem in stems:  # the same name from two folders
                stem += "_"
            stems.add(stem)
            written += _save(rewrite_bias_figure(e), out_dir, stem, formats)
        table = effects_summary_table(effects, names=[p.name for p in paths])
        atomic_write_text(out_dir / "effects_summary.md", table)
        written.append(out_dir / "effects_summary.md")
    if scored_path is not None:
        scored_path = Path(scored_path)
        rows = read_examples(scored_path)
        key = _reward_key(rows, reward_key, effects, scored_path)
        try:
            fig = score_distribution_figure(rows, key)
        except DataFileError as err:
            raise _with_file(scored_path, err) from None
        written += _save(fig, out_dir, "score_distributions", formats)
        table = f"Sample rewrites from `{scored_path.name}`\n\n" + sample_rewrites_table(rows)
        atomic_write_text(out_dir / "sample_rewrites.md", table)
        written.append(out_dir / "sample_rewrites.md")
    for p in map(Path, sweep_paths):
        sweep = read_json(p)
        if not isinstance(sweep, dict):
            raise DataFileError(f"{p}: expected a sweep object; see the format in rate.plots")
        try:
            fig = sweep_figure(sweep)
        except DataFileError as err:
            raise _with_file(p, err) from None
        written += _save(fig, out_dir, f"sweep_{p.stem}", formats)
    log.info("make_plots: %d files in %s", len(written), out_dir)
    return written


__all__ = [
    "effects_figure",
    "effects_summary_table",
    "make_plots",
    "rewrite_bias_figure",
    "sample_rewrites_table",
    "score_distribution_figure",
    "sweep_figure",
]
