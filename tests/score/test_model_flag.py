"""`rate score_dataset --model ORG/NAME` or a folder: a sequence classifier without a scoring
template, with the hf_classifier defaults, as reward-bench's --model takes one."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rate.catalog import load_config, model_template, scoring_template_of
from rate.io import read_json
from rate.score.backends import build_scorer
from rate.score.options import HFClassifierOptions
from tests.factories import SMOKE, english_examples, mini_project
from tests.helpers import run_rate
from tests.score.test_hf import distilbert

ARGS = ["--config", str(SMOKE), "--set", "scoring.dataset_name=mini"]


def test_a_folder_is_scored_without_a_template_with_the_generic_defaults(tmp_path):
    folder = distilbert(tmp_path / "tiny_db")
    project = tmp_path / "project"
    mini_project(project, n=8)
    out = run_rate(["score_dataset", *ARGS, "--model", str(folder), "--label", "1"], project)
    scored = Path(out.stdout.strip())
    assert scored.name.startswith("mini_tiny_db_smoke_test_scored_")
    rows = [json.loads(line) for line in scored.read_text().splitlines()]
    # The reference's reward key: the model as given; the scores are logit 1 of the model.
    reference = build_scorer(model_template(str(folder), label=1))
    examples = list(english_examples(8).values())
    texts = [ex["completions"]["original"] for ex in examples]
    expected = reference.score([ex["reward_question"] for ex in examples], texts)
    got = [row[str(folder)]["original"] for row in rows]
    assert got == pytest.approx(list(expected), abs=1e-6)
    meta = read_json(scored.with_name(scored.name + ".meta.json"))
    assert json.dumps(meta).count('"hf_classifier"') >= 1
    # Stage 3 takes its names from the same model: no effects key to set.
    effects = run_rate(
        ["treatment_effects", *ARGS, "--set", f"scoring.model={folder}",
         "--set", "effects.group_by=null", "--set", "effects.n_bootstrap=0"],
        project,
    )  # fmt: skip
    written = Path(effects.stdout.strip())
    assert written.name.startswith("mini_pa_tiny_db_treatment_effects_")
    assert read_json(written)["reward_key"] == str(folder)


def test_a_model_template_has_the_generic_defaults_and_the_flags(tmp_path):
    template = scoring_template_of("some-org/some_rm", chat=True, label=2)
    assert (template.name, template.reward_key, template.backend) == (
        "some_rm", "some-org/some_rm", "hf_classifier",
    )  # fmt: skip
    assert template.spec == HFClassifierOptions(model="some-org/some_rm", chat=True, label=2)
    assert scoring_template_of("vader").backend == "vader"  # a template's name stays a template
    config = load_config(SMOKE, ["scoring.model=some-org/some_rm"])
    assert (config.effects.score, config.effects.reward_key) == ("some_rm", "some-org/some_rm")


def test_a_hub_id_offline_fails_at_once_saying_what_to_do(tmp_path):
    project = tmp_path / "project"
    mini_project(project, n=4)
    out = run_rate(
        ["score_dataset", *ARGS, "--model", "some-org/some-reward-model"],
        project, check=False, HF_HUB_OFFLINE="1",
    )  # fmt: skip
    assert out.returncode == 2
    assert "cannot load 'some-org/some-reward-model' from the Hugging Face Hub" in out.stderr
    assert "--model" in out.stderr and "local folder" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9", "https://hub.invalid"])
def test_a_hub_id_on_a_machine_without_the_hub_fails_in_seconds_without_hf_hub_offline(
    tmp_path, endpoint
):
    """Issue 45: offline without HF_HUB_OFFLINE, a hub model id took 49 s and 22 retry
    warnings to fail, and the message did not give the offline path's advice."""
    project = tmp_path / "project"
    mini_project(project, n=4)
    start = time.monotonic()
    out = run_rate(
        ["score_dataset", *ARGS, "--model", "some-org/some-reward-model"],
        project, check=False, HF_HUB_OFFLINE="", HF_DATASETS_OFFLINE="", HF_ENDPOINT=endpoint,
    )  # fmt: skip
    seconds = time.monotonic() - start
    assert out.returncode == 2, out.stderr
    assert "cannot load 'some-org/some-reward-model' from the Hugging Face Hub" in out.stderr
    assert "local folder" in out.stderr and "Traceback" not in out.stderr
    assert out.stderr.count("rate: error:") == 1 and "Retrying" not in out.stderr
    assert seconds < 30, seconds  # the interpreter and torch load too; the probe takes <= 4 s


def test_chat_and_label_need_a_model(tmp_path):
    out = run_rate(["score_dataset", *ARGS, "--chat"], tmp_path, check=False)
    assert out.returncode == 2 and "--chat and --label go with --model" in out.stderr
