"""The certifiable frontier: its optima computed by hand, their optimality, and the study on the
small world."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rate.cli import main
from tinyworld.evaluate import evaluate_policy, load_oracle
from tinyworld.models import load_policy
from tinyworld.studies.frontier import (
    QUALITY,
    chi_square_tilt,
    exponential_tilt,
    family_frontier,
    frontier_study,
    markdown,
    moments,
    share_certifiable,
    simulated_gold,
    strongest,
)
from tinyworld.vocab import FAMILIES


def distribution(**shares: float) -> np.ndarray:
    """One prompt's distribution of the number correct, e.g. k0=0.5, k8=0.5."""
    p = np.zeros((1, len(QUALITY)))
    for key, value in shares.items():
        p[0, int(key[1:])] = value
    return p


def test_the_exponential_tilt_by_hand():
    # q is 0 or 1 with probability 1/2; lam = log 3: Z = (1 + 3) / 2 = 2, weights 1/2 and 3/2.
    p = distribution(k0=0.5, k8=0.5)
    w = exponential_tilt(p, math.log(3))
    assert w[0, 0] == pytest.approx(0.5) and w[0, 8] == pytest.approx(1.5)
    m = moments(p, w)
    assert m["quality"] == pytest.approx(0.75)
    assert m["kl"] == pytest.approx(0.75 * math.log(3) - math.log(2))
    assert m["mean_w2"] == pytest.approx(0.5 * 0.25 + 0.5 * 2.25)


def test_the_chi_square_tilt_by_hand_where_a_weight_is_cut_at_zero():
    # q is 0, 1/2 or 1 with probability 1/3; s = 3. Untruncated, a = 1 - 3 * 1/2 = -1/2 would
    # give q = 0 a negative weight; cut at 0, (a + 1.5) + (a + 3) = 3 gives a = -3/4.
    p = distribution(k0=1 / 3, k4=1 / 3, k8=1 / 3)
    w = chi_square_tilt(p, 3.0)
    assert w[0, [0, 4, 8]] == pytest.approx([0.0, 0.75, 2.25])
    m = moments(p, w)
    assert m["quality"] == pytest.approx((0.75 * 0.5 + 2.25) / 3)
    assert m["mean_w2"] == pytest.approx((0.75**2 + 2.25**2) / 3)
    assert m["kl"] == pytest.approx((0.75 * math.log(0.75) + 2.25 * math.log(2.25)) / 3)
    # Without a cut it is the linear tilt 1 + s (q - E q).
    w = chi_square_tilt(p, 1.0)
    assert w[0, [0, 4, 8]] == pytest.approx([0.5, 1.0, 1.5])


def random_prompts(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(len(QUALITY), 0.7), size=n)


def test_each_tilt_is_the_best_policy_under_its_own_constraint():
    """At the exponential tilt's KL the chi-square policy buys less quality, and at the
    chi-square policy's E[w^2] the exponential tilt buys less: each is the optimum of its
    problem (Gibbs; the KKT conditions), which the bounds rest on."""
    p = random_prompts(40, 0)
    exp_m = moments(p, exponential_tilt(p, 6.0))
    s = strongest(lambda t: moments(p, chi_square_tilt(p, t))["kl"] <= exp_m["kl"], hi=1e3)
    chi_at_kl = moments(p, chi_square_tilt(p, s))
    assert chi_at_kl["kl"] == pytest.approx(exp_m["kl"], rel=1e-6)
    assert chi_at_kl["quality"] < exp_m["quality"] - 1e-3

    chi_m = moments(p, chi_square_tilt(p, 3.0))
    lam = strongest(
        lambda t: moments(p, exponential_tilt(p, t))["mean_w2"] <= chi_m["mean_w2"], 200
    )
    exp_at_w2 = moments(p, exponential_tilt(p, lam))
    assert exp_at_w2["mean_w2"] == pytest.approx(chi_m["mean_w2"], rel=1e-6)
    assert exp_at_w2["quality"] < chi_m["quality"] - 1e-3
    # No policy beats the exponential tilt at its KL: nor does a random reweighting.
    rng = np.random.default_rng(1)
    for _ in range(20):
        w = rng.gamma(0.5, size=p.shape)
        w /= (p * w).sum(1, keepdims=True)
        m = moments(p, w)
        lam = strongest(lambda t, k=m["kl"]: moments(p, exponential_tilt(p, t))["kl"] <= k, 200)
        assert m["quality"] <= moments(p, exponential_tilt(p, lam))["quality"] + 1e-9


