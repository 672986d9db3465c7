"""The study pages' claims, each run by the study's own harness at CI size and asserted.

Tolerances come from the sizes of each run: a check fails only where a procedure that meets
the claim would pass it with probability below 0.001 (two-sided normal or exact binomial
tails; checks of one test share the 0.001 by Bonferroni). The audit's checks are the study's
own acceptance rule, with the page's thresholds. The pages' figures are on the full runs
(experiments/*/README.md); these runs are smaller, so their figures differ, not their claims.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rate.stats import z_quantile
from tests.helpers import ROOT, slope_se

ALPHA = 0.001  # a test's chance of failing where its claim holds
Z95 = z_quantile(0.95)


def z_two_sided(checks: int) -> float:
    """The |z| beyond which one of ``checks`` two-sided normal checks fails at ALPHA overall."""
    return z_quantile(1 - ALPHA / checks)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def normal_coverage(z: float, bias_in_se: float) -> float:
    """The coverage of estimate +- z SE when the estimate is off by ``bias_in_se`` SEs."""
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))  # noqa: E731
    return phi(z - bias_in_se) - phi(-z - bias_in_se)


# The audit (experiments/audit/README.md): every planted shortcut flagged, at most one false
# flag (the acceptance rule; the chance of any false flag is controlled at 2 alpha = 0.1 per
# audit, so "none" cannot be asserted at 0.001), AUC >= 0.98, no flag in the world without
# shortcuts, and the analyst's ridge flags no planted pair. Half the page's responses (the diagnostic's
# own size), a quarter of RATE's, no complexes (they serve the wrapper, not the flags).
CI_AUDIT = {"n_token": 32, "n_screen": 16, "n_confirm": 128, "n_rate_token": 8,
            "n_rate_screen": 4, "n_rate_confirm": 32, "n_complex": 0}  # fmt: skip


def audit_claims(world: Path, monkeypatch) -> dict:
    """audit_world on ``world`` at CI size, each mode's check with the audit it checked."""
    import tinyworld.studies.audit as study
    from tinyworld.audit.settings import AuditSettings

    records = []
    real = study.run_audit
    monkeypatch.setattr(study, "run_audit", lambda *a: records.append(real(*a)) or records[-1])
    result = study.audit_world(world, AuditSettings(**CI_AUDIT))
    for kind, record in zip(("audit", "diagnostic"), records, strict=True):
        check = result[kind]
        assert study.verdict(check), (kind, check)
        ridge = {f"{r['family']} `{r['feature']}`" for r in record["baselines"].get("ridge", [])
                 if r["flagged"]}  # fmt: skip
        planted_pairs = {p for p in check["planted"] if " " in p.split("`")[1]}
        assert not ridge & planted_pairs, (kind, ridge & planted_pairs)
    return result


@pytest.mark.slow
def test_the_audit_flags_the_planted_shortcuts_of_the_default_world(full_world, monkeypatch):
    result = audit_claims(full_world, monkeypatch)
    for kind in ("audit", "diagnostic"):
        assert result[kind]["flagged_planted"] == [
            "cobalt `ka ra`", "dune `pa`", "ember `he`"
        ]  # fmt: skip
    # The ridge cannot see the planted pair.
    assert result["audit"]["auc"]["ridge"] < result["audit"]["auc"]["intervention"]


@pytest.mark.slow
def test_the_audit_flags_the_planted_shortcuts_of_the_variant_world(variant_world, monkeypatch):
    """Five planted, a penalty (anvil `de`) and two pairs among them."""
    result = audit_claims(variant_world, monkeypatch)
    assert len(result["audit"]["planted"]) == 5 and "anvil `de`" in result["audit"]["planted"]
    assert set(result["audit"]["flagged_planted"]) == set(result["audit"]["planted"])


@pytest.mark.slow
def test_the_audit_flags_nothing_in_the_world_without_shortcuts(noshortcuts_world, monkeypatch):
    result = audit_claims(noshortcuts_world, monkeypatch)
    for kind in ("audit", "diagnostic"):
        assert result[kind]["planted"] == [] and result[kind]["false_flags"] == []


# The coverage study (experiments/coverage/README.md): RATE's paired normal intervals cover near
# 95%; where they fall short, a known bias of RATE explains it, not the SE. The page's
# decomposition measured dune's bias at n = 2,000 at most 0.71 SE (its reward-model ATT); the
# bound of 0.95 leaves room for other draws of the world (a build on another CPU). A bias fixed
# in raw units grows with sqrt(n) in SE units.
KNOWN_BIAS_IN_SE_AT_2000 = 0.95


