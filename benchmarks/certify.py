"""The certificate's figures: ``rate tinyrlhf certify`` on each of a built world's runs, timed
in its two parts (issue: from audit to a better policy).

The first part draws and scores what the estimators read (two fresh draws of the policy,
the reward model and both policies' likelihoods on them and on the gold set); the second is
the estimators' arithmetic (SNIPS, the cross-fitted doubly robust estimate over its fold
splits, and their bootstrap).

Then a sweep's screens (``rate tinyrlhf sweep``) of the same runs, on the world's gold set and
on a larger one: each screen with a certifier of its own (every screen scoring the gold set
again, as before) against one certifier shared by all, rounds interleaved.

Last, the doubly robust bootstrap on that larger gold set (one run's inputs), done as plain
numpy would (the anchor: the counts by ``np.add.at``, the folds found by ``np.unique``, an
(R, n) matrix of fitted values and fresh (R, n) temporaries per fold) and as
:mod:`tinyworld.certify.estimators` does it, rounds interleaved; the replicates must agree.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from benchmarks.timing import timed
from rate.errors import DataFileError
from tinyworld.certify.assess import runs_of
from tinyworld.certify.certificate import (
    DEFAULTS,
    CertifyFamilyInputs,
    CertifySettings,
    certify_inputs,
)
from tinyworld.certify.certify import Certifier, gather, load_gold
from tinyworld.certify.estimators import (
    bootstrap_counts,
    dr_covariates,
    dr_replicates,
    outcome_design,
    split_folds,
)
from tinyworld.certify.recipes import screen
from tinyworld.data import LabelledSet
from tinyworld.models import load_policy, load_reward_model
from tinyworld.studies.certify import fresh_gold

# The screens' larger gold set: rows per family (the sweeps of experiments/release/README.md
# ran on 6,400 and 25,600), and the rounds of each arm.
SCREEN_GOLD_PER_FAMILY = 6400
SCREEN_ROUNDS = 2


def bench_certify(
    world: Path,
    settings: CertifySettings = DEFAULTS,
    screen_gold_per_family: int = SCREEN_GOLD_PER_FAMILY,
) -> dict:
    """Time the two parts of certifying each run under ``world/runs`` (with the default
    settings unless told otherwise), against the world's gold set and without a wrapper."""
    world = Path(world)
    runs = runs_of(world)
    if not runs:
        raise DataFileError(
            f"{world}/runs holds no finished run (no */checkpoint) to certify; give --world a "
            "built full world (`rate tinyrlhf build --out W`), or leave certify out of --sections"
        )
    gold = load_gold(world)
    reference = load_policy(world / "policy")
    rm = load_reward_model(world / "reward_model")
    per_run = {}
    for name, path in sorted(runs.items()):
        policy = load_policy(path)
        gather_s, inputs = timed(lambda p=policy: gather(p, reference, rm, gold, settings=settings))
        estimators_s, report = timed(lambda i=inputs: certify_inputs(i, settings))
        abstained = sum(bool(cell["abstain"]) for cell in report["per_family"].values())
        per_run[name] = {
            "gather_s": gather_s,
            "estimators_s": estimators_s,
            "families_abstained": abstained,
        }
    large = fresh_gold(world, screen_gold_per_family, seed=0)
    first = sorted(runs)[0]
    return {
        "certify_runs": per_run,
        "certify_replicates": settings.replicates,
        "certify_fold_splits": settings.fold_splits,
        "certify_gold_rows": len(gold.labels),
        "screens": {
            str(len(g.labels)): bench_screens(world, runs, g, settings) for g in (gold, large)
        },
        "dr_bootstrap": {
            "run": first,
            "gold_rows": len(large.labels),
            **bench_dr_bootstrap(
                Certifier.load(world, None, large).inputs(load_policy(runs[first]), settings),
                settings,
            ),
        },
    }


