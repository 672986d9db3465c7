"""Normalised effects say what they divide by (the pooled within-group SD of the original
scores, the reference's reward_std), with the effect in SDs of all original scores beside, in
the effect file and in every reader: `rate results`, the figures, effects_summary.md and the
sweep report."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rate.effects.estimators import Scores
from rate.effects.stage import clean, compute_effects
from rate.io import atomic_write_json
from rate.plots.figures import effects_figure, rewrite_bias_figure
from rate.plots.tables import effects_summary_table
from rate.results.table import results_rows
from rate.sweep.report import cell_row, markdown

NAIVE, RATE = "naive_effect", "ATE_rewritten_rewrite"


def _vader_like(n: int = 200, seed: int = 0) -> Scores:
    """A bounded score (in [-1, 1]) that W nearly decides, as VADER on reviews split by their
    rating: each group's scores bunched near +-0.7, so the SD within groups is about a fifth of
    the SD of all of them."""
    rng = np.random.default_rng(seed)
    w = np.arange(n) < n // 2
    sign = np.where(w, 1.0, -1.0)
    o = np.clip(0.7 * sign + rng.normal(0, 0.15, n), -1, 1)
    r = np.clip(o - 1.2 * sign + rng.normal(0, 0.1, n), -1, 1)
    rr = np.clip(r + 1.0 * sign + rng.normal(0, 0.1, n), -1, 1)
    return Scores(w, o, r, rr)


@pytest.fixture(scope="module")
def effects() -> dict:
    e = clean(compute_effects(_vader_like(), None, 0, 0, 0.95, 1))
    e.update(dataset_name="reviews", concept="sentiment", score="vader", reward_key="vader")
    return e


def test_the_effect_file_gives_the_effect_in_sds_of_all_original_scores(effects):
    s = _vader_like()
    assert effects["reward_std_all"] == pytest.approx(float(np.std(s.original, ddof=1)))
    assert effects["reward_std"] < effects["reward_std_all"] / 3
    naive = effects[NAIVE]
    within, overall = effects["normalized"][NAIVE], effects["normalized_all"][NAIVE]
    assert within == pytest.approx(naive / effects["reward_std"])
    assert overall == pytest.approx(naive / effects["reward_std_all"])
    # The reading: about 9 within-group SDs, under 2 SDs of all the scores.
    assert within > 7 and 1 < overall < 2.5


def test_rate_results_has_both_scales_and_reads_files_made_before(tmp_path, effects):
    path = tmp_path / "new.json"
    atomic_write_json(path, effects)
    old = {k: v for k, v in effects.items() if k not in ("reward_std_all", "normalized_all")}
    atomic_write_json(tmp_path / "old.json", old)
    new_row, old_row = (
        next(r for r in results_rows([p]) if r["estimator"] == NAIVE)
        for p in (path, tmp_path / "old.json")
    )
    assert new_row["normalized"] == pytest.approx(effects["normalized"][NAIVE])
    assert new_row["normalized_all"] == pytest.approx(effects["normalized_all"][NAIVE])
    assert new_row["reward_std_all"] == effects["reward_std_all"]
    assert old_row["normalized_all"] is None and old_row["reward_std_all"] is None
    assert old_row["normalized"] == new_row["normalized"]


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_the_normalised_axis_names_its_sd_and_each_row_gives_the_other(effects):
    fig = effects_figure([effects], normalized=True)
    (ax,) = fig.axes
    label = " ".join(ax.get_xlabel().split())
    assert "reward_std" in label and "pooled within-group SD of the original scores" in label
    overall = effects["normalized_all"]
    note = f"÷ SD of all original scores: naive {overall[NAIVE]:+.2f}, RATE {overall[RATE]:+.2f}"
    assert note in _texts(fig)
    assert not any("SD of all" in t for t in _texts(effects_figure([effects], normalized=False)))
    bias = rewrite_bias_figure(effects)
    assert "pooled within-group SD" in " ".join(bias.axes[0].get_xlabel().split())
    assert sum("÷ SD of all original scores: single" in t for t in _texts(bias)) == 3
    # A file made before the SD of all scores was recorded: no note, no error.
    old = {k: v for k, v in effects.items() if k not in ("reward_std_all", "normalized_all")}
    assert not any("SD of all" in t for t in _texts(effects_figure([old], normalized=True)))


def test_the_summary_table_names_both_sds(effects):
    header, _, line = effects_summary_table([effects]).strip().split("\n")
    names = [c.strip() for c in header.strip("|").split("|")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    within = names.index("RATE ATE ÷ reward_std (within-group SD)")
    overall = names.index("RATE ATE ÷ SD of all originals")
    assert cells[within] == f"{effects['normalized'][RATE]:.4g}"
    assert cells[overall] == f"{effects['normalized_all'][RATE]:.4g}"
    assert cells[names.index("SD of all originals")] == f"{effects['reward_std_all']:.4g}"


def test_the_sweep_report_names_its_sd_and_gives_the_other(effects):
    cell = SimpleNamespace(dataset="reviews", concept="sentiment", scorer="vader")
    row = cell_row(cell, effects, "e.json") | {"rank": 1, "p_holm": None, "p_bh": None}
    assert row["rate_all"] == pytest.approx(effects["normalized_all"][RATE])
    text = markdown("g", [row], [], 0.95)
    assert "reward SDs" not in text
    assert "pooled within-group SD of the original scores" in text
    header, _, line = text.split("\n")[4:7]
    assert "RATE ÷ SD of all originals" in header
    assert f"{effects['normalized_all'][RATE]:+.3f}" in line
