"""The profile benchmark's bookkeeping (nothing timed): texts computed per attribute read from
the scored files' records, and the section's totals and ratios by hand."""

from __future__ import annotations

import json

import pytest

from benchmarks.profile import render_profile, scored_counts


def _meta(folder, name, texts, cached, seconds):
    folder.mkdir(parents=True, exist_ok=True)
    record = {"texts_scored": texts, "texts_from_cache": cached, "seconds": seconds}
    (folder / f"{name}_scored_20261207_000000.jsonl.meta.json").write_text(json.dumps(record))


def test_counts_from_the_records_and_the_section_by_hand(tmp_path):
    scored = tmp_path / "data" / "scored"
    _meta(scored, "emoji_out_1234_minilm_sentiment", 30, 0, 3.0)  # the first: all computed
    _meta(scored, "emphasis_out_1234_minilm_sentiment", 30, 18, 1.0)  # emoji_ must not match
    counts = scored_counts(tmp_path, ["emoji", "emphasis"])
    assert counts["emoji"] == {"texts": 30, "from_cache": 0, "computed": 30, "scoring_s": 3.0}
    assert counts["emphasis"]["computed"] == 12
    with pytest.raises(AssertionError, match="no scored file of \\['length'\\]"):
        scored_counts(tmp_path, ["emoji", "emphasis", "length"])
    full = {"texts": 30, "from_cache": 0, "computed": 30, "scoring_s": 4.0}
    figures = {
        "profile_scorer": "minilm_sentiment",
        "profile_n": 10,
        "profile_attributes": ["emoji", "emphasis"],
        "profile_bound": 50,  # 10 x (1 + 2 x 2)
        "profile_wall_s": {"before": 10.0, "after": 14.0},
        "profile_separate_wall_s": 36.0,
        "profile_counts": counts,
        "profile_scoring_s": {"before": 4.0, "after": 4.0},
        "profile_separate_counts": {"emoji": full, "emphasis": full},
    }
    text = "\n".join(render_profile(figures, "2026-12-07"))
    # 42 computed against 60; scoring 4 s (mean) against 8 s; wall 12 s (mean) against 36 s.
    assert "| texts the scorer computed (bound N x (1 + 2A) = 50) | 42 | 60 | 1.43x |" in text
    assert "| scoring stage, summed over the attributes | 4 s | 8 s | 2.00x |" in text
    assert "| wall time, end to end | 12 s | 36 s | 3.00x |" in text
    assert "| emphasis | 30 / 18 / 12 | 30 / 0 / 30 |" in text
