"""The paper's semi-synthetic length experiment, on real text and offline.

The drug reviews shipped on PyPI (both splits; neutral ratings left out), W = the review is
longer than the median review (in words; the template ``drugreview_length``), rewritten to the
other length and back by the offline English rules, every completion scored by the MiniLM
sentiment scorer (``minilm_sentiment``), the "reward model" here. Length and sentiment are
correlated by subsampling over 11 levels, as in the paper: at level i,
P(long | positive) = 0.5 + 0.05 i and P(long | negative) = 0.5 - 0.05 i, with half the sample
positive and the same n at every level. A sentiment scorer rewards sentiment, not length, so
the naive estimate of the length effect grows with the correlation while RATE, which compares
a rewrite with a rewrite of the same review, should stay flat.

The pool is small (889 reviews with a positive or negative rating), so n is at most twice the
smallest cell the last level needs (short negative reviews; by default the largest multiple of
40 below that, so that every level's proportions are met exactly); ``repeats`` draws per level are
averaged (one draw per level is the paper's design; the first draw is kept as well).

Writes ``semisynthetic_text.json`` (the construction realised at every level, every estimate,
the slopes; the sweep in the plots module's format under ``sweep``), ``semisynthetic_text.md``
and the figure under the output folder.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from rate.catalog import load_dataset_template, load_scoring_template
from rate.effects.estimators import Scores, estimator
from rate.effects.stage import compute_effects
from rate.fs import ensure_dir
from rate.io import atomic_write_json, atomic_write_text
from rate.packaged import DRUG_SPLITS, drug_reviews
from rate.plots.stage import make_plots
from rate.records import ORIGINAL, PROMPT, REWRITE, REWRITTEN, TEXTS, W
from rate.rewrite.stage import build_dataset
from rate.score.backends import build_scorer
from rate.stats import slope, z_quantile

log = logging.getLogger(__name__)

TEMPLATE = "drugreview_length"
SCORER = "minilm_sentiment"
LEVELS = list(range(11))
METHODS = ("naive", "single_rewrite", "rate")
Z95 = z_quantile(0.95)
# The paper's figure (Reber et al. 2025, semi-synthetic length experiment): naive from -0.08 to
# 1.90 over the 11 levels, RATE within 0.03-0.08.
PAPER = {"naive": (-0.08, 1.90), "rate": (0.03, 0.08)}


def p_long(level: int) -> tuple[float, float]:
    """(P(long | positive), P(long | negative)) at a level."""
    return 0.5 + 0.05 * level, 0.5 - 0.05 * level


def cell_counts(level: int, n: int) -> dict[tuple[int, int], int]:
    """{(W long, Z positive): examples} at a level: n/2 positive, n/2 negative."""
    half = n // 2
    p_pos, p_neg = p_long(level)
    long_pos, long_neg = round(half * p_pos), round(half * p_neg)
    return {(1, 1): long_pos, (0, 1): half - long_pos, (1, 0): long_neg, (0, 0): half - long_neg}


def max_n(w: np.ndarray, z: np.ndarray) -> int:
    """The largest even n every level can draw without replacement."""
    best = 0
    for n in range(2, len(w) + 1, 2):
        ok = all(
            k <= int(((w == a) & (z == b)).sum())
            for i in LEVELS
            for (a, b), k in cell_counts(i, n).items()
        )
        if not ok:
            break
        best = n
    return best


def draw_levels(w: np.ndarray, z: np.ndarray, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One subsample (indices) per level, with the level's cell counts, without replacement."""
    cells = {(a, b): np.flatnonzero((w == a) & (z == b)) for a in (0, 1) for b in (0, 1)}
    out = []
    for i in LEVELS:
        idx = []
        for cell, k in cell_counts(i, n).items():
            if k > len(cells[cell]):
                raise ValueError(
                    f"level {i}: needs {k} examples with (long, positive) = {cell}, the pool "
                    f"has {len(cells[cell])}; use n <= {max_n(w, z)}"
                )
            idx.append(rng.choice(cells[cell], k, replace=False))
        out.append(np.sort(np.concatenate(idx)))
    return out


def realised(w: np.ndarray, z: np.ndarray, idx: np.ndarray) -> dict:
    """What a subsample realises: P(long | positive), P(long | negative), corr(W, Z), n."""
    ws, zs = w[idx].astype(float), z[idx].astype(bool)
    corr = float(np.corrcoef(ws, zs.astype(float))[0, 1]) if ws.std() and zs.std() else 0.0
    return {
        "n": int(len(idx)),
        "n_positive": int(zs.sum()),
        "n_long": int(ws.sum()),
        "p_long_given_positive": float(ws[zs].mean()),
        "p_long_given_negative": float(ws[~zs].mean()),
        "corr_w_z": corr,
    }


