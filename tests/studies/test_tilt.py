"""The tilt study (the oracle side) on the small world with CI-sized samples."""

from __future__ import annotations

import pytest

from tests.tilt.test_cli import ZERO_WRAPPER
from tinyworld.evaluate import evaluate_policy, load_oracle
from tinyworld.models import load_policy
from tinyworld.studies.tilt import compare, precise, study_table, tilt_study
from tinyworld.vocab import FAMILIES


def test_the_tilt_study_on_the_small_world(small_world, tmp_path):
    wrapper = tmp_path / "zero.py"
    wrapper.write_text(ZERO_WRAPPER)
    study = tilt_study(
        small_world,
        wrapper,
        [0.1],
        max_n=3000,
        chunk=1500,
        tail_samples=200,
        n_boot=100,
        model_samples=50,
    )
    assert study["comparisons"] == len(FAMILIES) * 2  # raw and corrected, one beta
    oracle, _ = load_oracle(small_world)
    truth = evaluate_policy(load_policy(small_world / "policy"), oracle, per_family=500)
    for fam in FAMILIES:
        o = study["oracle"][fam]
        raw, flat = o["raw"]["0.1"], o["corrected"]["0.1"]
        # Sampling stops at the cap unless every estimate met the goal.
        assert o["n"] == 3000 or (raw["se_reached"] and flat["se_reached"])
        # The reference's quality agrees with the truth evaluation's (other samples).
        ref = truth["per_family"][fam]
        se = (o["reference_se"] ** 2 + ref["true_quality_se"] ** 2) ** 0.5
        assert abs(o["reference_quality"] - ref["true_quality"]) < 4 * se
        # A flat reward's pi_beta is the reference: no change, every sample effective.
        assert flat["change"] == pytest.approx(0, abs=1e-6)
        assert flat["ess"] == pytest.approx(o["n"], abs=0.1)
        assert flat["se_reached"] == (flat["se"] < 0.005)
    assert all(r["signs_match"] for r in study["rows"] if r["reward"] == "corrected")
    assert f"Signs match in {study['matches']} of 12" in study_table(study)
    # The model forecast, on a flat corrected reward, forecasts no change anywhere: its signs
    # match where the oracle's change is 0 (the flat reward's cells) and nowhere else.
    assert study["model_comparisons"] == 12
    flat_rows = [r for r in study["rows"] if r["reward"] == "corrected"]
    assert all(r["model_change"] == pytest.approx(0, abs=1e-6) for r in study["rows"])
    assert all(r["model_signs_match"] for r in flat_rows)
    assert f"The model forecast's signs match in {study['model_matches']} of 12" in (
        study_table(study)
    )
    # A flat reward's pi_beta is the reference: KL 0, every gold row stands where it goes.
    for r in flat_rows:
        family = study["forecast"]["families"][r["family"]]
        model = family["model"]["corrected"]["0.1"]
        assert model["kl"] == pytest.approx(0, abs=1e-9)
        assert model["gold_support"] == pytest.approx(family["gold_n"])
        assert r["model_unchecked"] is False
    # The flat reward's six estimates meet the goal: all its 3000 samples are effective.
    assert study["where_oracle_met_goal"]["rows"] >= 6


def test_the_oracle_precision_needs_effective_samples():
    assert precise(0.004, 500, 0.005)
    assert not precise(0.006, 500, 0.005)
    assert not precise(0.0001, 1.2, 0.005)  # one dominant weight: an SE of ~0 means nothing


def test_compare_by_hand():
    fc = {"change": 0.1, "interval": [0.0, 0.2], "ess": 12.0, "abstain": False}
    forecast = {"families": {"dune": {"forecast": {"raw": {"0.1": fc, "0.05": fc}}}}}
    oracle = {
        "dune": {
            "n": 1000,
            "raw": {
                "0.1": {"change": 0.05, "se": 0.01, "se_reached": False, "ess": 500.0},
                "0.05": {"change": -0.2, "se": 0.004, "se_reached": False, "ess": 3.0},
            },
        }
    }
    rows = compare(forecast, oracle)
    assert [(r["beta"], r["signs_match"], r["oracle_sign_settled"]) for r in rows] == [
        (0.1, True, True),
        (0.05, False, False),  # 2 SE from 0, but on 3 effective samples: not settled
    ]


def test_the_mixture_weights_give_pi_beta_from_a_proposal():
    """Known answer on a discrete space: pi_beta ~ p * exp(r / beta) estimated from samples
    half of p and half of a proposal q, weighed by the mixture, is the exact tilted mean; with
    q = p the weights are exp(r / beta) exactly."""
    import numpy as np

    from tinyworld.studies.tilt import _normalised, proposal_log_weights
    from tinyworld.tilt.forecast import reweighted_mean

    rng = np.random.default_rng(0)
    r = np.array([0.0, 0.5, 1.0, 3.0])  # a heavy top: p almost never draws it
    y = np.array([0.2, 0.4, 0.6, 0.0])
    p = np.array([0.6, 0.3, 0.0999, 0.0001])
    q = np.array([0.1, 0.2, 0.3, 0.4])  # a proposal that goes where pi_beta is
    beta = 0.2
    exact = float((p * np.exp(r / beta) * y).sum() / (p * np.exp(r / beta)).sum())
    n = 40_000
    draws = np.concatenate([rng.choice(4, n, p=p), rng.choice(4, n, p=q)])
    log_w = proposal_log_weights(r[draws], beta, np.log(p[draws]), np.log(q[draws]))
    assert reweighted_mean(y[draws], _normalised(log_w)) == pytest.approx(exact, abs=0.005)
    same = proposal_log_weights(r[draws], beta, np.log(p[draws]), np.log(p[draws]))
    assert same == pytest.approx(r[draws] / beta)


def test_a_proposal_gives_the_oracle_more_effective_samples(small_world):
    """On the small world, an RL run as the proposal of the raw reward's pi_0.1: the estimate
    agrees with reweighting the reference's samples alone, on more effective samples."""
    from tinyworld.models import load_reward_model
    from tinyworld.studies.tilt import oracle_tilt
    from tinyworld.tilt.run import Rewards

    rewards = Rewards(load_reward_model(small_world / "reward_model"))
    fams = ("dune",)
    run = small_world / "runs" / "default-s800" / "checkpoint"
    plain = oracle_tilt(small_world, rewards, [0.1], max_n=4000, chunk=4000, families=fams)
    mixed = oracle_tilt(small_world, rewards, [0.1], max_n=4000, chunk=4000, families=fams,
                        proposals={("raw", 0.1): run})  # fmt: skip
    a, b = plain["dune"]["raw"]["0.1"], mixed["dune"]["raw"]["0.1"]
    assert b["proposal"] == str(run) and a["proposal"] is None
    assert b["ess"] > 2 * a["ess"]
    assert abs(a["quality"] - b["quality"]) < 4 * (a["se"] ** 2 + b["se"] ** 2) ** 0.5 + 0.01


def test_a_malformed_proposal_is_a_one_line_error():
    from pathlib import Path

    from rate.errors import ConfigError
    from tinyworld.studies.cli_forecasts import proposal_cells

    assert proposal_cells(["corrected:0.05=runs/x"]) == {("corrected", 0.05): Path("runs/x")}
    for bad in ("corrected=runs/x", "tilted:0.1=runs/x", "raw:-1=runs/x", "raw:0.1"):
        with pytest.raises(ConfigError, match="--proposal"):
            proposal_cells([bad])