def bench_screens(
    world: Path, runs: dict[str, Path], gold: LabelledSet, settings: CertifySettings
) -> dict:
    """Seconds to screen every run against ``gold``: each with a certifier of its own, and
    all with one, the two interleaved over :data:`SCREEN_ROUNDS` rounds; the screens must
    agree."""
    times: dict[str, list[float]] = {"own": [], "shared": []}
    for _ in range(SCREEN_ROUNDS):
        own_s, own = timed(
            lambda: [screen(Certifier.load(world, None, gold), p, settings) for p in runs.values()]
        )

        def shared_screens() -> list[dict]:
            certifier = Certifier.load(world, None, gold)
            return [screen(certifier, p, settings) for p in runs.values()]

        shared_s, shared = timed(shared_screens)
        if own != shared:
            raise RuntimeError("bench: a shared certifier screened differently from its own")
        times["own"].append(own_s)
        times["shared"].append(shared_s)
    return {"runs": len(runs), **{k: min(v) for k, v in times.items()}}


def plain_bootstrap_counts(n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`tinyworld.certify.estimators.bootstrap_counts` by ``np.add.at`` (the same counts)."""
    idx = rng.integers(0, n, size=(reps, n))
    counts = np.zeros((reps, n))
    np.add.at(counts, (np.arange(reps)[:, None], idx), 1.0)
    return counts


def plain_split_folds(n: int, k: int, splits: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`tinyworld.certify.estimators.split_folds` in int64 (the same folds)."""
    return rng.permuted(np.tile(np.arange(n) % k, (splits, 1)), axis=1)


def plain_dr_replicates(
    y: np.ndarray,
    log_w: np.ndarray,
    covariates: np.ndarray,
    fresh_covariates: np.ndarray,
    folds: np.ndarray,
    counts: np.ndarray,
    fresh_counts: np.ndarray,
) -> np.ndarray:
    """:func:`tinyworld.certify.estimators.dr_replicates` written as plain numpy would: the folds
    by ``np.unique``, fresh (R, n) arrays per fold and a matrix of fitted values."""
    w = np.exp(log_w - log_w.max())
    gold_x, fresh_x = outcome_design(covariates, fresh_covariates, (0,))
    fresh_mean = (fresh_counts @ fresh_x) / fresh_counts.sum(1, keepdims=True)
    folds = np.broadcast_to(folds, counts.shape)
    total = np.zeros(counts.shape[0])
    p = gold_x.shape[1]
    products = (gold_x[:, :, None] * gold_x[:, None, :]).reshape(len(y), p * p)
    for k in np.unique(folds):
        inside = folds == k
        train = counts * ~inside
        gram = (train @ products).reshape(-1, p, p)
        moments = train @ (gold_x * y[:, None])
        beta = (np.linalg.pinv(gram, rcond=1e-10, hermitian=True) @ moments[..., None])[..., 0]
        cw = counts * inside * w
        fitted = beta @ gold_x.T
        with np.errstate(invalid="ignore", divide="ignore"):
            residual = (cw @ y - (cw * fitted).sum(1)) / cw.sum(1)
        total += inside.sum(1) / len(y) * ((fresh_mean * beta).sum(1) + residual)
    return total


def dr_bootstrap(x: CertifyFamilyInputs, settings: CertifySettings, plain: bool) -> np.ndarray:
    """One family's doubly robust bootstrap replicates, drawn as :func:`certify_inputs` draws
    them: plain numpy's way or ours."""
    rng = np.random.default_rng([settings.seed, 0xCE27])
    n, m, reps = len(x.y), len(x.s_fresh), settings.replicates
    counting = plain_bootstrap_counts if plain else bootstrap_counts
    counts, fresh_counts = counting(n, reps, rng), counting(m, reps, rng)
    folds = (plain_split_folds if plain else split_folds)(n, settings.folds, reps, rng)
    cov, fresh_cov = dr_covariates(x.s, x.log_w), dr_covariates(x.s_fresh, x.log_w_fresh)
    dr = plain_dr_replicates if plain else dr_replicates
    return dr(x.y, x.log_w, cov, fresh_cov, folds, counts, fresh_counts)


def bench_dr_bootstrap(inputs: dict[str, CertifyFamilyInputs], settings: CertifySettings) -> dict:
    """Seconds for every family's DR bootstrap, plain numpy's way and ours, interleaved over
    :data:`SCREEN_ROUNDS` rounds, and the largest difference of their replicates."""
    times: dict[str, list[float]] = {"plain": [], "ours": []}
    largest = 0.0
    for _ in range(SCREEN_ROUNDS):
        results = {}
        for arm in times:
            seconds, results[arm] = timed(
                lambda a=arm: [dr_bootstrap(x, settings, a == "plain") for x in inputs.values()]
            )
            times[arm].append(seconds)
        for p, o in zip(results["plain"], results["ours"], strict=True):
            largest = max(largest, float(np.max(np.abs(p - o))))
    return {**{k: min(v) for k, v in times.items()}, "max_abs_diff": largest}


def render_certify(r: dict, date: str | None) -> list[str]:
    runs = r["certify_runs"]
    totals = [v["gather_s"] + v["estimators_s"] for v in runs.values()]
    lines = [
        "## Certification (issue: from audit to a better policy)",
        "",
        f"Measured {date} on the world given with `--world` (default: the one the world section "
        f"built): each of its runs certified against the reference from its {r['certify_gold_rows']:,} "
        f"gold rows, default settings ({r['certify_replicates']:,} bootstrap replicates, "
        f"{r['certify_fold_splits']} fold splits), no wrapper, in one process after the models "
        "are loaded. Drawing: two fresh draws of the policy, the reward model and both policies' "
        "likelihoods; estimators: SNIPS, the doubly robust estimate and their bootstrap.",
        "",
        "| run | drawing and scoring | estimators | total | families abstained |",
        "|---|---|---|---|---|",
    ]
    for name, v in runs.items():
        lines.append(
            f"| {name} | {v['gather_s']:.2f} s | {v['estimators_s']:.2f} s | "
            f"{v['gather_s'] + v['estimators_s']:.2f} s | {v['families_abstained']} |"
        )
    lines += [
        "",
        f"Median certificate: {statistics.median(totals):.2f} s "
        f"(range {min(totals):.2f}-{max(totals):.2f} s).",
        "",
    ]
    if "screens" in r:
        lines += [
            "A sweep's label-free screens of the same runs (`rate tinyrlhf sweep`): the reference's "
            "likelihoods and the reward of the gold responses do not depend on the checkpoint. "
            f"Best of {SCREEN_ROUNDS} interleaved rounds; the screens agree to the bit.",
            "",
            "| gold rows | runs screened | a certifier each | one shared | ratio |",
            "|---|---|---|---|---|",
        ]
        for rows, v in r["screens"].items():
            lines.append(
                f"| {int(rows):,} | {v['runs']} | {v['own']:.2f} s | {v['shared']:.2f} s | "
                f"{v['own'] / v['shared']:.2f}x |"
            )
        lines.append("")
    if "dr_bootstrap" in r:
        v = r["dr_bootstrap"]
        agree = (
            "identical to the bit"
            if v["max_abs_diff"] == 0
            else f"within {v['max_abs_diff']:.1e} of each other"
        )
        lines += [
            f"The doubly robust bootstrap on the larger gold set ({v['gold_rows']:,} rows, the "
            f"inputs of {v['run']}, {r['certify_replicates']:,} replicates, every family), "
            "as plain numpy would do it and as the estimators do: the same draws, replicates "
            f"{agree}. Best of {SCREEN_ROUNDS} interleaved rounds.",
            "",
            "| plain numpy | ours | ratio |",
            "|---|---|---|",
            f"| {v['plain']:.2f} s | {v['ours']:.2f} s | {v['plain'] / v['ours']:.2f}x |",
            "",
        ]
    return lines
