"""The local-generation rewriter (hf_generate) on a tiny, randomly initialised Llama built and
saved in the test: prompts, new text only, batch invariance, seeded sampling, failures."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import pytest
import torch

from rate.errors import ConfigError, TemplateError
from rate.rewrite.base import RewriteRequest
from rate.rewrite.hf_generate import (
    HFGenerateRewriter,
    build_hf_generate_rewriter,
    stopped_at_limit,
)
from rate.rewrite.options import HFGenerateOptions
from rate.schema import from_dict
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
    "was",
    "and",
    "is",
    "it",
    "review",
    "write",
    "this",
    "make",
    "more",
    "less",
    "be",
]
SPECIALS = ["<unk>", "<s>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
CHAT = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> "
    "{% endfor %}{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
MAX_NEW = 6


def save_tokenizer(folder: Path, chat_template: str | None):
    """A WordLevel tokenizer with a BOS and an end-of-turn EOS, and (like Llama's) no pad."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="<|end|>"
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    fast.save_pretrained(folder)
    return fast


def save_llama(folder: Path, chat_template: str | None = CHAT) -> Path:
    """A 2-layer Llama (hidden 32) whose generation config asks for sampling, as instruct
    models' configs do (the rewriter must neither use nor warn about it)."""
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tok = save_tokenizer(folder, chat_template)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()
    model.generation_config = GenerationConfig(
        do_sample=True, temperature=0.6, top_p=0.9, top_k=20,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )  # fmt: skip
    model.save_pretrained(folder)
    return folder


def save_gpt2(folder: Path) -> Path:
    """Absolute position embeddings: under left padding, positions must follow the mask.
    (A wider initialisation than the default, or the model repeats one token everywhere.)"""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = save_tokenizer(folder, CHAT)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=256,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, initializer_range=0.2,
    )  # fmt: skip
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_llama(tmp_path_factory.mktemp("llama") / "model")


def make(folder: Path, seed: int = 0, **keys) -> HFGenerateRewriter:
    keys = {"max_new_tokens": MAX_NEW, "temperature": 0.0, **keys}
    options = from_dict(HFGenerateOptions, {"model": str(folder), **keys}, "test.yaml", "rewriter")
    return build_hf_generate_rewriter(options, None, seed)


# Prompts of 3 to 17 words, so batches of 4 pad.
TEXTS = [
    "good movie",
    "the plot was very long and boring and the actor was not fun",
    "awful film",
    "a great review of a great film",
    "make it short",
    "this movie is very very very good and the film is long and fun",
]
REQUESTS = [
    RewriteRequest(f"ex{i}/rewrite", t, i % 2 == 0, f"write {t}") for i, t in enumerate(TEXTS)
]


def manual_greedy(rewriter: HFGenerateRewriter, request: RewriteRequest) -> str:
    """Greedy decoding without generate(): full forward passes, one prompt, no padding."""
    ids = rewriter.tokenizer(rewriter.prompt_text(request), add_special_tokens=False)["input_ids"]
    prompt_len = len(ids)
    with torch.inference_mode():
        for _ in range(MAX_NEW):
            logits = rewriter.model(input_ids=torch.tensor([ids])).logits  # (1, T, V)
            ids.append(int(logits[0, -1].argmax()))
            if ids[-1] == rewriter.tokenizer.eos_token_id:
                break
    return rewriter.tokenizer.decode(ids[prompt_len:], skip_special_tokens=True).strip()


def test_outputs_are_the_new_text_in_request_order(llama_dir):
    rewriter = make(llama_dir, batch_size=4)
    out = rewriter.rewrite(REQUESTS)
    assert len(out) == len(REQUESTS) and all(isinstance(o, str) for o in out)
    # Known answer: each output is what step-by-step greedy decoding of its own prompt gives,
    # so it is in request order and holds the new tokens only, not the prompt.
    assert out == [manual_greedy(rewriter, r) for r in REQUESTS]
    assert len(set(out)) > 1  # the random model still tells the prompts apart
    assert not any(r.instruction in o for r, o in zip(REQUESTS, out, strict=True))
    assert max(len(o.split()) for o in out) <= MAX_NEW


def test_greedy_is_the_same_at_batch_size_1_and_4(llama_dir):
    one = make(llama_dir, batch_size=1)
    many = make(llama_dir, batch_size=4)
    masks = []
    generate = many.model.generate

    def spy(**kwargs):
        masks.append(kwargs["attention_mask"].clone())
        return generate(**kwargs)

    many.model.generate = spy
    a = one.rewrite(REQUESTS)
    b = many.rewrite(REQUESTS)
    assert a == b
    assert [m.shape[0] for m in masks] == [4, 2]
    assert (masks[0] == 0).any() and (masks[0][:, -1] == 1).all()  # padded, on the left
    # Request order does not matter either.
    assert many.rewrite(REQUESTS[::-1])[::-1] == a


