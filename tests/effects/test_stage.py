"""treatment_effects on files: reference-format input, the truth, and every bad-input message."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rate.config import EffectsConfig
from rate.effects.estimators import Scores, estimate
from rate.effects.stage import (
    clean,
    effects_for_rows,
    errors_in_se,
    treatment_effects,
    true_effects,
)
from rate.errors import DataFileError
from rate.io import read_json, write_jsonl
from rate.records import read_examples
from rate.store import Layout
from tests.factories import STAMP, config, put, scored_rows


def ec(**kw) -> EffectsConfig:
    base = dict(dataset_name="d", concept="c", score="s", reward_key="ArmoRM", n_bootstrap=0)
    return EffectsConfig(**{**base, **kw})


def reference_rows(n: int = 40, seed: int = 0, key: str = "ArmoRM") -> list[dict]:
    """Rows as the published pipeline writes them: no index, scores under the model's key."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        w = bool(i % 3 == 0)
        o, r, rr = rng.normal(size=3)
        rows.append(
            {
                "w_original": w,
                "completions": {"original": "a", "rewrite": "b", "rewritten rewrite": "c"},
                "reward_question": "q",
                key: {"original": o, "rewrite": r, "rewritten rewrite": rr},
                "group": "g1" if i < 20 else "g2",
            }
        )
    return rows


def write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "scored.jsonl"
    write_jsonl(path, rows)
    return path


def test_reads_reference_scored_files(tmp_path):
    rows = reference_rows()
    path = write(tmp_path, rows)
    got = effects_for_rows(read_examples(path), ec(), path)
    w = np.array([r["w_original"] for r in rows])
    col = {
        k: np.array([r["ArmoRM"][k] for r in rows])
        for k in ("original", "rewrite", "rewritten rewrite")
    }
    want = estimate(Scores(w, col["original"], col["rewrite"], col["rewritten rewrite"]))
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12, nan_ok=True), key
    assert "truth" not in got  # no perfect rewrite in a real dataset
    assert got["input"]["n_used"] == 40


def test_true_effects_known_answer():
    # W=1: originals 3, 5 with perfect rewrites 1, 1 -> ATT = (2 + 4) / 2 = 3.
    # W=0: original 0 with perfect rewrite 2 -> ATU = 2. ATE = (2 + 4 + 2) / 3.
    s = Scores(
        np.array([True, True, False]),
        np.array([3.0, 5.0, 0.0]),
        np.zeros(3),
        np.zeros(3),
    )
    t = true_effects(s, np.array([1.0, 1.0, 2.0]))
    assert t["ATT"] == 3 and t["ATU"] == 2 and t["ATE"] == pytest.approx(8 / 3)
    assert t["ATT_stderr"] == pytest.approx(math.sqrt(2) / math.sqrt(2))  # sd of (2, 4) / sqrt 2
    est = {k: 1.0 for k in ("naive_effect", "ATT_single_rewrite", "ATU_single_rewrite")}
    est |= {k: 1.0 for k in ("ATE_single_rewrite", "ATT_rewritten_rewrite")}
    est |= {"ATU_rewritten_rewrite": 2.5, "ATE_rewritten_rewrite": 3.0}
    est |= {f"{k}_stderr": 0.5 for k in list(est)}
    err = errors_in_se(est, t)
    assert err["ATT_rewritten_rewrite"] == pytest.approx((1 - 3) / 0.5)
    assert err["ATU_rewritten_rewrite"] == pytest.approx((2.5 - 2) / 0.5)
    assert err["naive_effect"] == pytest.approx((1 - 8 / 3) / 0.5)


def test_missing_reward_key_lists_the_keys_present(tmp_path):
    path = write(tmp_path, reference_rows(key="SFairX"))
    with pytest.raises(
        DataFileError, match="no scores under reward_key 'ArmoRM'; reward keys present: SFairX"
    ):
        effects_for_rows(read_examples(path), ec(), path)


