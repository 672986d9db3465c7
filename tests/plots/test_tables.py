"""The effects summary table shows each pass's rewrite-success rate."""

from __future__ import annotations

from pathlib import Path

from rate.config import EffectsConfig
from rate.effects.stage import effects_for_rows
from rate.io import json_safe
from rate.plots.tables import effects_summary_table
from tests.factories import scored_rows


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_the_summary_table_shows_the_share_of_rewrites_that_passed_their_checks():
    rows = scored_rows(n=40)
    # 3 of 40 first-pass rewrites unchanged, 1 of 40 second-pass ones refused.
    for i in (0, 5, 9):
        rows[i]["checks"]["rewrite"] = "unchanged"
    rows[7]["checks"]["rewritten rewrite"] = "refusal"
    ec = EffectsConfig(dataset_name="toy", concept="c", score="rm", reward_key="rm", n_bootstrap=0)
    e = json_safe(effects_for_rows(rows, ec, Path("toy.jsonl")))
    e.update(dataset_name="toy", concept="c", score="rm")
    old = {k: v for k, v in e.items() if k != "rewrite_checks"}  # made before checks existed
    header, _, line, line_old = effects_summary_table([e, old]).strip().split("\n")
    names = _cells(header)
    first, second = (
        names.index("rewrite: passed checks (of all rewrites)"),
        names.index("rewritten rewrite: passed checks (of all rewrites)"),
    )
    assert (_cells(line)[first], _cells(line)[second]) == ("37/40 (92.5%)", "39/40 (97.5%)")
    assert (_cells(line_old)[first], _cells(line_old)[second]) == ("n/a", "n/a")