def polar_reviews(pool_n: int | None, seed: int) -> tuple[list[dict], np.ndarray, np.ndarray, dict]:
    """The drug reviews rewritten for length: (rows, W, Z, the dataset summary). Z = the rating
    is positive; neutral reviews are dropped."""
    template = load_dataset_template(TEMPLATE)
    if pool_n is None:
        pool_n = sum(len(drug_reviews(s)) for s in DRUG_SPLITS)
    rows, summary = build_dataset(template, pool_n, seed, batch_size=512)
    rows = [r for r in rows if r["metadata"]["rating"] in ("positive", "negative")]
    w = np.array([bool(r[W]) for r in rows])
    z = np.array([r["metadata"]["rating"] == "positive" for r in rows])
    return rows, w, z, summary


def score_completions(rows: list[dict], scorer_name: str = SCORER) -> dict[str, np.ndarray]:
    """Every completion of ``rows`` scored by the scoring template ``scorer_name``."""
    scorer = build_scorer(load_scoring_template(scorer_name))
    prompts = [r[PROMPT] for r in rows]
    scores = {}
    for comp in (ORIGINAL, REWRITE, REWRITTEN):
        t0 = time.perf_counter()
        scores[comp] = np.asarray(scorer.score(prompts, [r[TEXTS][comp] for r in rows]), float)
        log.info("scored %d %s texts in %.0f s", len(rows), comp, time.perf_counter() - t0)
    return scores


def level_estimates(w: np.ndarray, scores: dict[str, np.ndarray], idx: np.ndarray) -> dict:
    """Naive, single-rewrite and RATE ATE (with SEs) on one subsample."""
    s = Scores(w[idx], scores[ORIGINAL][idx], scores[REWRITE][idx], scores[REWRITTEN][idx])
    r = compute_effects(s, None, 0, 0, 0.95)
    out = {}
    for m in METHODS:
        name = estimator(m, "ATE").name
        out[m] = {"estimate": float(r[name]), "stderr": float(r[f"{name}_stderr"])}
    out["reward_std"] = float(r["reward_std"])
    return out