def test_missing_scores_are_counted_and_excluded_only_when_asked(tmp_path):
    rows = reference_rows()
    del rows[3]["ArmoRM"]["rewritten rewrite"]
    rows[7]["ArmoRM"]["rewrite"] = None
    path = write(tmp_path, rows)
    with pytest.raises(DataFileError) as err:
        effects_for_rows(read_examples(path), ec(), path)
    assert "2 of 40 examples lack a completion or its score" in str(err.value)
    assert "examples 3, 7" in str(err.value) and "drop_incomplete" in str(err.value)
    got = effects_for_rows(read_examples(path), ec(drop_incomplete=True), path)
    assert got["input"]["excluded"] == {"missing": 2, "non_finite": 0}
    assert got["Y1_count"] + got["Y0_count"] == 38


def test_non_finite_scores(tmp_path):
    rows = reference_rows()
    rows[5]["ArmoRM"]["original"] = float("nan")
    path = tmp_path / "scored.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")  # NaN as Python writes it
    with pytest.raises(DataFileError, match="1 of 40 examples have a non-finite score"):
        effects_for_rows(read_examples(path), ec(), path)


def test_one_w_value_gives_att_only_and_says_so(tmp_path):
    rows = [r for r in reference_rows() if r["w_original"]]
    path = write(tmp_path, rows)
    got = clean(effects_for_rows(read_examples(path), ec(n_bootstrap=50), path))
    assert got["Y0_count"] == 0 and isinstance(got["ATT_rewritten_rewrite"], float)
    for key in (
        "naive_effect",
        "ATE_rewritten_rewrite",
        "ATU_rewritten_rewrite",
        "ATE_single_rewrite",
    ):
        assert got[key] is None, key
    assert any("only ATT can be estimated" in n for n in got["notes"])
    json.dumps(got, allow_nan=False)  # valid JSON: no NaN


def test_effects_per_group(tmp_path):
    path = write(tmp_path, reference_rows())
    got = effects_for_rows(read_examples(path), ec(group_by="group"), path)
    assert set(got["groups"]) == {"g1", "g2"}
    assert got["groups"]["g1"]["Y1_count"] + got["groups"]["g1"]["Y0_count"] == 20
    with pytest.raises(DataFileError, match="has no field 'family'"):
        effects_for_rows(read_examples(path), ec(group_by="family"), path)


def test_bootstrap_intervals_are_seeded(tmp_path):
    path = write(tmp_path, reference_rows(200))
    a = effects_for_rows(read_examples(path), ec(n_bootstrap=300, bootstrap_seed=1), path)
    b = effects_for_rows(read_examples(path), ec(n_bootstrap=300, bootstrap_seed=1), path)
    c = effects_for_rows(read_examples(path), ec(n_bootstrap=300, bootstrap_seed=2), path)
    key = "ATE_rewritten_rewrite"
    assert a["intervals"]["bootstrap"][key] == b["intervals"]["bootstrap"][key]
    assert a["intervals"]["bootstrap"][key] != c["intervals"]["bootstrap"][key]
    lo, hi = a["intervals"]["normal"][key]
    assert hi - lo == pytest.approx(2 * 1.959964 * a[f"{key}_stderr"], rel=1e-5)


@pytest.mark.parametrize(
    ("value", "told"), [("high", "'rewrite': a string"), (True, "'rewrite': true/false")]
)
def test_a_score_that_is_not_a_number_is_told_as_such(tmp_path, value, told):
    """main reported a string or bool score as 'lacks a completion or its score'."""
    rows = reference_rows()
    rows[6]["ArmoRM"]["rewrite"] = value
    path = write(tmp_path, rows)
    with pytest.raises(DataFileError) as err:
        effects_for_rows(read_examples(path), ec(), path)
    message = str(err.value)
    assert (
        f"1 of 40 examples have a score that is not a number under 'ArmoRM' (examples 6 ({told}))"
        in message
    )
    assert "lack a completion" not in message and "drop_incomplete" in message