def test_greedy_batch_invariance_with_absolute_positions(tmp_path):
    """Llama's rotary positions are relative, so a shift of every position by the padding
    changes nothing; GPT-2's are absolute and need generate's mask-derived positions."""
    folder = save_gpt2(tmp_path / "gpt2")
    a = make(folder, batch_size=1).rewrite(REQUESTS)
    many = make(folder, batch_size=4)
    assert many.rewrite(REQUESTS) == a and len(set(a)) > 1
    # The check can fail: positions counted over the padded row change the outputs.
    generate = many.model.generate

    def padded_positions(**kwargs):
        b, t = kwargs["input_ids"].shape
        return generate(**kwargs, position_ids=torch.arange(t).expand(b, t))

    many.model.generate = padded_positions
    assert many.rewrite(REQUESTS) != a


def test_sampling_is_seeded_per_request(llama_dir):
    a = make(llama_dir, seed=1, temperature=1.0, batch_size=4).rewrite(REQUESTS)
    b = make(llama_dir, seed=1, temperature=1.0, batch_size=4).rewrite(REQUESTS)
    c = make(llama_dir, seed=2, temperature=1.0, batch_size=4).rewrite(REQUESTS)
    greedy = make(llama_dir, batch_size=4).rewrite(REQUESTS)
    assert a == b
    assert a != c and sum(x != y for x, y in zip(a, c, strict=True)) >= 3
    assert a != greedy
    # Each request draws from its own stream: batch size and batch mates do not matter.
    assert make(llama_dir, seed=1, temperature=1.0, batch_size=1).rewrite(REQUESTS) == a
    assert make(llama_dir, seed=1, temperature=1.0, batch_size=3).rewrite(REQUESTS[2:]) == a[2:]


def test_top_p_narrows_sampling(llama_dir):
    """A tiny top_p keeps only the most likely token: sampling becomes greedy decoding."""
    greedy = make(llama_dir, batch_size=4).rewrite(REQUESTS)
    assert make(llama_dir, seed=3, temperature=1.0, top_p=1e-6).rewrite(REQUESTS) == greedy


def test_the_chat_template_is_applied(llama_dir):
    rewriter = make(llama_dir, system="be very short")
    request = RewriteRequest("ex0/rewrite", "good film", True, "make this film review bad")
    expected = (
        "<s><|system|> be very short <|end|> <|user|> make this film review bad <|end|> "
        "<|assistant|> "
    )
    assert rewriter.prompt_text(request) == expected
    seen = []
    generate = rewriter.model.generate

    def spy(**kwargs):
        seen.append(kwargs["input_ids"][0].tolist())
        return generate(**kwargs)

    rewriter.model.generate = spy
    rewriter.rewrite([request])
    vocab = rewriter.tokenizer.get_vocab()
    want = [vocab[t] for t in expected.replace("<s>", "<s> ").split()]
    assert seen == [want]  # one BOS: the template's, not a second from the tokenizer
    # Without chat, the instruction alone, with the tokenizer's BOS.
    plain = make(llama_dir, chat=False)
    assert plain.prompt_text(request) == "make this film review bad"
    assert plain.encode([request]) == [
        [vocab[t] for t in ["<s>", "make", "this", "film", "review", "bad"]]
    ]


def test_no_generation_flag_warnings(llama_dir):
    """The model's config asks for sampling; we decode greedily (plus our own noise) without
    a warning per call."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level=logging.WARNING)
    handler.emit = records.append
    hf_logger = logging.getLogger("transformers")
    hf_logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for temperature in (0.0, 0.7):
                make(llama_dir, temperature=temperature, batch_size=2).rewrite(REQUESTS)
    finally:
        hf_logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == []
    assert [str(w.message) for w in caught] == []


def test_hub_id_offline_fails_fast_with_what_to_do(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(TemplateError) as err:
        make(Path("some-org/some-instruct-model"))
    assert time.perf_counter() - start < 5
    message = str(err.value)
    assert "hub is unreachable" in message and "local folder" in message
    assert "'rewriter.model'" in message


def test_missing_folder(tmp_path):
    with pytest.raises(TemplateError, match="does not exist"):
        make(tmp_path / "nowhere")


def test_chat_without_a_chat_template_fails_clearly(tmp_path):
    folder = save_llama(tmp_path / "base", chat_template=None)
    with pytest.raises(TemplateError, match="tokenizer has no chat template.*'rewriter.chat"):
        make(folder)
    assert make(folder, chat=False).rewrite(REQUESTS[:1])[0] is not None


def test_a_chat_template_without_a_system_turn(tmp_path):
    """Some templates (Gemma's) reject a system message: the error says which key to change."""
    no_system = (
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}<|assistant|> "
    )
    folder = save_llama(tmp_path / "nosys", chat_template=no_system)
    with pytest.raises(TemplateError, match="ex0/rewrite: System role not supported.*system"):
        make(folder, system="be short").rewrite(REQUESTS[:1])
    assert (
        make(folder).prompt_text(REQUESTS[0]) == "<|user|> write good movie <|end|> <|assistant|> "
    )


