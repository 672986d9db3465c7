"""The Hugging Face classifier backend on tiny, randomly initialised models of real classes,
built and saved in the test: loading from a folder, chat formatting, batch invariance, hub
offline."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
import yaml

from rate.errors import TemplateError
from rate.score.backends import build_scorer
from rate.templates import load_scoring_template

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
    one = build_scorer(load_scoring_template("one"), tmp_path)
    many = build_scorer(load_scoring_template("many"), tmp_path)
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
    scorer = build_scorer(load_scoring_template("rm"), tmp_path)
    text = scorer._texts(["hi"], ["good film"])[0]
    assert text == "<s><|user|> hi <|end|> <|assistant|> good film <|end|> "
    ids = scorer._encode([text])[0]
    assert ids.count(scorer.tokenizer.bos_token_id) == 1


def test_truncation_is_counted(tmp_path, templates):
    folder = distilbert(tmp_path / "db")
    templates("short", model=str(folder), max_length=8, truncation="left")
    scorer = build_scorer(load_scoring_template("short"), tmp_path)
    scorer.score(["", ""], ["good", " ".join(["very"] * 20) + " bad"])
    assert scorer.truncated == 1


def test_hub_id_offline_fails_fast_with_what_to_do(tmp_path, templates, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    templates("hub", model="some-org/some-reward-model")
    start = time.perf_counter()
    with pytest.raises(TemplateError) as err:
        build_scorer(load_scoring_template("hub"), tmp_path)
    assert time.perf_counter() - start < 5
    assert "hub is unreachable" in str(err.value) and "local folder" in str(err.value)


def test_bad_options_are_template_errors(tmp_path, templates):
    templates("bad", model="x", dtype="float8")
    with pytest.raises(TemplateError, match="key 'dtype' must be one of"):
        load_scoring_template("bad")
    templates("missing", model=str(tmp_path / "nowhere"))
    with pytest.raises(TemplateError, match="does not exist"):
        build_scorer(load_scoring_template("missing"), tmp_path)


def test_text_pairs(tmp_path, templates):
    """input: pair reads (prompt, response) as a text pair, as DeBERTa-style reward models do."""
    folder = distilbert(tmp_path / "db")
    templates("pair1", model=str(folder), input="pair", batch_size=1)
    templates("pair4", model=str(folder), input="pair", batch_size=4)
    templates("alone", model=str(folder), input="response")
    prompts = ["the plot", "a film", "the actor", "not fun", "good", "bad"]
    one = build_scorer(load_scoring_template("pair1"), tmp_path)
    ids = one._encode(["good film"], ["the plot"])[0]
    sep = one.tokenizer.convert_tokens_to_ids("[SEP]")
    assert ids.count(sep) == 1 and ids.index(sep) == 3  # [CLS] the plot [SEP] good film
    a = one.score(prompts, RESPONSES)
    b = build_scorer(load_scoring_template("pair4"), tmp_path).score(prompts, RESPONSES)
    c = build_scorer(load_scoring_template("alone"), tmp_path).score(prompts, RESPONSES)
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
    ],
)
def test_shipped_templates_score_a_local_copy(name, builder, tmp_path, monkeypatch):
    """The shipped template, with 'model' pointed at a local folder of the same class."""
    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "scoring_templates" / f"{name}.yaml").read_text())
    data["model"] = str(builder(tmp_path / "model"))
    (tmp_path / "scoring_templates").mkdir()
    (tmp_path / "scoring_templates" / f"{name}.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    template = load_scoring_template(name)
    assert template.path == str(tmp_path / "scoring_templates" / f"{name}.yaml")
    scores = build_scorer(template, tmp_path).score(PROMPTS, RESPONSES)
    assert len(scores) == 6 and all(isinstance(s, float) for s in scores)


@pytest.mark.parametrize("name", ["sfairxc", "ncsoft", "distilbert_positive", "deberta"])
def test_shipped_hub_templates_fail_fast_offline(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TemplateError, match="hub is unreachable"):
        build_scorer(load_scoring_template(name), tmp_path)


def test_score_dataset_stage_with_a_classifier(tmp_path, templates):
    """score_dataset on a text dataset: every completion scored, truncations in the metadata."""
    import json

    from rate.config import load_config
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
    root = Path(__file__).resolve().parents[1]
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