def test_scores_that_would_overflow_are_refused_naming_the_examples(tmp_path):
    """main: +-1.7e308 gave rc 0 with numpy overflow warnings and null SEs."""
    rows = reference_rows()
    rows[2]["ArmoRM"]["original"] = 1.7e308
    rows[9]["ArmoRM"]["rewrite"] = -1.7e308
    path = write(tmp_path, rows)
    with np.errstate(all="raise"):  # no overflow may happen on the way
        with pytest.raises(
            DataFileError, match=r"2 of 40 examples have a score beyond \+-1e\+100 .*examples 2, 9"
        ):
            effects_for_rows(read_examples(path), ec(), path)
        got = effects_for_rows(read_examples(path), ec(drop_incomplete=True), path)
    assert got["input"]["excluded"] == {"missing": 0, "non_finite": 2}
    assert math.isfinite(got["ATE_rewritten_rewrite_stderr"])


def test_latest_takes_the_dataset_named_not_one_whose_name_starts_the_same(tmp_path, monkeypatch):
    """main took a newer tinyrlhf_dune_pa_v2_scored_... for dataset tinyrlhf_dune_pa."""
    scored = tmp_path / "data" / "scored"
    put(scored / f"mini_scored_{STAMP}_smoke_test.jsonl", scored_rows(key="vader"))
    put(
        scored / "mini_v2_scored_20270101_000000_smoke_test.jsonl", scored_rows(seed=1, key="vader")
    )
    out = treatment_effects(config(), Layout(tmp_path))
    assert read_json(out)["dataset_filename"] == f"mini_scored_{STAMP}_smoke_test.jsonl"
    assert out.name.startswith("mini_pa_vader_treatment_effects_")


def test_integer_indices_of_another_tool_are_read_as_the_same_index(tmp_path):
    """Found by the property tests: a scored file with numbers for 'index' made the message
    about its missing scores a TypeError."""
    rows = reference_rows()
    for i, row in enumerate(rows):
        row["index"] = i
    del rows[4]["ArmoRM"]["rewrite"]
    path = write(tmp_path, rows)
    with pytest.raises(
        DataFileError,
        match=r"1 of 40 examples lack a completion or its score under 'ArmoRM' \(examples 4\)",
    ):
        effects_for_rows(read_examples(path), ec(), path)


@pytest.mark.parametrize("reader", ["rows", "columns"])
def test_failed_rewrites_beyond_the_threshold_are_reported_and_noted(tmp_path, reader, caplog):
    """Known answer: of 40 rows, 12 first-pass rewrites missed their target and 2 were empty
    (35% > 20%), 3 second-pass rewrites were refusals (7.5%): one note, for the first pass,
    and the success rates of both in the output."""
    from rate.columns import score_columns
    from rate.effects.stage import effects_for_columns

    rows = reference_rows(40)
    for i, row in enumerate(rows):
        first = "missed_target" if i < 12 else "empty" if i < 14 else "ok"
        row["checks"] = {"rewrite": first, "rewritten rewrite": "refusal" if i >= 37 else "ok"}
    path = write(tmp_path, rows)
    with caplog.at_level("WARNING"):
        if reader == "rows":
            result = effects_for_rows(read_examples(path), ec(), path)
        else:
            result = effects_for_columns(score_columns(path, "ArmoRM", None, True), ec(), path)
    checks = result["rewrite_checks"]
    assert checks["rewrite"] == {"checked": 40, "passed": 26, "success_rate": 0.65,
                                 "failed": {"missed_target": 12, "empty": 2}}  # fmt: skip
    assert checks["rewritten rewrite"]["success_rate"] == 0.925
    notes = [n for n in result["notes"] if "failed their checks" in n]
    assert len(notes) == 1 and notes[0].startswith("14 of 40 'rewrite' rewrites (35%)")
    assert notes[0] in caplog.text
    quiet = effects_for_rows(read_examples(path), ec(max_failed_rewrites=0.4), path)
    assert not [n for n in quiet["notes"] if "failed their checks" in n]
