"""`rate world tilt` end to end on the small world, with its truth removed."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.helpers import run_rate
from tinyworld.data import load_labelled
from tinyworld.models import load_reward_model
from tinyworld.sampling import score
from tinyworld.vocab import FAMILIES

ZERO_WRAPPER = "def transform(records, response_tokens, rewards):\n    return rewards * 0.0\n"


def test_the_tilt_command_forecasts_from_gold_without_the_truth(small_world, tmp_path):
    blind = tmp_path / "w"
    shutil.copytree(small_world, blind)
    shutil.rmtree(blind / "truth")
    wrapper = tmp_path / "zero.py"
    wrapper.write_text(ZERO_WRAPPER)
    out = tmp_path / "out"
    run_rate(
        ["world", "tilt", "--world", str(blind), "--wrapper", str(wrapper),
         "--beta", "0.1", "0.05", "--tail-samples", "300", "--model-samples", "100",
         "--out", str(out)],
        tmp_path,
    )  # fmt: skip
    analysis = json.loads((out / "tilt.json").read_text())
    report = (out / "tilt.md").read_text()
    assert "| dune | corrected | 0.05 |" in report
    assert "Model forecast: the gold-calibrated corrected reward" in report
    for fam in FAMILIES:
        assert (out / f"qq_{fam}.png").read_bytes()[:4] == b"\x89PNG"
    gold = load_labelled(blind / "data" / "gold_calib.jsonl")
    r = score(load_reward_model(blind / "reward_model"), gold.tokens, gold.responses).double()
    for f, fam in enumerate(FAMILIES):
        row = analysis["families"][fam]
        m = (gold.families == f).numpy()
        y, rf = gold.labels.double().numpy()[m], r.numpy()[m]
        for b in ("0.1", "0.05"):
            # The raw forecast is the gold labels reweighted by exp(r / beta), by hand.
            w = np.exp((rf - rf.max()) / float(b))
            raw = row["forecast"]["raw"][b]
            assert raw["forecast"] == pytest.approx((w * y).sum() / w.sum(), abs=2e-6)
            assert raw["ess"] == pytest.approx(w.sum() ** 2 / (w**2).sum(), abs=2e-3)
            assert raw["abstain"] == (raw["ess"] < 10 or raw["mass_beyond_gold"] > 0.5)
            # A flat corrected reward tilts nothing: no change, every gold row counts.
            flat = row["forecast"]["corrected"][b]
            assert flat["change"] == pytest.approx(0, abs=1e-6)
            assert flat["ess"] == pytest.approx(m.sum())
            assert flat["mass_beyond_gold"] == 0
            # The model forecast calibrates gold labels on the corrected reward: flat, so its
            # line is the gold mean, and pi_beta of either reward changes nothing by it.
            for kind in ("raw", "corrected"):
                model = row["model"][kind][b]
                assert model["line"] == pytest.approx([y.mean(), 0.0], abs=1e-6)
                assert model["change"] == pytest.approx(0, abs=1e-6)
                assert model["n"] == 4 * 100  # four rungs of the ladder
            # The flat reward leans no proposal: every guided sample weighs the same.
            assert row["model"]["corrected"][b]["ess"] == pytest.approx(400, abs=0.1)
            assert row["model"]["raw"][b]["ess"] < 400
        assert row["tail"]["raw"]["n"] == 300
        assert row["tail"]["raw"]["weights"]["0.1"]["k"] == 17  # floor(sqrt(300))
        assert len(row["tail"]["raw"]["qq_exponential"]["empirical"]) == 17


def test_the_tilt_command_refuses_a_bad_beta(small_world, tmp_path):
    out = run_rate(
        ["world", "tilt", "--world", str(small_world), "--beta", "0", "--out", str(tmp_path)],
        tmp_path,
        check=False,
    )
    assert out.returncode != 0
    assert "argument --beta: must be > 0 and <= 1000000" in out.stderr


def test_the_tilt_command_refuses_negative_model_samples(small_world, tmp_path):
    out = run_rate(
        ["world", "tilt", "--world", str(small_world), "--model-samples", "-1",
         "--out", str(tmp_path)],
        tmp_path,
        check=False,
    )  # fmt: skip
    assert out.returncode != 0
    assert "argument --model-samples: must be >= 0 and <= 10000000" in out.stderr
    assert "Traceback" not in out.stderr
