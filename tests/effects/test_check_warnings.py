"""The failed-rewrites warning: once per run, and never where effects.only_successful_rewrites
(the setting it recommends) is already on."""

from __future__ import annotations

from pathlib import Path

from rate.config import EffectsConfig
from rate.effects.stage import effects_for_rows
from rate.settings import setup_logging
from tests.factories import scored_rows

SAYS = "failed their checks"


def _rows() -> list[dict]:
    """40 rows scored by two reward models; 12 first and 10 second rewrites failed (> 20%)."""
    rows = scored_rows(n=40, key="a")
    for i, row in enumerate(rows):
        row["b"] = {k: v + 1.0 for k, v in row["a"].items()}
        row["checks"] = {
            "rewrite": "missed_target" if i < 12 else "ok",
            "rewritten rewrite": "unchanged" if 20 <= i < 30 else "ok",
        }
    return rows


def _ec(key: str, only: bool) -> EffectsConfig:
    return EffectsConfig(
        dataset_name="d", concept="c", score=key, reward_key=key, n_bootstrap=0,
        only_successful_rewrites=only,
    )  # fmt: skip


def test_no_warning_when_only_successful_rewrites_is_on(caplog):
    with caplog.at_level("WARNING"):
        kept = effects_for_rows(_rows(), _ec("a", True), Path("d.jsonl"))
    assert not [n for n in kept["notes"] if SAYS in n]
    assert SAYS not in caplog.text
    assert kept["input"]["only_successful_rewrites"]["kept"] == 18
    # With it off, the warning recommends it, once per failing pass.
    with caplog.at_level("WARNING"):
        every = effects_for_rows(_rows(), _ec("a", False), Path("d.jsonl"))
    assert len([n for n in every["notes"] if SAYS in n]) == 2
    assert "set effects.only_successful_rewrites: true" in caplog.text


def test_each_warning_once_per_run(tmp_path, restore_root_logger):
    """A run that estimates one dataset with two reward models, on all examples and on those
    whose rewrites passed (as `rate demo-text` does): each failing pass is warned about once."""
    log = tmp_path / "run.log"
    setup_logging("INFO", log_file=log, stderr_level="CRITICAL")
    for key in ("a", "b"):
        for only in (False, True):
            effects_for_rows(_rows(), _ec(key, only), Path("d.jsonl"))
    text = log.read_text()
    assert text.count(SAYS) == 2
    assert text.count("12 of 40 'rewrite' rewrites") == 1
    assert text.count("10 of 40 'rewritten rewrite' rewrites") == 1
    assert text.count("only successful rewrites: kept 18 of 40") == 2  # info lines all kept
    # The next run (logging set up again) warns again.
    setup_logging("INFO", log_file=log, stderr_level="CRITICAL")
    effects_for_rows(_rows(), _ec("a", False), Path("d.jsonl"))
    assert log.read_text().count(SAYS) == 4
