"""One rewrite-success figure everywhere, with its denominator stated: the demos' checks table,
effects_summary.md and `rate results` give the same share of the same rewrites."""

from __future__ import annotations

from pathlib import Path

from rate.config import EffectsConfig
from rate.demos.runner import checks_table
from rate.effects.stage import effects_for_rows
from rate.io import atomic_write_json, json_safe
from rate.plots.tables import effects_summary_table
from rate.results.table import results_rows
from rate.rewrite.checks import summarize
from tests.factories import scored_rows

# The run: 41 of 60 first rewrites reached their target, 4 were left unchanged.
LABELS = ["ok"] * 41 + ["missed_target"] * 13 + ["undefined"] * 2 + ["unchanged"] * 4


def test_the_demo_summary_and_results_agree_on_the_share_of_all_rewrites(tmp_path):
    counts = summarize(LABELS)
    demo = checks_table([{"template": "t", "checks": {"rewrite": counts}}])
    header, _, line = demo.splitlines()
    assert "of all rewrites" in header
    assert "| 41/60 (68.3%) |" in line and "73.2%" not in demo

    rows = scored_rows(n=60)
    for row, label in zip(rows, LABELS, strict=True):
        row["checks"] = {"rewrite": label, "rewritten rewrite": "ok"}
    ec = EffectsConfig(dataset_name="t", concept="c", score="rm", reward_key="rm", n_bootstrap=0)
    effects = json_safe(effects_for_rows(rows, ec, Path("t.jsonl")))
    summary = effects_summary_table([effects])
    assert "rewrite: passed checks (of all rewrites)" in summary.splitlines()[0]
    assert "| 41/60 (68.3%) |" in summary.splitlines()[2]

    atomic_write_json(tmp_path / "e.json", effects)
    row = results_rows([tmp_path / "e.json"])[0]
    assert row["rewrite_success"] == 41 / 60 and counts["passing"] == round(41 / 60, 4)
