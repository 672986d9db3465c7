"""Hugging Face sequence classifiers as reward models: any model id or local folder.

Texts are scored in length-sorted batches (:mod:`rate.score.buckets`) with the tokenizer's
padding side (or the template's) and an attention mask, in ``torch.inference_mode``; results
come back in the caller's order. The score is one column of the model's ``logits``, or of
another output (``output: score`` for ArmoRM's custom code). With ``chat: true`` the
(prompt, response) pair is formatted by the tokenizer's chat template as a user turn and an
assistant turn, and the template's own BOS is not doubled by the tokenizer. Texts longer than
``max_length`` are cut at the end (``truncation: right``) or the start (``left``), keeping the
special tokens (the BOS of chat-formatted text), and counted.
Loading by hub id when the hub cannot be reached fails at once with what to do.
"""

from __future__ import annotations

import logging

from transformers import AutoModelForSequenceClassification

from rate.errors import TemplateError
from rate.hf_models import load_pretrained
from rate.score.buckets import TokenBatchScorer
from rate.score.options import HFClassifierOptions

log = logging.getLogger(__name__)


class HFClassifierScorer(TokenBatchScorer):
    name = "hf_classifier"

    def __init__(self, options: HFClassifierOptions, batch_size: int = 32):
        self.options, self.batch_size = options, batch_size
        self.tokenizer, self.model, self.device = load_pretrained(
            AutoModelForSequenceClassification,
            options.model,
            "the scoring template's 'model' (or scoring.model, `--model`)",
            options.device,
            options.dtype,
            options.trust_remote_code,
        )
        self.max_length, self.truncation = options.max_length, options.truncation
        self.tokenizer.truncation_side = options.truncation
        self.padding_side = (
            self.tokenizer.padding_side if options.padding_side == "auto" else options.padding_side
        )
        if self.tokenizer.pad_token is None:
            # Decoder-only classifiers often ship without one; the mask makes its value moot.
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if getattr(self.model.config, "pad_token_id", None) is None:
            self.model.config.pad_token_id = self.tokenizer.pad_token_id
        n_labels = self.model.config.num_labels
        if options.output == "logits" and not 0 <= options.label < n_labels:
            raise TemplateError(f"label {options.label}: the model has {n_labels} labels")
        self.truncated = 0

    def _texts(self, prompts: list[str], responses: list[str]) -> list[str]:
        """Chat-formatted texts (chat: true), else what ``input`` says (pairs are encoded
        together in :meth:`_encode`)."""
        if not self.options.chat:
            if self.options.input == "concat":
                return [f"{p}{r}" for p, r in zip(prompts, responses, strict=True)]
            return responses
        if not getattr(self.tokenizer, "chat_template", None):
            raise TemplateError(
                f"{self.options.model}: chat: true but the tokenizer has no chat template"
            )
        return [
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": p}, {"role": "assistant", "content": r}],
                tokenize=False,
            )
            for p, r in zip(prompts, responses, strict=True)
        ]

    def _encode(self, texts: list[str], prompts: list[str] | None = None) -> list[list[int]]:
        # A chat template writes its own BOS; the tokenizer must not add a second one.
        if self.options.chat:
            return self._tokenize(texts, special=False)
        pairs = prompts if (prompts is not None and self.options.input == "pair") else None
        return self._tokenize(texts, pairs)

    def encode_pairs(self, prompts: list[str], responses: list[str]) -> list[list[int]]:
        return self._encode(self._texts(prompts, responses), prompts)

    def _model_scores(self, input_ids, attention_mask, kwargs: dict):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        values = getattr(out, self.options.output, None)
        if values is None:
            raise TemplateError(
                f"{self.options.model}: the model's output has no {self.options.output!r}; "
                f"set the scoring template's 'output' to one of: {', '.join(out.keys())}"
            )
        if values.dim() == 1:
            values = values[:, None]
        minus = self.options.minus_label
        for which, label in (("label", self.options.label), ("minus_label", minus)):
            if label is not None and not 0 <= label < values.shape[-1]:
                raise TemplateError(
                    f"{which} {label}: the model's {self.options.output!r} has "
                    f"{values.shape[-1]} columns"
                )
        if minus is not None:
            return values[:, self.options.label] - values[:, minus]
        return values[:, self.options.label]

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "model": self.options.model,
            "label": self.options.label,
            "minus_label": self.options.minus_label,
            "output": self.options.output,
            "chat": self.options.chat,
            "device": self.device,
            "dtype": str(self.model.dtype),
            "padding_side": self.padding_side,
            "attention": getattr(self.model.config, "_attn_implementation", None),
        }
