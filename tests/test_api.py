"""The Python API: known answers from lists, arrays and DataFrames alike, a scored file as a
DataFrame, effect files as one DataFrame, the figures, and a light `import rate`."""

from __future__ import annotations

import json
import math
import re
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import rate
from rate.errors import ConfigError, DataFileError
from rate.io import atomic_write_json, json_safe
from tests.test_cli import loaded

# Hand-computed: W = 1, 0, 1, 0; scores of the original 1, 2, 3, 4; every rewrite 0, every
# rewrite of the rewrite 1. naive = mean(1, 3) - mean(2, 4) = -1, SE sqrt(2/2 + 2/2);
# single ATT = mean(1 - 0, 3 - 0) = 2, ATU = mean(-(2 - 0), -(4 - 0)) = -3, ATE = -0.5;
# RATE: +(1 - 0) for W=1 and -(1 - 0) for W=0: ATT 1, ATU -1, ATE 0 (SE sd(1,1,-1,-1)/2).
W = [True, False, True, False]
ORIGINAL, REWRITE, REWRITTEN = [1.0, 2.0, 3.0, 4.0], [0.0] * 4, [1.0] * 4
EXPECTED = {
    "naive_effect": -1.0,
    "naive_effect_stderr": math.sqrt(2),
    "ATT_single_rewrite": 2.0,
    "ATU_single_rewrite": -3.0,
    "ATE_single_rewrite": -0.5,
    "ATT_rewritten_rewrite": 1.0,
    "ATU_rewritten_rewrite": -1.0,
    "ATE_rewritten_rewrite": 0.0,
    "ATE_rewritten_rewrite_stderr": math.sqrt(4 / 3) / 2,
    "Y1_count": 2,
    "Y0_count": 2,
}
FRAME = pd.DataFrame(
    {"w": W, "original": ORIGINAL, "rewrite": REWRITE, "rewritten_rewrite": REWRITTEN}
)


def _known(est: dict) -> None:
    for key, want in EXPECTED.items():
        assert est[key] == pytest.approx(want, abs=1e-12), key


def test_estimate_from_lists_arrays_and_a_dataframe_agree_with_the_hand_computed_values():
    from_lists = rate.estimate(w=W, original=ORIGINAL, rewrite=REWRITE, rewritten_rewrite=REWRITTEN)
    _known(from_lists)
    from_arrays = rate.estimate(
        w=np.array([1, 0, 1, 0]),
        original=np.array(ORIGINAL),
        rewrite=np.zeros(4),
        rewritten_rewrite=np.ones(4),
    )
    assert from_arrays == from_lists
    assert rate.estimate(FRAME) == from_lists
    assert (
        rate.estimate(
            {"w": W, "original": ORIGINAL, "rewrite": REWRITE, "rewritten_rewrite": REWRITTEN}
        )
        == from_lists
    )
    # A keyword beside the DataFrame replaces its column.
    assert rate.estimate(FRAME, rewrite=[1.0] * 4)["ATT_single_rewrite"] == pytest.approx(1.0)


def test_compute_effects_gives_intervals_and_the_truth():
    e = rate.compute_effects(FRAME, n_bootstrap=200, seed=1, level=0.9)
    _known(e)
    z = NormalDist().inv_cdf(0.95)
    se = EXPECTED["naive_effect_stderr"]
    assert e["intervals"]["level"] == 0.9
    assert e["intervals"]["normal"]["naive_effect"] == pytest.approx([-1 - z * se, -1 + z * se])
    lo, hi = e["intervals"]["bootstrap"]["ATT_single_rewrite"]
    assert 1.0 <= lo <= hi <= 3.0  # the mean of a resample of (1, 3)
    assert e["normalized"]["naive_effect"] == pytest.approx(-1 / e["reward_std"])
    assert "truth" not in e
    # The true counterfactual's scores: sign * (original - perfect) is 0.5, 1.0 (W=1) and
    # -(2 - 2.5) = 0.5, -(4 - 4) = 0 (W=0): ATT 0.75, ATU 0.25, ATE 0.5.
    perfect = [0.5, 2.5, 2.0, 4.0]
    truth = rate.compute_effects(FRAME.assign(perfect_rewrite=perfect), n_bootstrap=0)
    assert truth["truth"]["ATT"] == pytest.approx(0.75)
    assert truth["truth"]["ATU"] == pytest.approx(0.25)
    assert truth["truth"]["ATE"] == pytest.approx(0.5)
    assert truth["error_in_se"]["ATE_rewritten_rewrite"] == pytest.approx(
        (0.0 - 0.5) / EXPECTED["ATE_rewritten_rewrite_stderr"]
    )
    assert "bootstrap" not in truth["intervals"]


