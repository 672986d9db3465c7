"""An estimate that is exactly 0 because no rewrite changed the score says so: in the effect
file, `rate results`, the demo's table, effects_summary.md and the figures."""

from __future__ import annotations

import numpy as np

from rate.demos.text import text_table
from rate.effects.estimators import Scores
from rate.effects.stage import clean, compute_effects
from rate.io import atomic_write_json
from rate.plots.figures import effects_figure
from rate.plots.tables import effects_summary_table
from rate.results.table import results_rows

RATE = ("ATT_rewritten_rewrite", "ATU_rewritten_rewrite", "ATE_rewritten_rewrite")
SAYS = "no rewrite changed the score"


def _effects(cancel: bool = False) -> dict:
    """Scores where the rewrite of each rewrite scores exactly as the rewrite (VADER on the
    length rules' neutral sentences); ``cancel``: differences of +-0.5 that average to 0."""
    rng = np.random.default_rng(0)
    n = 40
    w = np.arange(n) % 2 == 0
    o, r = rng.normal(size=n), rng.normal(size=n)
    rr = r + (np.where(np.arange(n) % 4 < 2, 0.5, -0.5) if cancel else 0.0)
    e = clean(compute_effects(Scores(w, o, r, rr), None, 0, 0, 0.95, 1))
    e.update(dataset_name="d", concept="length", score="vader", reward_key="vader")
    return e


def test_the_effect_file_says_which_zeros_no_rewrite_changed(tmp_path):
    e = _effects()
    assert [e[k] for k in RATE] == [0.0] * 3 and e["ATE_rewritten_rewrite_stderr"] == 0.0
    assert sorted(e["no_score_change"]) == sorted(RATE)
    assert any(SAYS in n for n in e["notes"])
    # A mean of 0 over differences that are not all 0 is a measurement: nothing to say.
    cancelled = _effects(cancel=True)
    assert cancelled["ATE_rewritten_rewrite"] == 0.0 and cancelled["no_score_change"] == []
    assert not any(SAYS in n for n in cancelled["notes"])


def test_rate_results_notes_the_rows(tmp_path):
    e = _effects()
    old = {k: v for k, v in e.items() if k != "no_score_change"}  # made before the key
    for name, data in (("new.json", e), ("old.json", old)):
        atomic_write_json(tmp_path / name, data)
        notes = {r["estimator"]: r["note"] for r in results_rows([tmp_path / name])}
        assert {k for k, v in notes.items() if v} == set(RATE), name
        assert all(notes[k] == SAYS for k in RATE)


def test_the_demo_table_the_summary_and_the_figure_say_so():
    e = _effects()
    passed = e | {"input": {"only_successful_rewrites": {"kept": 40}}}
    table = text_table([{"template": "t", "scorer": "VADER compound", "all": e, "passed": passed}])
    line = table.splitlines()[2]
    assert f"+0.000 (0.000), {SAYS} |" in line  # all examples
    assert f"+0.000 (0.000), {SAYS} (40) |" in line  # those whose rewrites passed
    summary = effects_summary_table([e])
    assert f"0 ({SAYS})" in summary.splitlines()[2]
    fig = effects_figure([e], normalized=False)
    assert [t.get_text() for t in fig.axes[0].texts] == [SAYS]
    # Not where the zero is a measurement.
    assert SAYS not in text_table([{"template": "t", "scorer": "v", "all": _effects(True),
                                    "passed": None}])  # fmt: skip