def test_strongest_finds_the_edge_of_the_feasible_strengths():
    assert strongest(lambda t: t <= 3.7, hi=10.0) == pytest.approx(3.7, abs=1e-9)
    assert strongest(lambda t: True, hi=10.0) == 10.0


def test_simulated_gold_draws_the_reference_and_its_ess():
    p = np.vstack([distribution(k0=0.2, k8=0.8), distribution(k2=1.0)])
    x, k = simulated_gold(p, 100, 400, np.random.default_rng(0))
    assert set(np.unique(x)) == {0, 1}
    assert set(np.unique(k[x == 1])) == {2}
    assert (k[x == 0] == 8).mean() == pytest.approx(0.8, abs=0.01)
    # Flat weights: every gold set has an ESS of n. All the weight on a 1-in-50 outcome:
    # about 2 rows per set carry it, an ESS near 2.
    assert share_certifiable(np.ones_like(p), (x, k), 10.0) == 1.0
    rare = distribution(k0=0.98, k8=0.02)
    w = np.zeros_like(rare)
    w[0, 8] = 50.0
    gold = simulated_gold(rare, 100, 400, np.random.default_rng(1))
    assert share_certifiable(w, gold, 10.0) < 0.01


def test_the_family_frontier_where_the_kl_floor_binds():
    # Two outcomes, q = 0 or 1 with probability 0.9 / 0.1: every reweighting is a tilt, and
    # the bound is the Q whose binary KL to 0.1 is log(n / 15).
    p = distribution(k0=0.9, k8=0.1)
    row = family_frontier(p, n_gold=100, sets=500)
    q = row["kl_bound"]["quality"]
    binary_kl = q * math.log(q / 0.1) + (1 - q) * math.log((1 - q) / 0.9)
    assert row["kl_floor"] == pytest.approx(math.log(100 / 15))
    assert binary_kl == pytest.approx(math.log(100 / 15), abs=1e-6)
    assert row["reference_quality"] == pytest.approx(0.1)
    c = row["certifiable"]
    assert c["kl"] <= row["kl_floor"] + 1e-9 and c["share_certifiable"] >= 0.5
    assert row["reference_quality"] < c["quality"] <= q + 1e-9


def test_a_certificate_asked_of_more_gold_sets_allows_a_weaker_policy():
    # An ESS floor of 30 of 40 rows binds long before the KL floor (KL <= log(40 / 15)).
    p = random_prompts(30, 2)
    loose = family_frontier(p, n_gold=40, ess_min=30, sets=400, share=0.5)["certifiable"]
    strict = family_frontier(p, n_gold=40, ess_min=30, sets=400, share=0.9)["certifiable"]
    assert strict["share_certifiable"] >= 0.9 and loose["share_certifiable"] >= 0.5
    assert strict["quality"] < loose["quality"] and strict["kl"] < loose["kl"]


def test_the_family_frontier_where_the_best_answer_is_within_the_floor():
    # q = 1 has probability 1/2: all the weight there costs KL log 2 < log(100 / 15).
    row = family_frontier(distribution(k0=0.5, k8=0.5), n_gold=100, sets=200)
    assert row["kl_bound"]["quality"] == pytest.approx(1.0, abs=1e-6)