def test_a_prompt_longer_than_the_limit_names_the_key(llama_dir):
    rewriter = make(llama_dir, max_input_tokens=12)
    calls = []
    rewriter.model.generate = lambda **kwargs: calls.append(1)
    # <s> <|user|> write good movie <|end|> <|assistant|>: 7 tokens fit; ex1 has 18.
    with pytest.raises(TemplateError, match=r"1 of 3 .*max_input_tokens.*: ex1/rewrite \(18 "):
        rewriter.rewrite(REQUESTS[:3])
    assert calls == []  # checked before anything is generated


def test_out_of_memory_halves_the_batch_and_goes_on(llama_dir, caplog):
    """Generating more than 2 prompts at once raises CUDA's out-of-memory error: the batch is
    halved until it fits and kept small; sampled outputs are those of an unhindered run."""
    expected = make(llama_dir, seed=5, temperature=1.0, batch_size=8).rewrite(REQUESTS)
    rewriter = make(llama_dir, seed=5, temperature=1.0, batch_size=8)
    generate = rewriter.model.generate
    sizes = []

    def small_memory(**kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        if sizes[-1] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return generate(**kwargs)

    rewriter.model.generate = small_memory
    with caplog.at_level("WARNING"):
        got = rewriter.rewrite(REQUESTS)
    assert got == expected
    assert sizes == [6, 4, 2, 2, 2] and rewriter.batch_size == 2
    assert "batch size halved to 4" in caplog.text and "batch size halved to 2" in caplog.text
    assert rewriter.describe()["batch_size"] == 2


def test_out_of_memory_at_batch_size_one_is_raised(llama_dir):
    rewriter = make(llama_dir, batch_size=1)

    def no_memory(**kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    rewriter.model.generate = no_memory
    with pytest.raises(torch.OutOfMemoryError):
        rewriter.rewrite(REQUESTS[:1])


def test_describe(llama_dir):
    d = make(llama_dir, seed=7, temperature=0.5, top_p=0.9, system="be short").describe()
    assert d == {
        "backend": "hf_generate",
        "model": str(llama_dir),
        "gguf_file": "",
        "chat": True,
        "system": "be short",
        "sampling": "per-request seeded (Gumbel-max)",
        "temperature": 0.5,
        "top_p": 0.9,
        "max_new_tokens": MAX_NEW,
        "max_input_tokens": 4096,
        "seed": 7,
        "batch_size": 8,
        "dtype": "torch.float32",
        "device": "cpu",
    }


@pytest.mark.parametrize(
    "keys, key",
    [
        ({"temperature": -0.1}, "rewriter.temperature"),
        ({"top_p": 0.0}, "rewriter.top_p"),
        ({"top_p": 1.5}, "rewriter.top_p"),
        ({"max_new_tokens": 0}, "rewriter.max_new_tokens"),
        ({"batch_size": 0}, "rewriter.batch_size"),
        ({"max_input_tokens": 0}, "rewriter.max_input_tokens"),
        ({"dtype": "float8"}, "rewriter.dtype"),
        ({"device": "gpu"}, "rewriter.device"),
        ({"model": " "}, "rewriter.model"),
        ({"chat": False, "system": "be short"}, "rewriter.system"),
        ({"temperatur": 0.5}, "rewriter.temperatur"),  # unknown key (the schema's check)
        ({"gguf_file": "model.bin"}, "rewriter.gguf_file"),
        ({"gguf_file": "sub/model.gguf"}, "rewriter.gguf_file"),
    ],
)
def test_option_errors_name_the_key(keys, key):
    with pytest.raises(ConfigError, match=f"test.yaml: (unknown )?key '{key}'"):
        from_dict(HFGenerateOptions, {"model": "m", **keys}, "test.yaml", "rewriter")


def test_model_is_required():
    with pytest.raises(ConfigError, match="missing required key 'rewriter.model'"):
        from_dict(HFGenerateOptions, {}, "test.yaml", "rewriter")


def test_create_dataset_with_a_local_model_through_a_template(llama_dir, tmp_path, monkeypatch):
    """The hf_generate backend named in a dataset template, run by create_dataset: both passes,
    exactly n examples, and the same file again on a rerun (greedy decoding)."""
    import json

    import yaml

    from rate.catalog import load_config
    from rate.io import read_json
    from rate.pipeline import create_dataset
    from rate.store import Layout

    rows = [
        {"id": i, "text": " ".join(WORDS[i : i + 3 + i % 4]), "label": i % 2} for i in range(10)
    ]
    (tmp_path / "dataset_templates").mkdir()
    (tmp_path / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    template = {
        "name": "local_lm",
        "source": {"kind": "jsonl", "path": str(tmp_path / "reviews.jsonl"),
                   "text_field": "text", "prompt": "write a review", "id_field": "id"},
        "w_classifier": {"rule": "field_equals", "field": "label", "w1_values": [1],
                         "w0_values": [0]},
        "w_strings": {"w=1": "more good", "w=0": "more bad"},
        "rewrite_prompt": "make this {w_counterfactual_string} : {original_completion}",
        "rewriter": {"backend": "hf_generate", "model": str(llama_dir), "temperature": 0,
                     "max_new_tokens": MAX_NEW, "batch_size": 4},
        "n_examples": 6,
    }  # fmt: skip
    (tmp_path / "dataset_templates" / "local_lm.yaml").write_text(yaml.safe_dump(template))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        ["rewrites.dataset_name=local_lm", "smoke_test=false"],
    )
    outs = [create_dataset(config, Layout(tmp_path / "p")) for _ in range(2)]
    first, second = (read_json(p) for p in outs)
    assert len(first) == 6 and first == second
    for row in first.values():
        assert isinstance(row["completions"]["rewrite"], str)
        assert isinstance(row["completions"]["rewritten rewrite"], str)
        # A random model rarely ends a text in 6 tokens: those are cut (length_limit).
        assert set(row["checks"].values()) <= {"unchecked", "length_limit", "empty", "unchanged"}
    meta = read_json(outs[0].with_name(outs[0].name + ".meta.json"))
    assert meta["rewriter"]["backend"] == "hf_generate"
    labels = [row["checks"]["rewrite"] for row in first.values()]
    assert meta["rewrite_checks"]["rewrite"]["length_limit"] == labels.count("length_limit")


def test_stopped_at_limit_is_a_row_without_an_end_token():
    new = torch.tensor([[5, 6, 2, 2], [5, 6, 7, 8], [9, 1, 1, 1]])  # ended, cut, ended (eos 9)
    assert stopped_at_limit(new, 2) == [False, True, True]
    assert stopped_at_limit(new, [2, 9]) == [False, True, False]
    assert stopped_at_limit(new, None) == [True, True, True]


def test_outputs_that_reach_max_new_tokens_are_reported_cut(llama_dir, caplog):
    """Through rewrite(): with an end token the model never emits every output is cut (and
    the run says so); with every token an end token none is."""
    rewriter = make(llama_dir)
    rewriter.generation_config.eos_token_id = [10_000]  # beyond the vocabulary: never generated
    with caplog.at_level("WARNING"):
        rewriter.rewrite(REQUESTS)
    assert rewriter.stopped_at_limit(REQUESTS) == [True] * len(REQUESTS)
    assert "6 of 6 rewrites stopped at rewriter.max_new_tokens (6)" in caplog.text
    rewriter.generation_config.eos_token_id = list(range(len(rewriter.tokenizer)))
    rewriter.rewrite(REQUESTS)
    assert rewriter.stopped_at_limit(REQUESTS) == [False] * len(REQUESTS)
    assert rewriter.stopped_at_limit(REQUESTS[:2]) == [False, False]


def test_a_missing_gguf_file_names_the_key(llama_dir):
    with pytest.raises(TemplateError, match=r"has no GGUF file 'nope.gguf'; set the 'gguf_file'"):
        make(llama_dir, gguf_file="nope.gguf")


def test_a_package_model_that_is_not_installed_says_how_to_install(llama_dir):
    from rate.errors import DataFileError

    with pytest.raises(DataFileError, match="'no_such_model_pkg' is not installed; install it"):
        make(Path("unused"), model="package:no_such_model_pkg")
