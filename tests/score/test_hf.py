"""The Hugging Face classifier backend on tiny, randomly initialised models of real classes,
built and saved in the test: loading from a folder, chat formatting, batch invariance, hub
offline."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
import yaml

from rate.catalog import load_scoring_template
from rate.errors import TemplateError
from rate.score.backends import build_scorer
from tests.helpers import ROOT

WORDS = [
    "the",
    "a",
    "movie",
    "film",
    "good",
    "bad",
    "great",
    "awful",
    "plot",
    "actor",
    "boring",
    "fun",
    "long",
    "short",
    "very",
    "not",
]
CHAT = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> "
    "{% endfor %}"
)


def tokenizer(folder: Path, bos: str | None, padding_side: str):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<s>", "<|user|>", "<|assistant|>", "<|end|>"]
    vocab = {t: i for i, t in enumerate(specials + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A",
            pair=f"{bos} $A [SEP] $B:1",
            special_tokens=[(bos, vocab[bos]), ("[SEP]", vocab["[SEP]"])],
        )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        bos_token=bos,
        padding_side=padding_side,
    )
    fast.save_pretrained(folder)
    return fast


def distilbert(folder: Path) -> Path:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    tok = tokenizer(folder, "[CLS]", "right")
    torch.manual_seed(0)
    config = DistilBertConfig(
        vocab_size=len(tok), dim=32, hidden_dim=64, n_layers=2, n_heads=2, num_labels=2,
        max_position_embeddings=128, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    DistilBertForSequenceClassification(config).eval().save_pretrained(folder)
    return folder


def llama(folder: Path) -> Path:
    from transformers import LlamaConfig, LlamaForSequenceClassification

    tok = tokenizer(folder, "<s>", "left")
    tok.chat_template = CHAT
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_labels=1, max_position_embeddings=128,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
    )  # fmt: skip
    LlamaForSequenceClassification(config).eval().save_pretrained(folder)
    return folder


def gpt2(folder: Path) -> Path:
    """Absolute position embeddings with left padding: positions must follow the mask."""
    from transformers import GPT2Config, GPT2ForSequenceClassification

    tok = tokenizer(folder, None, "left")
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=128, num_labels=1,
        pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    GPT2ForSequenceClassification(config).eval().save_pretrained(folder)
    return folder


def deberta(folder: Path) -> Path:
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    tok = tokenizer(folder, "[CLS]", "right")
    torch.manual_seed(0)
    config = DebertaV2Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_labels=1, max_position_embeddings=128,
        pad_token_id=tok.pad_token_id, type_vocab_size=0,
    )  # fmt: skip
    DebertaV2ForSequenceClassification(config).eval().save_pretrained(folder)
    return folder


ARMO_CODE = '''"""An ArmoRM-like reward model: Llama body, multi-objective head, gated `score` output."""
from dataclasses import dataclass

import torch
from torch import nn
from transformers import LlamaConfig, LlamaModel, LlamaPreTrainedModel
from transformers.utils import ModelOutput


class ArmoTinyConfig(LlamaConfig):
    model_type = "armo_tiny"

    def __init__(self, num_objectives=3, **kwargs):
        self.num_objectives = num_objectives
        super().__init__(**kwargs)


@dataclass
class ArmoTinyOutput(ModelOutput):
    rewards: torch.FloatTensor = None
    gating_output: torch.FloatTensor = None
    score: torch.FloatTensor = None


class ArmoTinyRewardModel(LlamaPreTrainedModel):
    config_class = ArmoTinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.regression_layer = nn.Linear(config.hidden_size, config.num_objectives)
        self.gating = nn.Linear(config.hidden_size, config.num_objectives)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # As ArmoRM does: the last token is the one before the first pad token.
        last = torch.eq(input_ids, self.config.pad_token_id).int().argmax(-1) - 1
        last = last % input_ids.shape[-1]
        h = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        rewards = self.regression_layer(h)
        gate = torch.softmax(self.gating(h), dim=-1)
        score = (rewards * gate).sum(-1, keepdim=True)
        return ArmoTinyOutput(rewards=rewards, gating_output=gate, score=score)
'''


def armo(folder: Path) -> Path:
    """ArmoRM's shape: its own modeling file, loaded with trust_remote_code; `score` output,
    no `logits`; a tokenizer that pads on the left (the template must override it)."""
    import importlib.util

    tok = tokenizer(folder, "<s>", "left")
    tok.chat_template = CHAT
    tok.save_pretrained(folder)
    (folder / "modeling_armo_tiny.py").write_text(ARMO_CODE)
    spec = importlib.util.spec_from_file_location(
        "modeling_armo_tiny", folder / "modeling_armo_tiny.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    config = module.ArmoTinyConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
    )  # fmt: skip
    config.auto_map = {
        "AutoConfig": "modeling_armo_tiny.ArmoTinyConfig",
        "AutoModelForSequenceClassification": "modeling_armo_tiny.ArmoTinyRewardModel",
    }
    module.ArmoTinyRewardModel(config).eval().save_pretrained(folder)
    return folder


BUILDERS = {"distilbert": distilbert, "llama": llama, "gpt2": gpt2, "deberta": deberta}


@pytest.fixture
def templates(tmp_path, monkeypatch):
    (tmp_path / "scoring_templates").mkdir()
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))

    def put(name: str, **keys) -> None:
        data = {"name": name, "reward_key": name, "backend": "hf_classifier", **keys}
        (tmp_path / "scoring_templates" / f"{name}.yaml").write_text(yaml.safe_dump(data))

    return put


PROMPTS = ["Write a movie review:"] * 6
RESPONSES = [
    "good",
    "the movie was very good and the actor was great",
    "awful plot",
    "a long boring film not fun",
    "great great great",
    "the the the the the the the the the the the the the bad",
]


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_batch_invariance_and_folder_loading(kind, tmp_path, templates):
    folder = BUILDERS[kind](tmp_path / kind)
    chat = kind == "llama"
    templates("one", model=str(folder), chat=chat, batch_size=1)
    templates("many", model=str(folder), chat=chat, batch_size=4)
    one = build_scorer(load_scoring_template("one"))
    many = build_scorer(load_scoring_template("many"))
    a = one.score(PROMPTS, RESPONSES)
    b = many.score(PROMPTS, RESPONSES)
    assert len(a) == 6 and len(set(a)) == 6  # random weights still tell texts apart
    assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
    # The order of the inputs does not matter either (batches are sorted by length).
    c = many.score(PROMPTS[::-1], RESPONSES[::-1])[::-1]
    assert max(abs(x - y) for x, y in zip(a, c, strict=True)) < 1e-4


def test_chat_formatting_has_one_bos(tmp_path, templates):
    folder = llama(tmp_path / "llama")
    templates("rm", model=str(folder), chat=True)
    scorer = build_scorer(load_scoring_template("rm"))
    text = scorer._texts(["hi"], ["good film"])[0]
    assert text == "<s><|user|> hi <|end|> <|assistant|> good film <|end|> "
    ids = scorer._encode([text])[0]
    assert ids.count(scorer.tokenizer.bos_token_id) == 1


def test_truncation_is_counted(tmp_path, templates):
    folder = distilbert(tmp_path / "db")
    templates("short", model=str(folder), max_length=8, truncation="left")
    scorer = build_scorer(load_scoring_template("short"))
    scorer.score(["", ""], ["good", " ".join(["very"] * 20) + " bad"])
    assert scorer.truncated == 1


def test_hub_id_offline_fails_fast_with_what_to_do(tmp_path, templates, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    templates("hub", model="some-org/some-reward-model")
    start = time.perf_counter()
    with pytest.raises(TemplateError) as err:
        build_scorer(load_scoring_template("hub"))
    assert time.perf_counter() - start < 5
    assert "hub is unreachable" in str(err.value) and "local folder" in str(err.value)


def test_bad_options_are_template_errors(tmp_path, templates):
    templates("bad", model="x", dtype="float8")
    with pytest.raises(TemplateError, match="key 'dtype' must be one of"):
        load_scoring_template("bad")
    templates("missing", model=str(tmp_path / "nowhere"))
    with pytest.raises(TemplateError, match="does not exist"):
        build_scorer(load_scoring_template("missing"))


def test_text_pairs(tmp_path, templates):
    """input: pair reads (prompt, response) as a text pair, as DeBERTa-style reward models do."""
    folder = distilbert(tmp_path / "db")
    templates("pair1", model=str(folder), input="pair", batch_size=1)
    templates("pair4", model=str(folder), input="pair", batch_size=4)
    templates("alone", model=str(folder), input="response")
    prompts = ["the plot", "a film", "the actor", "not fun", "good", "bad"]
    one = build_scorer(load_scoring_template("pair1"))
    ids = one._encode(["good film"], ["the plot"])[0]
    sep = one.tokenizer.convert_tokens_to_ids("[SEP]")
    assert ids.count(sep) == 1 and ids.index(sep) == 3  # [CLS] the plot [SEP] good film
    a = one.score(prompts, RESPONSES)
    b = build_scorer(load_scoring_template("pair4")).score(prompts, RESPONSES)
    c = build_scorer(load_scoring_template("alone")).score(prompts, RESPONSES)
    assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
    # The prompt is read (a random tiny model moves little with it, but it moves).
    assert all(abs(x - y) > 1e-7 for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize(
    "name, builder",
    [
        ("sfairxc", llama),
        ("ncsoft", llama),
        ("distilbert_positive", distilbert),
        ("deberta", deberta),
        ("armorm", armo),
    ],
)
def test_shipped_templates_score_a_local_copy(name, builder, tmp_path, monkeypatch):
    """The shipped template, with 'model' pointed at a local folder of the same class."""
    root = ROOT
    data = yaml.safe_load((root / "scoring_templates" / f"{name}.yaml").read_text())
    data["model"] = str(builder(tmp_path / "model"))
    (tmp_path / "scoring_templates").mkdir()
    (tmp_path / "scoring_templates" / f"{name}.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    template = load_scoring_template(name)
    assert template.path == str(tmp_path / "scoring_templates" / f"{name}.yaml")
    scores = build_scorer(template).score(PROMPTS, RESPONSES)
    assert len(scores) == 6 and all(isinstance(s, float) for s in scores)
    assert len(set(scores)) == 6


@pytest.mark.parametrize(
    "name", ["sfairxc", "ncsoft", "distilbert_positive", "deberta", "armorm", "sequence_classifier"]
)
def test_shipped_hub_templates_fail_fast_offline(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TemplateError, match="hub is unreachable"):
        build_scorer(load_scoring_template(name))


def test_score_dataset_stage_with_a_classifier(tmp_path, templates):
    """score_dataset on a text dataset: every completion scored, truncations in the metadata."""
    import json

    from rate.catalog import load_config
    from rate.io import read_json
    from rate.store import Layout

    folder = distilbert(tmp_path / "db")
    templates("short_rm", model=str(folder), max_length=8, batch_size=2)
    layout = Layout(tmp_path / "project")
    data = {
        str(i): {
            "w_original": i % 2 == 0,
            "completions": {"original": r, "rewrite": "good", "rewritten rewrite": "bad film"},
            "reward_question": "Write a movie review:",
        }
        for i, r in enumerate(RESPONSES)
    }
    layout.rewrites.mkdir(parents=True)
    name = "reviews_20260101_000000.json"
    (layout.rewrites / name).write_text(json.dumps(data))
    root = ROOT
    config = load_config(
        root / "experiments" / "config.yaml",
        [
            "scoring.model=short_rm",
            "scoring.dataset_name=reviews",
            f"scoring.dataset_filename={name}",
        ],
    )
    from rate.score.stage import score_dataset

    out = score_dataset(config, layout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and all(set(r["short_rm"]) == set(r["completions"]) for r in rows)
    meta = read_json(out.with_name(out.name + ".meta.json"))
    # Two originals (10 and 15 words) exceed 8 tokens with [CLS]; the rewrites are short.
    assert meta["truncated_texts"] == 2 and meta["texts_scored"] == 18


def test_armorm_custom_code_score_output_and_batch_invariance(tmp_path, templates):
    """trust_remote_code from a local folder, the `score` output: batch 1 and batch 4 agree,
    with right padding (the template's) and with the tokenizer's left padding (the code reads
    the token before the first pad token, which is the last one under left padding too)."""
    folder = armo(tmp_path / "armo")
    keys = dict(model=str(folder), trust_remote_code=True, output="score", chat=True)
    templates("armo1", **keys, padding_side="right", batch_size=1)
    templates("armo4", **keys, padding_side="right", batch_size=4)
    templates("armo_left", **keys, batch_size=4)
    one = build_scorer(load_scoring_template("armo1"))
    assert type(one.model).__name__ == "ArmoTinyRewardModel"
    a = one.score(PROMPTS, RESPONSES)
    b = build_scorer(load_scoring_template("armo4")).score(PROMPTS, RESPONSES)
    assert len(set(a)) == 6
    assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
    left = build_scorer(load_scoring_template("armo_left"))
    assert left.padding_side == "left"
    c = left.score(PROMPTS, RESPONSES)
    assert max(abs(x - y) for x, y in zip(a, c, strict=True)) < 1e-4


def test_output_that_the_model_does_not_have(tmp_path, templates):
    folder = armo(tmp_path / "armo")
    templates("armo", model=str(folder), trust_remote_code=True, chat=True)  # output: logits
    scorer = build_scorer(load_scoring_template("armo"))
    with pytest.raises(TemplateError, match="has no 'logits'.*rewards, gating_output, score"):
        scorer.score(PROMPTS[:1], RESPONSES[:1])


def test_custom_code_needs_trust_remote_code(tmp_path, templates):
    folder = armo(tmp_path / "armo")
    templates("armo", model=str(folder), output="score", chat=True)
    with pytest.raises((TemplateError, ValueError), match="trust_remote_code"):
        build_scorer(load_scoring_template("armo"))


def test_out_of_memory_halves_the_batch_and_goes_on(tmp_path, templates, caplog):
    """A forward pass over more than 2 texts raises CUDA's out-of-memory error: the batch is
    halved until it fits, every text is scored as at batch size 1, and the smaller batch is
    kept for the next call."""
    folder = distilbert(tmp_path / "db")
    templates("one", model=str(folder), batch_size=1)
    templates("big", model=str(folder), batch_size=8)
    expected = build_scorer(load_scoring_template("one")).score(PROMPTS, RESPONSES)
    scorer = build_scorer(load_scoring_template("big"))
    forward = scorer.model.forward
    sizes = []

    def small_memory(input_ids=None, **kwargs):
        sizes.append(input_ids.shape[0])
        if input_ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(input_ids=input_ids, **kwargs)

    scorer.model.forward = small_memory
    with caplog.at_level("WARNING"):
        got = scorer.score(PROMPTS, RESPONSES)
    assert max(abs(x - y) for x, y in zip(got, expected, strict=True)) < 1e-4
    assert sizes[:3] == [6, 4, 2] and scorer.batch_size == 2
    assert "batch size halved to 4" in caplog.text and "batch size halved to 2" in caplog.text
    sizes.clear()
    scorer.score(PROMPTS, RESPONSES)
    assert sizes == [2, 2, 2]  # no second round of failures


def test_out_of_memory_at_batch_size_one_is_raised(tmp_path, templates):
    folder = distilbert(tmp_path / "db")
    templates("one", model=str(folder), batch_size=1)
    scorer = build_scorer(load_scoring_template("one"))

    def no_memory(**kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    scorer.model.forward = no_memory
    with pytest.raises(torch.OutOfMemoryError):
        scorer.score(PROMPTS[:1], RESPONSES[:1])


def test_classifier_scoring_killed_resumes_to_the_same_file(tmp_path, templates):
    """`rate score_dataset` with a sequence classifier, killed with SIGKILL mid-run and started
    again: the file equals an uninterrupted run's, with no duplicate and no lost row, and the
    truncation count covers the resumed examples too."""
    import json
    import os
    import random
    import signal
    import subprocess
    import sys

    from rate.io import read_json
    from tests.helpers import ROOT, run_rate

    folder = distilbert(tmp_path / "db")
    templates("tiny_db", model=str(folder), max_length=10, batch_size=1)
    rng = random.Random(0)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14)))

    data = {
        str(i): {
            "w_original": i % 2 == 0,
            "completions": {"original": text(), "rewrite": text(), "rewritten rewrite": text()},
            "reward_question": "Write a movie review:",
        }
        for i in range(500)
    }
    projects = [tmp_path / "killed", tmp_path / "clean"]
    for project in projects:
        (project / "data" / "rewrites").mkdir(parents=True)
        (project / "data" / "rewrites" / "reviews_20260101_000000.json").write_text(
            json.dumps(data)
        )
    args = [
        "score_dataset",
        "--config",
        str(ROOT / "experiments" / "config.yaml"),
        "--set=scoring.model=tiny_db",
        "--set=scoring.dataset_name=reviews",
        "--set=scoring.chunk_size=2",
    ]
    env = {**os.environ, "PROJECT_DIR": str(projects[0]), "RATE_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "rate.cli", *args], env=env)
    partial = projects[0] / "data" / "scored" / ".partial"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        files = list(partial.glob("*.jsonl")) if partial.is_dir() else []
        if files and files[0].read_bytes().count(b"\n") > 40:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "scoring finished before it could be killed; make it slower"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not list((projects[0] / "data" / "scored").glob("*.jsonl"))
    resumed = run_rate(args, projects[0])
    assert "resuming:" in resumed.stderr
    clean = run_rate(args, projects[1])
    outs = [Path(r.stdout.strip()) for r in (resumed, clean)]
    a, b = ([json.loads(x) for x in p.read_text().splitlines()] for p in outs)
    assert [r["index"] for r in a] == [str(i) for i in range(500)]
    assert a == b
    metas = [read_json(p.with_name(p.name + ".meta.json")) for p in outs]
    assert metas[0]["resumed_examples"] >= 40 and metas[0]["resumed_examples"] % 2 == 0
    # Texts of 14 words get [CLS] + 14 tokens > 10; the count is the whole file's in both.
    assert metas[0]["truncated_texts"] == metas[1]["truncated_texts"] > 0


def test_truncation_keeps_the_special_tokens(tmp_path, templates):
    """A cut text keeps [CLS] ... [SEP] (encoders read [CLS]); a chat-formatted one keeps its
    BOS, and with truncation: left the end of the response, where a decoder reads the score."""
    db = distilbert(tmp_path / "db")
    long_text = " ".join(WORDS) + " " + " ".join(WORDS)  # 32 words
    for side in ("right", "left"):
        templates(f"cut_{side}", model=str(db), max_length=8, truncation=side)
        scorer = build_scorer(load_scoring_template(f"cut_{side}"))
        ids = scorer._encode([long_text])[0]
        tokens = scorer.tokenizer.convert_ids_to_tokens(ids)
        assert len(ids) == 8 and tokens[0] == "[CLS]"
        assert tokens[1:] == (WORDS[:7] if side == "right" else WORDS[-7:])
    folder = llama(tmp_path / "llama")
    templates("chat_left", model=str(folder), chat=True, max_length=8, truncation="left")
    scorer = build_scorer(load_scoring_template("chat_left"))
    text = scorer._texts(["the plot"], ["good film very long"])[0]  # 11 tokens
    tokens = scorer.tokenizer.convert_ids_to_tokens(scorer._encode([text])[0])
    assert tokens == ["<s>", "<|end|>", "<|assistant|>", "good", "film", "very", "long", "<|end|>"]
    assert scorer.truncated == 1


def test_minus_label_scores_the_classifiers_margin(tmp_path, templates):
    """minus_label: logit[label] - logit[minus_label], the margin whose sign is the argmax."""
    folder = distilbert(tmp_path / "db")
    templates("pos", model=str(folder), label=1)
    templates("neg", model=str(folder), label=0)
    templates("margin", model=str(folder), label=1, minus_label=0)
    pos, neg, margin = (
        build_scorer(load_scoring_template(n)).score(PROMPTS, RESPONSES)
        for n in ("pos", "neg", "margin")
    )
    for p, n, m in zip(pos, neg, margin, strict=True):
        assert abs(m - (p - n)) < 1e-5
    templates("same", model=str(folder), label=1, minus_label=1)
    with pytest.raises(TemplateError, match="'minus_label' must differ from 'label'"):
        load_scoring_template("same")


class _NotWeights:  # a pickled object that a weights-only load refuses
    pass


def test_a_folder_transformers_refuses_is_one_line_saying_why(tmp_path):
    """Issue 45: a remote-code or pickle-only model folder ended in a raw ValueError."""
    import json

    import torch
    from transformers import AutoModelForSequenceClassification

    from rate.hf_models import load_pretrained

    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "config.json").write_text(
        json.dumps({"model_type": "mystery", "auto_map": {"AutoConfig": "conf.MyConfig"}})
    )
    pickled = distilbert(tmp_path / "pickled")
    for weights in pickled.glob("*.safetensors"):
        weights.unlink()
    torch.save({"w": _NotWeights()}, pickled / "pytorch_model.bin")
    key = "the scoring template's 'model'"
    for folder, why in ((remote, "auto_map"), (pickled, "pickles (pytorch_model.bin)")):
        with pytest.raises(TemplateError) as err:
            load_pretrained(AutoModelForSequenceClassification, str(folder), key, "cpu", "float32")
        message = str(err.value)
        assert message.startswith(f"cannot load the model in {folder}") and why in message
        assert "\n" not in message
