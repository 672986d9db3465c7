"""Batched scoring of token sequences: the part every transformer scorer shares.

Sequences are sorted by length and cut into batches, so a batch pads to its own longest text
and not the call's: on real text the padding of unsorted batches can cost more than batching
saves. Padding follows the model's side with an attention mask (and mask-derived positions
under left padding), so a text's score does not depend on its batch. An out-of-memory error
halves the batch and goes on; the smaller batch is kept for later calls. Texts longer than the
model's limit are truncated by a stated policy (:meth:`TokenBatchScorer._tokenize`) and
counted.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import torch

from rate.oom import run_halving
from rate.score.base import Scorer, TextsDone

log = logging.getLogger(__name__)


class TokenBatchScorer(Scorer):
    """A scorer over token ids. Subclasses set ``tokenizer``, ``model``, ``device``,
    ``batch_size``, ``max_length``, ``truncation`` and ``padding_side``, and implement
    :meth:`encode_pairs` and :meth:`_model_scores`."""

    tokenizer: Any
    model: Any
    device: str = "cpu"
    batch_size: int = 32
    max_length: int = 512
    truncation: str = "right"  # right: keep the start; left: keep the end
    padding_side: str = "right"

    def _takes_position_ids(self) -> bool:
        return "position_ids" in inspect.signature(self.model.forward).parameters

    def _tokenize(
        self, texts: list[str], pairs: list[str] | None = None, special: bool = True
    ) -> list[list[int]]:
        """Token ids of ``texts`` (after ``pairs``, as text pairs), cut to ``max_length``;
        cuts are counted.

        With the tokenizer's special tokens, the tokenizer cuts the text by its truncation side
        and keeps the special tokens ([CLS] ... [SEP]; a pair loses tokens from the longer
        text first). Without them (chat-formatted text, whose template wrote its own), the cut
        keeps the first token (the BOS) and the start (``right``) or the end (``left``) of the
        rest.
        """
        args = (texts,) if pairs is None else (pairs, texts)
        ids = self.tokenizer(*args, add_special_tokens=special, truncation=False)["input_ids"]
        over = [i for i, seq in enumerate(ids) if len(seq) > self.max_length]
        self.truncated += len(over)
        if not over:
            return ids
        if special:
            self.tokenizer.truncation_side = self.truncation
            picked = [[a[i] for i in over] for a in args]
            cut = self.tokenizer(
                *picked, add_special_tokens=True, truncation=True, max_length=self.max_length
            )["input_ids"]
            for i, seq in zip(over, cut, strict=True):
                ids[i] = seq
        else:
            keep = self.max_length - 1
            for i in over:
                seq = ids[i]
                ids[i] = seq[:1] + (
                    seq[1 : 1 + keep] if self.truncation == "right" else seq[-keep:]
                )
        return ids

    def encode_pairs(self, prompts: list[str], responses: list[str]) -> list[list[int]]:
        """The token ids the model reads for each (prompt, response), already cut."""
        raise NotImplementedError

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        return self.score_ids(self.encode_pairs(prompts, responses), on_texts)

    def count_truncated(self, prompts: list[str], responses: list[str]) -> int:
        """How many of these pairs exceed the model's limit (tokenises only; for the texts of a
        resumed run, which were scored by an earlier process)."""
        before = self.truncated
        self.encode_pairs(prompts, responses)
        counted, self.truncated = self.truncated - before, before
        return counted

    def score_ids(self, ids: list[list[int]], on_texts: TextsDone | None = None) -> list[float]:
        """One score per token sequence, in order, in length-sorted batches."""
        return [float(v) for v in self.run_batches(ids, self._model_scores, on_texts)]

    def run_batches(self, ids: list[list[int]], fn, on_texts: TextsDone | None = None) -> list:
        """``fn(input_ids, attention_mask, kwargs)`` -> a tensor with one row per sequence, run
        over length-sorted batches; -> the rows (as Python values) in the order of ``ids``."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))

        def run(chunk: list[int]) -> list:
            input_ids, mask, kwargs = self.pad([ids[j] for j in chunk])
            with torch.inference_mode():
                return fn(input_ids, mask, kwargs).float().cpu().tolist()

        results, self.batch_size = run_halving(
            order, self.batch_size, run, self.device, on_batch=on_texts
        )
        return [results[i] for i in range(len(ids))]

    def pad(self, seqs: list[list[int]]) -> tuple[Any, Any, dict]:
        """(input_ids, attention_mask, extra model kwargs) for one batch."""
        longest = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        left = self.padding_side == "left"
        rows, masks = [], []
        for s in seqs:
            fill = [pad] * (longest - len(s))
            zeros = [0] * (longest - len(s))
            rows.append(fill + s if left else s + fill)
            masks.append(zeros + [1] * len(s) if left else [1] * len(s) + zeros)
        input_ids = torch.tensor(rows, device=self.device)
        mask = torch.tensor(masks, device=self.device)
        kwargs = {}
        if left and self._takes_position_ids():
            # Left padding shifts every real token right; positions must start at the first
            # real token, or a model with absolute positions would score padded texts apart.
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        return input_ids, mask, kwargs

    def _model_scores(self, input_ids, attention_mask, kwargs: dict):
        """A 1-d tensor: the score of each row of the batch."""
        raise NotImplementedError