def run_semisynthetic_text(
    out_dir: Path,
    n: int | None = None,
    repeats: int = 1,
    seed: int = 0,
    pool_n: int | None = None,
    scorer_name: str = SCORER,
) -> dict:
    """The experiment; writes its JSON, table and figure under ``out_dir``; -> the result."""
    t0 = time.perf_counter()
    rows, w, z, summary = polar_reviews(pool_n, seed)
    largest = max_n(w, z)
    # The largest multiple of 40 the pool allows: n/2 * 0.05 i is then whole at every level,
    # so every level realises its target proportions exactly.
    n = n or (largest // 40) * 40 or largest
    if n > largest:
        raise ValueError(
            f"n = {n}: the pool of {len(rows)} reviews allows at most {largest} per level (the "
            "last level needs n/2 short negative and n/2 long positive reviews)"
        )
    scores = score_completions(rows, scorer_name)
    t_pool = time.perf_counter() - t0
    pool_sd = float(scores[ORIGINAL].std(ddof=1))
    rng = np.random.default_rng(seed)
    draws = [draw_levels(w, z, n, rng) for _ in range(repeats)]
    levels = []
    for i in LEVELS:
        per_draw = [level_estimates(w, scores, d[i]) for d in draws]
        constr = [realised(w, z, d[i]) for d in draws]
        entry: dict = {
            "level": i,
            "target": dict(
                zip(("p_long_given_positive", "p_long_given_negative"), p_long(i), strict=True)
            ),
            "realised": constr[0],
            "realised_all_draws_equal": all(c == constr[0] for c in constr),
        }
        for m in METHODS:
            est = np.array([p[m]["estimate"] for p in per_draw])
            se = np.array([p[m]["stderr"] for p in per_draw])
            entry[m] = {
                "first_draw": float(est[0]),
                "first_draw_stderr": float(se[0]),
                "mean": float(est.mean()),
                "sd_over_draws": float(est.std(ddof=1)) if repeats > 1 else None,
            }
        levels.append(entry)
    x = np.array(LEVELS, float)

    def series(m: str, field: str, scale: float = 1.0) -> np.ndarray:
        return np.array([lv[m][field] for lv in levels]) / scale

    slopes = {
        unit: {
            which: {m: slope(x, series(m, field, scale)) for m in METHODS}
            for which, field in (("first_draw", "first_draw"), ("mean", "mean"))
        }
        for unit, scale in (("raw", 1.0), ("pool_sd", pool_sd))
    }
    ranges = {
        unit: {m: [float(series(m, "mean", scale).min()), float(series(m, "mean", scale).max())]
               for m in METHODS}
        for unit, scale in (("raw", 1.0), ("pool_sd", pool_sd))
    }  # fmt: skip
    # The sweep in the plots module's format: the mean over draws, a 95% band from the first
    # draw's SE (one draw per level) or from the spread over draws.
    sweep_series = {}
    for m in METHODS:
        est = series(m, "mean")
        if repeats > 1:
            half = np.array([lv[m]["sd_over_draws"] for lv in levels]) * Z95 / np.sqrt(repeats)
        else:
            half = series(m, "first_draw_stderr") * Z95
        sweep_series[m] = {
            "estimate": est.tolist(),
            "low": (est - half).tolist(),
            "high": (est + half).tolist(),
        }
    sweep = {
        "experiment": "semisynthetic_text_length",
        "title": (
            f"Drug reviews: W = long, scorer {scorer_name}, n = {n} per level"
            + (f", mean of {repeats} draws" if repeats > 1 else "")
        ),
        "x_label": "level i: P(long | positive) = 0.5 + 0.05 i, P(long | negative) = 0.5 - 0.05 i",
        "y_label": f"ATE of length on {scorer_name} (raw logit units)",
        "levels": [float(i) for i in LEVELS],
        "series": sweep_series,
        "slopes": {m: slopes["raw"]["mean"][m] for m in METHODS},
    }
    rewrite_checks = summary.get("rewrite_checks", {})
    result = {
        "experiment": "semisynthetic_text_length",
        "template": TEMPLATE,
        "scorer": scorer_name,
        "seed": seed,
        "pool": {
            "n": len(rows),
            "cells": {
                f"long={a},positive={b}": int(((w == a) & (z == b)).sum())
                for a in (1, 0)
                for b in (1, 0)
            },
            "length_threshold_words": summary.get("w_classifier_fitted", {}).get("threshold"),
            "score_sd": pool_sd,
            "rewrite_checks": rewrite_checks,
            "largest_n": largest,
        },
        "n_per_level": n,
        "repeats": repeats,
        "levels": levels,
        "slopes": slopes,
        "ranges_of_mean": ranges,
        "paper": {"naive_range": PAPER["naive"], "rate_range": PAPER["rate"]},
        "sweep": sweep,
        "seconds": {"pool": round(t_pool, 1), "total": round(time.perf_counter() - t0, 1)},
    }
    ensure_dir(out_dir)
    atomic_write_json(out_dir / "semisynthetic_text.json", result)
    atomic_write_json(out_dir / "semisynthetic_text_sweep.json", sweep)
    atomic_write_text(out_dir / "semisynthetic_text.md", result_table(result) + "\n")
    result["figures"] = [
        str(p)
        for p in make_plots([], out_dir, sweep_paths=[out_dir / "semisynthetic_text_sweep.json"])
    ]
    return result


def result_table(result: dict) -> str:
    """Markdown: the construction realised and the estimates per level, then the slopes."""
    lines = [
        f"### Semi-synthetic length experiment on drug reviews (scorer {result['scorer']}, "
        f"n = {result['n_per_level']} per level, {result['repeats']} draw(s) per level)",
        "",
        "| level | P(long\\|pos) target / realised | P(long\\|neg) target / realised | "
        "naive | single rewrite | RATE |",
        "|---|---|---|---|---|---|",
    ]
    for lv in result["levels"]:
        t, r = lv["target"], lv["realised"]
        cells = [
            f"{lv[m]['mean']:+.3f}"
            + (f" ({lv[m]['first_draw_stderr']:.3f})" if result["repeats"] == 1 else "")
            for m in METHODS
        ]
        lines.append(
            f"| {lv['level']} | {t['p_long_given_positive']:.2f} / "
            f"{r['p_long_given_positive']:.3f} | {t['p_long_given_negative']:.2f} / "
            f"{r['p_long_given_negative']:.3f} | " + " | ".join(cells) + " |"
        )
    for unit in ("raw", "pool_sd"):
        s = result["slopes"][unit]["mean"]
        rg = result["ranges_of_mean"][unit]
        lines.append(
            f"| slope per level ({unit}) | | | {s['naive']:+.4f} (range {rg['naive'][0]:+.2f} "
            f"to {rg['naive'][1]:+.2f}) | {s['single_rewrite']:+.4f} | {s['rate']:+.4f} "
            f"(range {rg['rate'][0]:+.2f} to {rg['rate'][1]:+.2f}) |"
        )
    return "\n".join(lines)