def test_the_frontier_on_the_small_world(small_world, tmp_path):
    policies = {
        "reference": small_world / "policy",
        "kl002": small_world / "runs" / "kl002-s1500" / "checkpoint",
    }
    study = frontier_study(
        small_world, prompts=16, per_prompt=256, bootstrap=20, policies=policies, per_family=200
    )
    oracle, _ = load_oracle(small_world)
    truth = evaluate_policy(load_policy(small_world / "policy"), oracle, per_family=500)
    assert set(study["families"]) == set(FAMILIES)
    for fam, row in study["families"].items():
        ref = truth["per_family"][fam]
        # The reference's quality agrees with the truth evaluation's (other samples; the SE
        # here is at most that of 16 prompts' means, and the prompts' spread is small).
        assert abs(row["reference_quality"] - ref["true_quality"]) < 0.05
        c, b = row["certifiable"], row["kl_bound"]
        assert row["reference_quality"] < c["quality"] <= b["quality"] + 1e-9
        assert c["kl"] <= row["kl_floor"] + 1e-9 and b["kl"] <= row["kl_floor"] + 1e-6
        assert b["se"] > 0
    # The reference placed on the frontier: KL exactly 0 (the log-ratios are 0), where the best
    # policy is the reference itself.
    ref = study["policies"]["reference"]
    for fam, row in ref["families"].items():
        assert row["kl"] == 0.0
        assert row["best_at_kl"] == pytest.approx(study["families"][fam]["reference_quality"])
    assert ref["quality"] == pytest.approx(truth["balanced"]["true_quality"], abs=0.03)
    # An RL run spends KL and buys less than the best policy at that KL (up to its sampling
    # error: 200 prompts per family, SE <= 0.025).
    run = study["policies"]["kl002"]
    for row in run["families"].values():
        assert row["kl"] > 0.01 and row["quality"] < row["best_at_kl"] + 0.05
    assert run["quality"] < run["best_at_kl"]
    bal = study["balanced"]
    assert bal["share_all_certify"] >= 0.5
    assert bal["kl_bound"] == pytest.approx(
        np.mean([r["kl_bound"]["quality"] for r in study["families"].values()])
    )

    out = tmp_path / "frontier"
    argv = ["world", "study", "frontier", "--world", str(small_world), "--prompts", "4"]
    assert main([*argv, "--per-prompt", "64", "--bootstrap", "0", "--out", str(out)]) == 0
    saved = json.loads((out / "frontier.json").read_text())
    assert saved["n_gold"] == study["n_gold"] and saved["balanced"]["kl_bound_se"] is None
    assert "| **balanced** |" in (out / "frontier.md").read_text()
    assert "| reference |" in markdown(study) and "| kl002 |" in markdown(study)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--gold-per-family", "15"], "--gold-per-family: certification needs more than 15"),
        (["--per-prompt", "0"], "argument --per-prompt: must be >= 1"),
        (["--policy", "nameless"], "--policy 'nameless': expected NAME=DIR"),
    ],
)
def test_bad_frontier_settings_are_one_line_errors(small_world, tmp_path, capsys, extra, message):
    argv = ["world", "study", "frontier", "--world", str(small_world), "--out", str(tmp_path / "o")]
    try:
        assert main([*argv, "--prompts", "2", *extra]) != 0
    except SystemExit as stop:  # a flag's value out of its range: refused by the parser
        assert stop.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists()


def test_a_second_frontier_study_into_a_busy_folder_stops_at_once(small_world, tmp_path, capsys):
    from rate.errors import RateError
    from rate.provenance import folder_lock

    out = tmp_path / "o"

    def busy(pid: str) -> RateError:
        return RateError(pid)

    with folder_lock(out, busy):
        argv = ["world", "study", "frontier", "--world", str(small_world), "--out", str(out)]
        assert main([*argv, "--prompts", "2", "--per-prompt", "8"]) != 0
    assert "another frontier study" in capsys.readouterr().err
    assert not (out / "frontier.json").exists()


def test_a_policy_folder_that_is_not_one_stops_the_study_before_any_sampling(
    small_world, tmp_path, capsys
):
    out = tmp_path / "o"
    argv = ["world", "study", "frontier", "--world", str(small_world), "--out", str(out)]
    assert main([*argv, "--policy", f"x={tmp_path / 'nowhere'}"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nowhere: not a policy directory" in err[0]
    assert not (out / "frontier.json").exists()