def test_placebo_scores_give_the_placebo_corrected_rate():
    # Placebo 0.5 for W=1, 0 for W=0: RATE-p = +(1 - 0.5) for W=1, -(1 - 0) for W=0.
    placebo = [0.5, 0.0, 0.5, 0.0]
    by_column = rate.estimate(FRAME.assign(placebo_rewrite=placebo))
    assert by_column == rate.estimate(FRAME, placebo_rewrite=placebo)
    assert by_column["ATT_rewritten_rewrite_placebo"] == pytest.approx(0.5)
    assert by_column["ATU_rewritten_rewrite_placebo"] == pytest.approx(-1.0)
    assert by_column["ATE_rewritten_rewrite_placebo"] == pytest.approx(-0.25)
    assert {k: v for k, v in by_column.items() if "placebo" not in k} == rate.estimate(FRAME)
    e = rate.compute_effects(FRAME, placebo_rewrite=placebo, n_bootstrap=20)
    assert "ATE_rewritten_rewrite_placebo" in e["intervals"]["bootstrap"]
    assert not [k for k in rate.compute_effects(FRAME, n_bootstrap=0) if "placebo" in k]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"w": [2, 0, 1, 0]}, "w: expected true/false or 1/0 values"),
        ({"original": [1.0, 2.0]}, "original: 2 values, but w has 4"),
        ({"rewrite": ["a", "b", "c", "d"]}, "rewrite: expected numbers"),
        ({"level": 1.5}, "level must be > 0 and < 1 (a finite number), got 1.5"),
    ],
)
def test_bad_input_says_which_argument(kwargs, message):
    given = {"w": W, "original": ORIGINAL, "rewrite": REWRITE, "rewritten_rewrite": REWRITTEN}
    given.update(kwargs)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rate.compute_effects(**given, n_bootstrap=0)
    with pytest.raises(ConfigError, match="rewritten_rewrite: missing"):
        rate.estimate(FRAME.drop(columns="rewritten_rewrite"))


