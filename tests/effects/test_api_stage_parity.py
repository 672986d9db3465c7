"""One answer from both paths (issue 45): treatment_effects on a written scored file, and the
Python API (rate.load_scored -> rate.estimate, rate.compute_effects) on the same data, for
each edge case: the same numbers, or both null, or both refuse with a DataFileError that
names the problem and the examples."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import rate
from rate.effects.stage import treatment_effects
from rate.errors import DataFileError
from rate.io import json_safe, read_json
from rate.store import Layout
from tests.factories import STAMP, config, put, scored_rows

KEY = "vader"  # the reward key of the factories' config


def scored_file(root: Path, rows: list[dict]) -> Path:
    """The scored file that treatment_effects finds in project ``root`` (NaN written as
    Python writes it, as another tool may)."""
    return put(root / "data" / "scored" / f"mini_scored_{STAMP}_smoke_test.jsonl", rows)


def stage(root: Path, *overrides: str) -> dict:
    """The effects file treatment_effects writes for the scored file of ``root``."""
    return read_json(treatment_effects(config(*overrides), Layout(root)))


def same_answer(written: dict, path: Path, **api: object) -> None:
    """rate.estimate and rate.compute_effects on the loaded file give what was written: the
    same numbers bit for bit, NaN where the file has null, the same notes."""
    df = rate.load_scored(path, reward_key=KEY)
    est = json_safe(rate.estimate(df, **api))
    effects = json_safe(rate.compute_effects(df, n_bootstrap=0, **api))
    for key in est:  # every estimate, SE, count and diagnostic: all written by the stage
        assert est[key] == written[key], key
        assert effects[key] == written[key], key
    assert effects["normalized"] == written["normalized"]
    assert effects["intervals"]["normal"] == written["intervals"]["normal"]
    assert effects["notes"] == written["notes"]


def refused_alike(root: Path, path: Path, *problem: str) -> tuple[str, str]:
    """Both paths refuse with a DataFileError naming each of ``problem``; -> the messages."""
    with pytest.raises(DataFileError) as by_stage:
        stage(root)
    with pytest.raises(DataFileError) as by_api:
        rate.estimate(rate.load_scored(path, reward_key=KEY))
    with pytest.raises(DataFileError) as by_effects:
        rate.compute_effects(rate.load_scored(path, reward_key=KEY), n_bootstrap=0)
    assert str(by_effects.value) == str(by_api.value)
    for message in (str(by_stage.value), str(by_api.value)):
        assert "\n" not in message
        for words in problem:
            assert words in message, (words, message)
    return str(by_stage.value), str(by_api.value)


@pytest.mark.parametrize(("w", "only"), [(True, "ATT"), (False, "ATU")])
def test_one_w_value_gives_the_same_nulls_and_note(tmp_path, w, only, caplog):
    """main: rate.estimate gave an ATE (the one group's mean) where the stage writes null."""
    rows = scored_rows(12, key=KEY)
    for row in rows:
        row["w_original"] = w
    path = scored_file(tmp_path, rows)
    written = stage(tmp_path)
    for name in ("naive_effect", "ATE_rewritten_rewrite", "ATE_single_rewrite"):
        assert written[name] is None and written[f"{name}_stderr"] is None, name
    assert isinstance(written[f"{only}_rewritten_rewrite"], float)
    with caplog.at_level("WARNING", logger="rate.api.data"):
        same_answer(written, path)
    assert f"only {only} can be estimated" in caplog.text  # the reason, as the stage logs it
    assert math.isnan(rate.estimate(rate.load_scored(path))["ATE_rewritten_rewrite"])


def test_one_example_per_arm_gives_the_same_numbers(tmp_path):
    path = scored_file(tmp_path, scored_rows(2, key=KEY))
    written = stage(tmp_path)
    assert (written["Y1_count"], written["Y0_count"]) == (1, 1)
    assert isinstance(written["ATE_rewritten_rewrite"], float)
    assert written["ATT_rewritten_rewrite_stderr"] is None  # one example in the group: no SE
    same_answer(written, path)


def test_a_repeated_index_is_refused_by_both_naming_both_lines(tmp_path):
    """main: the repeated example was counted twice by both (another RATE ATE than the clean
    file's)."""
    rows = scored_rows(40, key=KEY)
    path = scored_file(tmp_path, [*rows, rows[2]])
    stage_says, api_says = refused_alike(
        tmp_path, path, "line 41 repeats index '2' of line 3", "each example appears once"
    )
    want = f"{path}: line 41 repeats index '2' of line 3; each example appears once: remove the"
    assert stage_says == api_says == f"{want} duplicate"
    # A DataFrame with an index column: the same refusal, by position.
    df = rate.load_scored(scored_file(tmp_path, rows), reward_key=KEY)
    doubled = pd.concat([df, df.iloc[[2]]], ignore_index=True)
    for api in (rate.estimate, rate.compute_effects):
        with pytest.raises(DataFileError, match="position 40 repeats index '2' of position 2"):
            api(doubled)


def test_a_nan_score_is_refused_by_both(tmp_path):
    rows = scored_rows(40, key=KEY)
    rows[5][KEY]["original"] = math.nan
    path = scored_file(tmp_path, rows)
    # The stage tells a NaN in the file from a missing score; a DataFrame cannot (NaN is its
    # missing value), so the API says "lack a score (NaN)".
    stage_says, api_says = refused_alike(tmp_path, path, "1 of 40 examples", "(examples 5)", "NaN")
    assert "non-finite score (NaN or infinity)" in stage_says
    assert "lack a score (NaN)" in api_says and "drop_incomplete=True" in api_says
    same_answer(stage(tmp_path, "effects.drop_incomplete=true"), path, drop_incomplete=True)


def test_a_missing_rewrite_is_refused_by_both(tmp_path):
    rows = scored_rows(40, key=KEY)
    del rows[3]["completions"]["rewrite"], rows[3][KEY]["rewrite"]
    path = scored_file(tmp_path, rows)
    stage_says, api_says = refused_alike(
        tmp_path, path, "1 of 40 examples lack a", f"under '{KEY}' (examples 3)"
    )
    assert "lack a completion or its score" in stage_says
    same_answer(stage(tmp_path, "effects.drop_incomplete=true"), path, drop_incomplete=True)


def test_scores_that_would_overflow_are_refused_by_both_with_the_stages_message(tmp_path):
    """main: the API took +-1e308 (a naive effect of inf) that the stage refuses."""
    rows = scored_rows(40, key=KEY)
    rows[2][KEY]["original"] = 1e308
    rows[9][KEY]["rewrite"] = -1e308
    path = scored_file(tmp_path, rows)
    problem = f"{path}: 2 of 40 examples have a score beyond +-1e+100"
    stage_says, api_says = refused_alike(tmp_path, path, problem, "(examples 2, 9)")
    # The same message up to the fix, which names each path's own switch.
    assert stage_says.split("; ")[0] == api_says.split("; ")[0]
    assert "effects.drop_incomplete: true" in stage_says
    with pytest.raises(DataFileError, match=r"the scores given: 1 of 2 examples have a score"):
        rate.estimate(w=[1, 0], original=[1e308, 0], rewrite=[0, 0], rewritten_rewrite=[0, 0])
    same_answer(stage(tmp_path, "effects.drop_incomplete=true"), path, drop_incomplete=True)


def test_an_empty_input_is_refused_by_both(tmp_path):
    path = scored_file(tmp_path, [])
    refused_alike(tmp_path, path, f"{path}: no examples")
    empty = pd.DataFrame({c: [] for c in ("w", "original", "rewrite", "rewritten_rewrite")})
    for api in (rate.estimate, rate.compute_effects):
        with pytest.raises(DataFileError, match="the scores given: no examples"):
            api(empty)