@pytest.mark.slow
def test_rates_intervals_cover_near_nominal_where_no_bias_explains_a_shortfall(full_world):
    from rate.effects.estimators import ESTIMANDS, estimator
    from tinyworld.studies.coverage import coverage_study

    n, seeds = 400, 200
    study = coverage_study(
        "tinyrlhf_dune_pa", ["tinyrlhf_rm", "tinyrlhf_oracle"], full_world, pool_size=10_000,
        n=n, seeds=seeds,
    )  # fmt: skip
    names = [estimator("rate", e).name for e in ESTIMANDS]
    checks = 3 * len(names) * len(study["results"])
    z = z_two_sided(checks)
    bias_bound = KNOWN_BIAS_IN_SE_AT_2000 * math.sqrt(n / 2000)
    for res in study["results"]:
        k = res["seeds"]
        assert k == seeds
        for name in names:
            where = (res["scorer"], name)
            ratio = res["sd_over_mean_se"][name]
            # The SE is right: the estimates' SD over k samples against the mean SE; the SD of
            # a sample SD is about SD / sqrt(2 (k - 1)).
            assert abs(ratio - 1) <= z / math.sqrt(2 * (k - 1)), (where, ratio)
            # The bias is no larger than the known one, within its Monte Carlo error.
            bias = res["mean_error_in_se"][name]
            assert abs(bias) <= bias_bound + z * ratio / math.sqrt(k), (where, bias)
            # The coverage is what a normal interval with that bias gives, within the binomial
            # spread of k samples (one-sided: too often covered is no shortfall).
            covered = round(res["coverage"][name] * k)
            expected = normal_coverage(Z95, bias)
            tail = binomial_cdf(covered, k, expected)
            assert tail >= ALPHA / checks, (where, covered, k, expected, tail)


def sweep_slope_se(series: dict) -> float:
    """The SE of a sweep's slope over its levels, from each level's 95% interval."""
    se = (np.array(series["high"]) - np.array(series["low"])) / (2 * Z95)
    return slope_se(range(len(se)), se)


# The synthetic study (experiments/synthetic/README.md), experiment (a): as W's correlation with
# true quality rises, the naive estimate follows it while RATE stays at the truth. RATE's own
# slope is asserted on the reward model; on true quality the random edits leave a slope of
# their own (about -0.0002 per level, a couple of SEs at this size: they cost more quality in
# the better texts, which the sweep moves into W = 1), which the page calls flat.
@pytest.mark.slow
def test_the_naive_estimate_follows_the_correlation_and_rate_the_truth(full_world):
    from rate.catalog import load_dataset_template
    from tinyworld.studies.common import scored_pool
    from tinyworld.studies.synthetic import SCORERS, TEMPLATE, correlation_sweep

    pool = scored_pool(load_dataset_template(TEMPLATE), 4000, 0, full_world, SCORERS)
    sweeps = correlation_sweep(pool, 800, 0)
    z = z_two_sided(3)
    for scorer, sweep in sweeps.items():
        naive = sweep["series"]["naive"]
        assert sweep["slopes"]["naive"] > z * sweep_slope_se(naive), (scorer, sweep["slopes"])
    rm = sweeps["tinyrlhf_rm"]
    apart = abs(rm["slopes"]["rate"] - rm["slopes"]["truth"])
    se = sweep_slope_se(rm["series"]["rate"]) + sweep_slope_se(rm["series"]["truth"])
    assert apart <= z * se, (rm["slopes"], se)


# Certification (experiments/release/README.md): the doubly robust intervals cover the true
# quality at near 95% where they answer (the page: 94.7% of 13,697 cells, 200 gold sets).
@pytest.mark.slow
def test_certificates_cover_the_true_quality_near_95_percent(small_world, tmp_path):
    """Fresh gold sets of the page's size (100 per family) for two runs of the small world,
    the default recipe and the one that moved furthest (kl002: KL about 1 per family). The
    family cells of one run are independent (their own gold rows and samples); each run's
    covered count must be one a 95% procedure reaches with probability >= 0.0005. With
    about 70 cells per run a shortfall shows below about 87%; too much coverage would need
    several hundred sets to show."""
    from tinyworld.certify.certificate import CertifySettings
    from tinyworld.studies.certify import coverage_study

    runs = ("default-s800", "kl002-s1500")
    policies = {name: small_world / "runs" / name / "checkpoint" for name in runs}
    study = coverage_study(
        small_world, policies, tmp_path / "coverage", None, sets=12, gold_per_family=100,
        truth_per_family=2000, settings=CertifySettings(300, 200, plan_per_family=0),
    )  # fmt: skip
    for name in runs:
        cells = [c for c in study["cells"] if c["policy"] == name and c["cell"] != "balanced"]
        answered = sum(c["sets"] - c["abstained"] for c in cells)
        covered = sum(c["dr_covered"] for c in cells)
        assert answered >= 40, (name, answered)  # answered enough for the check to say much
        tail = binomial_cdf(covered, answered, 0.95)
        assert tail >= ALPHA / len(runs), (name, covered, answered, tail)


