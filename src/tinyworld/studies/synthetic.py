"""The paper's two semi-synthetic experiments, on the tiny world, where the truth is known.

Both use the template ``tinyrlhf_clean_pa_he``: in the families without shortcuts, W is 'pa'
against 'he', two syllables experts never count as correct, so W has no effect on true quality.

(a) Correlation sweep: a spurious attribute Z (the original's true quality above the pool's
    median, which the reward model rewards) is correlated with W by subsampling over 11 levels,
    P(W=1 | Z=1) = 0.5 + 0.05 i and P(W=1 | Z=0) = 0.5 - 0.05 i, with the same n at every level.
    The naive estimate follows the correlation; RATE should stay at the truth. Estimand: ATE.
(b) Typo sweep: a growing share of the W=1 examples gets "typos" (two positions turned into
    'ga', a syllable the rewriter's style map always corrects to 'ka'). The single rewrite
    compares typo'd originals with corrected rewrites and drifts with the share; RATE compares
    two rewriter outputs and should stay flat. Estimand: ATT (typos are only in W=1 examples).

Each experiment writes, per scorer, a sweep file in the plots module's format, its figure and a
Markdown table under PROJECT_DIR/plots/synthetic/.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import numpy as np

from rate.catalog import load_dataset_template
from rate.effects.estimators import FLAG_SE, METHOD_LABELS, METHODS, beyond_se, estimator
from rate.effects.stage import compute_effects
from rate.io import atomic_write_json, atomic_write_text
from rate.plots.stage import make_plots
from rate.progress import progress
from rate.records import ORIGINAL, PERFECT, PLACEBO, REWRITE, REWRITTEN, TEXTS
from rate.rewrite.backends import build_rewriter
from rate.rewrite.base import RewriteRequest
from rate.seeding import stable_seed
from rate.stats import slope, z_quantile
from tinyworld.studies.common import ScoredPool, score_rows_with, scored_pool

log = logging.getLogger(__name__)

TEMPLATE = "tinyrlhf_clean_pa_he"
SCORERS = ["tinyrlhf_rm", "tinyrlhf_oracle"]
LEVELS = list(range(11))
TYPO, TYPOS_PER_TEXT = "ga", 2
Z = z_quantile(0.95)


def _point(result: dict, key: str, truth_key: str) -> dict:
    est, se = result[key], result[f"{key}_stderr"]
    t, tse = result["truth"][truth_key], result["truth"][f"{truth_key}_stderr"]
    return {
        "estimate": est,
        "low": est - Z * se,
        "high": est + Z * se,
        "truth": t,
        "truth_low": t - Z * tse,
        "truth_high": t + Z * tse,
    }


def _sweep(
    name: str, title: str, x_label: str, levels: list[float], points: list[dict], y_label: str
) -> dict:
    """points[level] = {series: _point(...)} -> the plots module's sweep format."""
    series = {}
    for s in (m for m in METHODS if m in points[0]):  # those the pool has scores for
        series[s] = {f: [p[s][f] for p in points] for f in ("estimate", "low", "high")}
    series["truth"] = {
        "estimate": [p["rate"]["truth"] for p in points],
        "low": [p["rate"]["truth_low"] for p in points],
        "high": [p["rate"]["truth_high"] for p in points],
    }
    x = np.asarray(levels, float)
    return {
        "experiment": name,
        "title": title,
        "x_label": x_label,
        "y_label": y_label,
        "levels": levels,
        "series": series,
        "slopes": {s: slope(x, np.asarray(v["estimate"], float)) for s, v in series.items()},
    }


def _estimates(pool: ScoredPool, scorer: str, estimand: str) -> dict:
    s, perfect = pool.estimator_input(scorer)
    r = compute_effects(s, perfect, 0, 0, 0.95)
    out = {}
    for method in METHODS:
        # The naive contrast estimates the ATE only; every sweep shows it.
        e = estimator(method, estimand) or estimator(method, "ATE")
        if e.name in r:
            out[method] = _point(r, e.name, e.estimand)
    return out


def correlation_sweep(pool: ScoredPool, n: int, seed: int) -> dict[str, dict]:
    """Experiment (a) on a scored pool; -> {scorer: sweep}."""
    quality = pool.scores["tinyrlhf_oracle"][ORIGINAL]
    z = quality > np.median(quality)
    cells = {(w, zz): np.flatnonzero((pool.w == w) & (z == zz)) for w in (0, 1) for zz in (0, 1)}
    rng = np.random.default_rng(seed)
    samples = []
    for i in LEVELS:
        p1 = 0.5 + 0.05 * i  # P(W=1 | Z=1); P(W=1 | Z=0) = 1 - p1
        counts = {
            (1, 1): round(n / 2 * p1),
            (0, 1): n // 2 - round(n / 2 * p1),
            (1, 0): round(n / 2 * (1 - p1)),
            (0, 0): n // 2 - round(n / 2 * (1 - p1)),
        }
        idx = []
        for cell, k in counts.items():
            if k > len(cells[cell]):
                raise ValueError(
                    f"level {i}: need {k} examples with (W, Z) = {cell}, the pool has "
                    f"{len(cells[cell])}; draw a larger pool"
                )
            idx.append(rng.choice(cells[cell], k, replace=False))
        samples.append(np.concatenate(idx))
    out = {}
    for scorer in pool.scores:
        points = [_estimates(pool.subset(idx), scorer, "ATE") for idx in samples]
        out[scorer] = _sweep(
            f"correlation_{scorer}",
            f"(a) W = 'pa' vs 'he' correlated with true quality; scorer {scorer}",
            "correlation level i: P(W=1 | high quality) = 0.5 + 0.05 i",
            [float(i) for i in LEVELS],
            points,
            "ATE (naive: difference of means), raw score units",
        )
    return out