def _scored_file(tmp_path):
    path = tmp_path / "toy_rm_scored_20260101_120000.jsonl"
    lines = []
    for i, (w, o, r, rr) in enumerate(zip(W, ORIGINAL, REWRITE, REWRITTEN, strict=True)):
        lines.append(
            {
                "index": str(i),
                "w_original": w,
                "completions": {"original": f"o{i}", "rewrite": f"r{i}", "rewritten rewrite": "x"},
                "reward_question": "q",
                "metadata": {"family": "dune" if i < 2 else "anvil"},
                "checks": {"rewrite": "ok", "rewritten rewrite": "unchanged" if i == 3 else "ok"},
                "rm": {"original": o, "rewrite": r, "rewritten rewrite": rr},
                "other": {"original": 0, "rewrite": 0, "rewritten rewrite": 0},
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_scored_file_loads_into_a_dataframe_that_estimates_the_same(tmp_path):
    path = _scored_file(tmp_path)
    df = rate.load_scored(path, reward_key="rm")
    assert list(df["index"]) == ["0", "1", "2", "3"]
    assert list(df["original"]) == ORIGINAL and list(df["w"]) == W
    assert list(df["text_rewrite"]) == ["r0", "r1", "r2", "r3"]
    assert list(df["check_rewritten_rewrite"]) == ["ok", "ok", "ok", "unchanged"]
    assert list(df["metadata.family"]) == ["dune", "dune", "anvil", "anvil"]
    assert "perfect_rewrite" not in df
    assert rate.estimate(df) == rate.estimate(FRAME)
    with pytest.raises(DataFileError, match="reward keys rm, other; say which"):
        rate.load_scored(path)
    with pytest.raises(DataFileError, match="no scores under reward_key 'nope'"):
        rate.load_scored(path, reward_key="nope")


def test_effect_files_load_into_one_dataframe_and_draw(tmp_path):
    folder = tmp_path / "effects"
    e = json_safe(rate.compute_effects(FRAME, n_bootstrap=50))
    e.update(dataset_name="toy", concept="c", score="rm", reward_key="rm")
    e["rewrite_checks"] = {
        "rewrite": {"success_rate": 0.75},
        "rewritten rewrite": {"success_rate": 1.0},
    }
    for name in (
        "toy_c_rm_treatment_effects_20260101_120000",
        "toy_c_rm_treatment_effects_20260102_120000_smoke_test",
    ):
        atomic_write_json(folder / f"{name}.json", e)
    df = rate.load_effects(project_dir=tmp_path)
    # A file without placebo scores has no rows for the placebo-corrected RATE.
    assert len(df) == 2 * sum(not e.optional for e in rate.ESTIMATORS)
    assert sorted(set(df["smoke_test"])) == [False, True]
    att = df[(df["estimator"] == "ATT_single_rewrite") & ~df["smoke_test"]].iloc[0]
    assert (att["estimate"], att["rewrite_success"], att["rewritten_rewrite_success"]) == (
        2.0,
        0.75,
        1.0,
    )
    assert len(rate.load_effects(project_dir=tmp_path, smoke=True, estimands=["ATE"])) == 3
    one = rate.load_effects(folder / "toy_c_rm_treatment_effects_20260101_120000.json")
    assert set(one["stamp"]) == {"20260101_120000"}
    fig = rate.plot_effects([e, folder / "toy_c_rm_treatment_effects_20260101_120000.json"])
    assert isinstance(fig, Figure) and isinstance(rate.plot_rewrite_bias(e), Figure)


def test_import_rate_is_light_and_exports_the_api():
    assert loaded("import rate") == []
    heavy = loaded(
        "import rate, sys; assert 'pandas' not in sys.modules and 'numpy' not in sys.modules"
    )
    assert heavy == []
    assert "torch" not in loaded("import rate; rate.estimate; rate.load_effects")
    assert {"load_scored", "estimate", "compute_effects", "load_effects", "plot_effects"} <= set(
        dir(rate)
    )
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rate.nope  # noqa: B018


def test_latest_takes_the_newest_stamp_then_the_highest_sequence(tmp_path, monkeypatch):
    e = json_safe(rate.compute_effects(FRAME, n_bootstrap=0))
    e.update(dataset_name="toy", concept="c", score="rm")
    for suffix in (
        "20260101_120000",
        "20260101_120000-2",
        "20260101_120000-10",
        "20251231_235959-11",
    ):
        atomic_write_json(tmp_path / "effects" / f"toy_c_rm_treatment_effects_{suffix}.json", e)
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path))  # as `rate` finds the project
    df = rate.load_effects(latest=True, groups=False)
    assert set(df["stamp"]) == {"20260101_120000-10"}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"n_bootstrap": "100"}, "n_bootstrap: expected an integer, got '100'"),
        ({"level": "0.9"}, "level: expected a number, got '0.9'"),
        ({"n_bootstrap": 10**8}, "n_bootstrap must be >= 0 and <= 1000000 (100,000,000 resamples"),
        ({"seed": -1}, "seed must be >= 0"),
        ({"level": float("nan")}, "level must be > 0 and < 1 (a finite number), got nan"),
    ],
)
def test_the_apis_arguments_are_checked_as_the_configs_settings(given, message):
    """Issue 45: API arguments of the wrong type raised TypeError naming nothing, and
    n_bootstrap=10**8 grew past 4.7 GB with no message."""
    scores = {"w": [1, 0, 1, 0], "original": [1.0, 2, 3, 4], "rewrite": [2.0, 1, 4, 3]}
    with pytest.raises(ConfigError, match=re.escape(message)):
        rate.compute_effects(**scores, rewritten_rewrite=[1.0, 2, 3, 4], **given)


def test_load_effects_reads_a_name_as_a_name_and_names_a_missing_folder(tmp_path):
    with pytest.raises(DataFileError, match="no such folder"):
        rate.load_effects(project_dir=tmp_path / "nonexistent")
    (tmp_path / "effects").mkdir()
    assert rate.load_effects(project_dir=tmp_path, estimands="ATE").empty
    with pytest.raises(ConfigError, match="estimands: give a name or a list of names"):
        rate.load_effects(project_dir=tmp_path, estimands=[1])