# The demo (experiments/demo/README.md), row by row: RATE recovers the true effect; the naive
# estimate is far off on the reward model for the shortcut concepts; the single rewrite is off
# on dune's true quality (ATT, ATU) and on the control, but not on the reward model of dune and
# ember. The control's truth is 0 or nearly, its SEs tiny: there RATE may be off by the random
# edits' residue as well, a tenth of the scorer's SD at most.
RESIDUE_IN_SD = 0.1
SINGLE_OFF = {("tinyrlhf_dune_pa", "true quality"), ("tinyrlhf_anvil_pa", "reward model"),
              ("tinyrlhf_anvil_pa", "true quality")}  # fmt: skip
SHORTCUTS = ("tinyrlhf_dune_pa", "tinyrlhf_ember_he")


@pytest.mark.slow
def test_the_demo_tables_eighteen_rows(full_world, tmp_path):
    """At the demo's size, with the signature on. Per row, each estimator's error against the
    truth in units of its own SE (the table's last column); 32 checks share the 0.001."""
    from rate.effects.estimators import ESTIMANDS, estimator
    from rate.store import Layout
    from tinyworld.demo import run_pipeline

    config = ROOT / "experiments" / "tinyworld" / "demo.yaml"
    rows = run_pipeline(config, full_world, False, Layout(tmp_path))
    assert len(rows) * len(ESTIMANDS) == 18
    z = z_two_sided(32)
    seen = 0
    for r in rows:
        where, err = (r["template"], r["scorer"]), r["error_in_se"]
        for estimand in ESTIMANDS:
            rate, single = estimator("rate", estimand).name, estimator("single_rewrite", estimand)
            # RATE: within z SE of the truth (the control: plus the edits' residue).
            residue = 0 if r["template"] in SHORTCUTS else RESIDUE_IN_SD * r["reward_std"]
            off = abs(r[rate] - r["truth"][estimand])
            assert off <= z * r[f"{rate}_stderr"] + residue, (where, estimand, err[rate])
            seen += 1
            if where in SINGLE_OFF and estimand != "ATE":
                assert abs(err[single.name]) > z, (where, estimand, err[single.name])
            if r["template"] in SHORTCUTS and r["scorer"] == "reward model":
                assert abs(err[single.name]) <= z, (where, estimand, err[single.name])
        if r["template"] in SHORTCUTS and r["scorer"] == "reward model":
            assert abs(err["naive_effect"]) > z, (where, err["naive_effect"])
    assert seen == 18
    # The control's true quality: the extra round of random edits moves RATE's ATT and ATU;
    # the placebo-corrected RATE removes that drift (concepts.md, "the rewrite residue").
    err = next(
        r for r in rows if (r["template"], r["scorer"]) == ("tinyrlhf_anvil_pa", "true quality")
    )["error_in_se"]
    for estimand in ("ATT", "ATU"):
        rate, placebo = (err[f"{estimand}_rewritten_rewrite{s}"] for s in ("", "_placebo"))
        assert abs(placebo) < abs(rate), err


def test_the_claim_helpers_by_hand():
    # Bin(3, 0.5): P(X <= 1) = (1 + 3) / 8.
    assert binomial_cdf(1, 3, 0.5) == pytest.approx(0.5)
    assert binomial_cdf(3, 3, 0.5) == pytest.approx(1.0)
    assert normal_coverage(Z95, 0.0) == pytest.approx(0.95)
    # Off by 1.96 SE: half the mass beyond the upper end, none below (to 1e-4).
    assert normal_coverage(Z95, Z95) == pytest.approx(0.5, abs=1e-4)
    assert z_two_sided(1) == pytest.approx(3.2905, abs=1e-4)
    # Levels 0..2 with SEs 1, 0, 1: sxx = 2, SE = sqrt(1 + 1) / 2.
    flat = {"low": [-Z95, 0.0, -Z95], "high": [Z95, 0.0, Z95]}
    assert sweep_slope_se(flat) == pytest.approx(math.sqrt(2) / 2)
