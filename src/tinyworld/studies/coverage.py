"""Coverage of the intervals over many samples, against the population's true effect.

A large pool of examples is drawn once, rewritten (with the signature and perfectly) and scored;
its true effects (the originals against their perfect rewrites, over the whole pool) are the
population's. Each seed then draws a sample of the demo's size from the pool without
replacement, estimates, and checks whether each interval covers the population truth. The pool
is 50 times the sample, so the samples behave like independent draws from the population.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from rate.catalog import load_dataset_template
from rate.effects.bootstrap import percentile_intervals
from rate.effects.estimators import (
    BY_NAME,
    ESTIMATORS,
    FLAG_SE,
    beyond_se,
    estimate,
    estimator,
    estimators_for,
)
from rate.effects.stage import true_effects
from rate.progress import progress
from rate.stats import z_quantile
from tinyworld.studies.common import ScoredPool, scored_pool

log = logging.getLogger(__name__)

# The estimators with the reference's unpaired SE beside their paired one (RATE's).
UNPAIRED = tuple(e.name for e in ESTIMATORS if e.unpaired_se)


def coverage_of_pool(
    pool: ScoredPool,
    scorer: str,
    n: int,
    seeds: int,
    seed: int = 0,
    level: float = 0.95,
    n_bootstrap: int = 0,
) -> dict:
    """Coverage, bias and interval widths of every estimator over ``seeds`` samples of size n."""
    z = z_quantile(level)
    s_all, perfect_all = pool.estimator_input(scorer)
    truth = true_effects(s_all, perfect_all)
    rng = np.random.default_rng(seed)
    # Every estimator the pool has scores for (the placebo-corrected RATE where it has
    # placebo rewrites), and the reference's unpaired RATE intervals.
    names = [e.name for e in estimators_for(s_all)] + [f"{k}_unpaired" for k in UNPAIRED]
    covered = {k: 0 for k in names}
    boot_covered = {k: 0 for k in UNPAIRED}
    boot_conditional = 0
    errors = {k: [] for k in names}
    ses = {k: [] for k in names}
    used = 0
    for rep in progress(range(seeds), f"coverage {scorer}", seeds):
        idx = rng.choice(len(pool.w), n, replace=False)
        s = pool.subset(idx).estimator_input(scorer)[0]
        est = estimate(s)
        if est["Y1_count"] < 2 or est["Y0_count"] < 2:
            continue
        used += 1
        for k in names:
            base = k.removesuffix("_unpaired")
            se_key = f"{base}_stderr_unpaired" if k.endswith("_unpaired") else f"{base}_stderr"
            err = est[base] - truth[BY_NAME[base].estimand]
            covered[k] += abs(err) <= z * est[se_key]
            errors[k].append(err)
            ses[k].append(est[se_key])
        if n_bootstrap:
            iv = percentile_intervals(s, n_bootstrap, seed=rep, level=level)
            for k in UNPAIRED:
                lo, hi = iv[k]
                boot_covered[k] += lo <= truth[BY_NAME[k].estimand] <= hi
            # Stratified resampling holds the W mix at the sample's; its ATE interval targets
            # the population ATT and ATU weighted by that mix.
            n1, n0 = est["Y1_count"], est["Y0_count"]
            mix_truth = (n1 * truth["ATT"] + n0 * truth["ATU"]) / (n1 + n0)
            lo, hi = iv[estimator("rate", "ATE").name]
            boot_conditional += lo <= mix_truth <= hi
    out = {
        "scorer": scorer,
        "n": n,
        "seeds": used,
        "pool_size": len(pool.w),
        "level": level,
        "population_truth": truth,
        "coverage": {k: covered[k] / used for k in names},
        # The Monte Carlo SE of a coverage of 95% over this many seeds.
        "coverage_mc_se": math.sqrt(level * (1 - level) / used),
        "mean_error": {k: float(np.mean(errors[k])) for k in names},
        "mean_error_in_se": {k: float(np.mean(errors[k]) / np.mean(ses[k])) for k in names},
        "mean_se": {k: float(np.mean(ses[k])) for k in names},
        # The SE's own accuracy: the sd of the estimates over samples against the mean SE.
        "sd_over_mean_se": {k: float(np.std(errors[k], ddof=1) / np.mean(ses[k])) for k in names},
        "width_ratio_paired_over_unpaired": {
            k: float(np.mean(ses[k]) / np.mean(ses[f"{k}_unpaired"])) for k in UNPAIRED
        },
        # The placebo-corrected RATE's interval width against RATE's (paired), per estimand.
        "width_ratio_placebo_over_rate": {
            e.estimand: float(np.mean(ses[e.name]) / np.mean(ses[rate.name]))
            for e in ESTIMATORS
            if e.method == "rate_placebo" and e.name in ses
            for rate in [estimator("rate", e.estimand)]
        },
    }
    if n_bootstrap:
        out["bootstrap_coverage"] = {k: boot_covered[k] / used for k in UNPAIRED}
        out["bootstrap_coverage_ATE_of_the_sample_mix"] = boot_conditional / used
        out["n_bootstrap"] = n_bootstrap
    return out


def coverage_study(
    template_name: str,
    scorers: list[str],
    world: Path,
    pool_size: int = 100_000,
    n: int = 2000,
    seeds: int = 200,
    seed: int = 0,
    n_bootstrap: int = 0,
) -> dict:
    template = load_dataset_template(template_name)
    pool = scored_pool(template, pool_size, seed, world, scorers)
    return {
        "template": template_name,
        "results": [
            coverage_of_pool(pool, s, n, seeds, seed, n_bootstrap=n_bootstrap) for s in scorers
        ],
    }


def coverage_table(study: dict) -> str:
    """A Markdown table of one study: coverage and widths per scorer."""
    lines = [
        f"Coverage study, template `{study['template']}`",
        "",
        "| scorer | estimator | coverage (paired) | coverage (unpaired) | bootstrap | "
        f"mean error / SE | sd / mean SE | width paired / unpaired | width / RATE's | "
        f"bias > {FLAG_SE:g} SE |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    shown = [estimator(m, "ATE").name for m in ("naive", "single_rewrite")] + list(UNPAIRED)
    shown += [e.name for e in ESTIMATORS if e.method == "rate_placebo"]
    for r in study["results"]:
        for k in (k for k in shown if k in r["coverage"]):
            unp = r["coverage"].get(f"{k}_unpaired")
            boot = r.get("bootstrap_coverage", {}).get(k)
            ratio = r["width_ratio_paired_over_unpaired"].get(k)
            e = BY_NAME[k]
            vs_rate = (r.get("width_ratio_placebo_over_rate") or {}).get(e.estimand)
            vs_rate = vs_rate if e.method == "rate_placebo" else None
            flag = "yes" if beyond_se(r["mean_error_in_se"][k]) else ""
            lines.append(
                f"| {r['scorer']} | {k} | {r['coverage'][k]:.3f} | "
                f"{'' if unp is None else f'{unp:.3f}'} | {'' if boot is None else f'{boot:.3f}'} | "
                f"{r['mean_error_in_se'][k]:+.2f} | {r['sd_over_mean_se'][k]:.2f} | "
                f"{'' if ratio is None else f'{ratio:.3f}'} | "
                f"{'' if vs_rate is None else f'{vs_rate:.3f}'} | {flag} |"
            )
    for r in study["results"]:
        if "bootstrap_coverage_ATE_of_the_sample_mix" in r:
            lines.append(
                f"| {r['scorer']} | {estimator('rate', 'ATE').name}, against the sample mix's ATE | | | "
                f"{r['bootstrap_coverage_ATE_of_the_sample_mix']:.3f} | | | | | |"
            )
    r0 = study["results"][0]
    lines.append("")
    lines.append(
        f"{r0['seeds']} samples of {r0['n']} from a pool of {r0['pool_size']}; "
        f"Monte Carlo SE of a 95% coverage: {r0['coverage_mc_se']:.3f}. Bias > {FLAG_SE:g} SE: "
        f"the mean error exceeds {FLAG_SE:g} mean SEs."
    )
    return "\n".join(lines)
