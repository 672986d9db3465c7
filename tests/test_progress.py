"""Progress: a bar with the time left for every long step (the world build, the MiniLM head
fit, each model load), and nothing on stderr when progress is off, transformers' bars too."""

from __future__ import annotations

import io
import os
import sys

import pytest
from transformers import AutoModelForSequenceClassification

from rate import progress
from rate.hf_models import load_pretrained
from tests.score.test_hf import distilbert


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as a user's is (tqdm hides bars otherwise)."""

    def isatty(self) -> bool:
        return True


def terminal(monkeypatch) -> Terminal:
    """Set in the test's body: pytest's capture replaces sys.stderr after fixtures ran."""
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    return term


def test_steps_show_each_step_done_and_the_time_left(monkeypatch):
    stderr = terminal(monkeypatch)
    monkeypatch.setenv("RATE_PROGRESS", "1")
    with progress.steps("job", ["first", "second"]) as step:
        step("first")
        step("second")
    text = stderr.getvalue()
    assert "job" in text and "first" in text and "second" in text
    assert "1/2 [" in text and "<" in text  # tqdm's [elapsed<left]


@pytest.mark.parametrize("on", [True, False])
def test_a_model_load_has_a_bar_and_transformers_bar_follows_ours(tmp_path, on, monkeypatch):
    folder = distilbert(tmp_path / "tiny_db")
    stderr = terminal(monkeypatch)
    monkeypatch.setenv("RATE_PROGRESS", "1" if on else "0")
    load_pretrained(AutoModelForSequenceClassification, str(folder), "the key", "cpu", "float32")
    text = stderr.getvalue()
    assert ("load tiny_db" in text) is on
    assert ("Loading weights" in text) is on
    assert on or text == ""


def test_transformers_bar_is_hidden_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    folder = distilbert(tmp_path / "tiny_db")
    monkeypatch.setenv("RATE_PROGRESS", "1")
    log = io.StringIO()  # a log file, a SLURM job's output
    monkeypatch.setattr(sys, "stderr", log)
    load_pretrained(AutoModelForSequenceClassification, str(folder), "the key", "cpu", "float32")
    assert log.getvalue() == ""


def test_quiet_silences_progress(monkeypatch, tmp_path):
    from rate.cli import main

    monkeypatch.setenv("RATE_PROGRESS", "1")
    monkeypatch.chdir(tmp_path)
    assert main(["-q", "config", "--markdown"]) == 0
    assert os.environ["RATE_PROGRESS"] == "0" and not progress.enabled()


def test_the_minilm_head_fit_shows_its_progress(tmp_path, monkeypatch):
    stderr = terminal(monkeypatch)
    from rate.catalog import load_scoring_template
    from rate.score import minilm
    from rate.score.backends import build_scorer

    monkeypatch.setenv("RATE_PROGRESS", "1")
    monkeypatch.setenv("RATE_CACHE_DIR", str(tmp_path))  # no cached head: it is fitted
    reviews = {"train": (["good", "bad", "great", "awful"], [1, 0, 1, 0]),
               "test": (["fine", "poor"], [1, 0])}  # fmt: skip
    monkeypatch.setattr(minilm, "_labelled", lambda split: reviews[split])
    scorer = build_scorer(load_scoring_template("minilm_sentiment"))
    assert scorer.head_info["train_examples"] == 4
    text = stderr.getvalue()
    assert "minilm_sentiment head fit" in text and "/6 [" in text  # the 6 reviews embedded
    assert "load minilm encoder" in text


@pytest.mark.slow  # builds a small world (15 s on an idle machine)
def test_the_world_build_shows_its_stages(tmp_path, monkeypatch):
    stderr = terminal(monkeypatch)
    from tinyworld.build import build_world
    from tinyworld.worldconfig import load_world_config

    monkeypatch.setenv("RATE_PROGRESS", "1")
    config = load_world_config(small=True)
    build_world(config, tmp_path / "world")
    text = stderr.getvalue()
    n = 4 + len(config.runs)
    for name in (
        "sft",
        "reward model",
        "shortcut check",
        *(f"RL run {r.name}" for r in config.runs),
    ):
        assert name in text
    assert f"/{n} [" in text