def inject_typos(text: str, key: str, token: str, counterpart: str) -> str:
    """Two positions (never the W syllables) turned into the typo syllable, seeded by key."""
    toks = text.split()
    free = [i for i, t in enumerate(toks) if t not in (token, counterpart)]
    rng = random.Random(stable_seed("typo", key))
    for i in rng.sample(free, min(TYPOS_PER_TEXT, len(free))):
        toks[i] = TYPO
    return " ".join(toks)


def typo_level_rows(
    base: ScoredPool, u: np.ndarray, share: float, rewriter, rule, placebo: bool = False
) -> list[dict]:
    """The rows of one level of the typo sweep: each W=1 example with ``u`` below ``share``
    typo'd, then rewritten, rewritten back and perfectly rewritten (and, with ``placebo``,
    its rewrite rewritten again with W kept)."""
    rows = []
    for j, row in enumerate(base.rows):
        text = row[TEXTS][ORIGINAL]
        if base.w[j] and u[j] < share:
            text = inject_typos(text, row["key"], rule.token, rule.counterpart)
        w = bool(base.w[j])
        first = RewriteRequest(f"{row['key']}/rewrite", text, not w, "")
        r = rewriter.rewrite([first])[0]
        rr = rewriter.rewrite([RewriteRequest(f"{row['key']}/rewritten_rewrite", r, w, "")])[0]
        comps = {
            ORIGINAL: text,
            REWRITE: r,
            REWRITTEN: rr,
            PERFECT: rewriter.counterfactual([first])[0],
        }
        if placebo:
            comps[PLACEBO] = rewriter.rewrite(
                [RewriteRequest(f"{row['key']}/placebo", r, not w, "")]
            )[0]
        rows.append({**row, TEXTS: comps})
    return rows


def typo_sweep(pool: ScoredPool, n: int, seed: int, world: Path) -> dict[str, dict]:
    """Experiment (b): one sample of n, typos in a growing share of its W=1 examples."""
    template = load_dataset_template(TEMPLATE)
    rule = template.part("w_classifier")
    rewriter = build_rewriter(template, seed)
    rng = np.random.default_rng(seed)
    base = pool.subset(rng.choice(len(pool.w), n, replace=False))
    u = rng.random(n)  # nested shares: an example typo'd at share s stays typo'd above it
    points: dict[str, list] = {s: [] for s in pool.scores}
    shares = [i / 10 for i in LEVELS]
    for share in progress(shares, "typo sweep", len(shares)):
        rows = typo_level_rows(
            base, u, share, rewriter, rule, placebo=template.placebo_prompt is not None
        )
        scores = score_rows_with(rows, list(pool.scores), world)
        level_pool = ScoredPool(rows, base.w, scores)
        for scorer in pool.scores:
            points[scorer].append(_estimates(level_pool, scorer, "ATT"))
    return {
        scorer: _sweep(
            f"typos_{scorer}",
            f"(b) typos the rewriter corrects, in a share of W=1 examples; scorer {scorer}",
            "share of W=1 examples with typos",
            shares,
            pts,
            "ATT (naive: the ATE contrast), raw score units",
        )
        for scorer, pts in points.items()
    }


def sweep_table(sweep: dict) -> str:
    """Markdown: every level's estimates with 95% intervals, the fitted slopes, and per level
    the estimators whose error exceeds 2 of their own SEs (the SE read off the interval)."""
    methods = [m for m in METHODS if m in sweep["series"]]
    names = (*methods, "truth")
    lines = [
        f"### {sweep['title']}",
        "",
        f"| {sweep['x_label']} | " + " | ".join(names) + f" | off by > {FLAG_SE:g} SE |",
        "|---" * (len(names) + 2) + "|",
    ]
    truth = sweep["series"]["truth"]["estimate"]
    for i, x in enumerate(sweep["levels"]):
        cells, off = [], []
        for s in names:
            v = sweep["series"][s]
            cells.append(f"{v['estimate'][i]:+.4f} [{v['low'][i]:+.4f}, {v['high'][i]:+.4f}]")
            se = (v["high"][i] - v["low"][i]) / (2 * Z)
            if s != "truth" and se > 0 and beyond_se((v["estimate"][i] - truth[i]) / se):
                off.append(METHOD_LABELS[s][1])
        lines.append(f"| {x:g} | " + " | ".join(cells) + f" | {', '.join(off)} |")
    slopes = " | ".join(f"{sweep['slopes'][s]:+.5f}" for s in names)
    lines.append(f"| slope | {slopes} | |")
    return "\n".join(lines)


def run_synthetic(
    world: Path, out_dir: Path, pool_size: int = 40_000, n: int = 2000, seed: int = 0
) -> list[Path]:
    """Both experiments; writes sweeps, figures and tables to ``out_dir``. -> written files"""
    template = load_dataset_template(TEMPLATE)
    pool = scored_pool(template, pool_size, seed, world, SCORERS)
    sweeps = [
        *correlation_sweep(pool, n, seed).values(),
        *typo_sweep(pool, n, seed, world).values(),
    ]
    written, tables = [], []
    for sweep in sweeps:
        path = out_dir / f"{sweep['experiment']}.json"
        atomic_write_json(path, sweep)
        written.append(path)
        tables.append(sweep_table(sweep))
    table_path = out_dir / "synthetic.md"
    atomic_write_text(table_path, "\n\n".join(tables) + "\n")
    written.append(table_path)
    written += make_plots([], out_dir, sweep_paths=[p for p in written if p.suffix == ".json"])
    return written
