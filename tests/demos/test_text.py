"""`rate demo-text --smoke` end to end through the real command: drug reviews, rule-based
rewrites, MiniLM and VADER, effects and the rewrite checks."""

from __future__ import annotations

import json

from tests.helpers import run_rate


def test_demo_text_smoke(tmp_path):
    project = tmp_path / "p"
    out = run_rate(["demo-text", "--smoke"], project)
    text = out.stdout
    assert "| drugreview_sentiment (" in text and "| drugreview_length (" in text
    assert text.count("| MiniLM sentiment |") == 2 and text.count("| VADER compound |") == 2
    assert "Rewrite checks:" in text
    # One success figure, its denominator named; each warning once per run, and none for the
    # runs that keep only the examples whose rewrites passed (2 failing passes, 2 scorers).
    assert "| passed checks (of all rewrites) |" in text
    assert out.stderr.count("failed their checks") == 2
    # VADER scores the length rules' neutral sentences alike: the zero says why.
    assert "no rewrite changed the score" in text
    rewrites = sorted((project / "data" / "rewrites").glob("drugreview_sentiment_*_test.json"))
    assert len(rewrites) == 1 and rewrites[0].name.endswith("_smoke_test.json")
    data = json.loads(rewrites[0].read_text())
    assert len(data) == 60  # the smoke size, exactly
    meta = json.loads(rewrites[0].with_name(rewrites[0].name + ".meta.json").read_text())
    checks = meta["rewrite_checks"]["rewrite"]
    # Labels in the file agree with the counts in the metadata.
    labels = [row["checks"]["rewrite"] for row in data.values()]
    assert labels.count("ok") == checks["ok"] and len(labels) == checks["n"] == 60
    assert 0.5 < checks["passing"] < 1.0  # antonym rules miss some reviews
    # Length rewrites reach their target by construction: every check passes.
    length = sorted((project / "data" / "rewrites").glob("drugreview_length_*_test.json"))[0]
    length_meta = json.loads(length.with_name(length.name + ".meta.json").read_text())
    assert length_meta["rewrite_checks"]["rewrite"]["passing"] == 1.0
    assert length_meta["w_classifier_fitted"]["threshold"] > 0  # the median, recorded
    effects = sorted(
        (project / "effects").glob("drugreview_sentiment_sentiment_passed_*_test.json")
    )
    kept = json.loads(effects[0].read_text())["input"]["only_successful_rewrites"]
    assert kept["kept"] < 60 and sum(kept["dropped"].values()) == 60 - kept["kept"]


def test_text_table_says_when_too_few_rewrites_passed():
    """A weak rewriter (SmolLM2) may leave fewer than two examples whose rewrites passed: the
    table shows n/a there instead of an estimate."""
    from rate.demos.text import text_table
    from rate.effects.estimators import estimator

    names = [estimator(m, "ATE").name for m in ("naive", "single_rewrite", "rate")]
    a = (
        {"Y1_count": 3, "Y0_count": 1}
        | {n: 0.5 for n in names}
        | {f"{n}_stderr": 0.1 for n in names}
    )
    p = a | {"input": {"only_successful_rewrites": {"kept": 2}}}
    rows = [
        {"template": "t", "scorer": "VADER compound", "all": a, "passed": None},
        {"template": "u", "scorer": "VADER compound", "all": a, "passed": p},
    ]
    lines = text_table(rows).splitlines()
    assert lines[2] == (
        "| t (3/1) | VADER compound | +0.500 (0.100) | +0.500 (0.100) | +0.500 (0.100) | "
        "n/a (< 2) |"
    )
    assert lines[3].endswith("| +0.500 (0.100) | +0.500 (0.100) (2) |")
    # One example in an arm: no standard error, the estimate alone.
    rows[0]["all"] = a | {f"{names[0]}_stderr": None}
    assert (
        text_table(rows[:1])
        .splitlines()[2]
        .startswith("| t (3/1) | VADER compound | +0.500 (n/a) |")
    )
