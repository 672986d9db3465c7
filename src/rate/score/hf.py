"""Hugging Face sequence classifiers as reward models: any model id or local folder.

Texts are scored in batches bucketed by token length (sorted, so a batch pads to its own
longest text, not the dataset's), with the tokenizer's padding side and an attention mask, in
``torch.inference_mode``; results come back in the caller's order. With ``chat: true`` the
(prompt, response) pair is formatted by the tokenizer's chat template as a user turn and an
assistant turn, and the template's own BOS is not doubled by the tokenizer. Texts longer than
``max_length`` are truncated from the left or the right (``truncation``) and counted.
Loading by hub id when the hub cannot be reached fails at once with what to do.
"""

from __future__ import annotations

import inspect
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from rate.errors import ConfigError, TemplateError
from rate.score.base import Scorer

log = logging.getLogger(__name__)

DTYPES = ("float32", "bfloat16", "float16", "auto")


@dataclass
class HFClassifierOptions:
    model: str  # a hub id (org/name) or a local folder
    label: int = 0  # which logit is the score
    chat: bool = False  # format (prompt, response) with the tokenizer's chat template
    # Without chat: what the model reads: the response alone, prompt + response as one text,
    # or the two as a text pair (the tokenizer's separator between them).
    input: str = "response"
    max_length: int = 512
    truncation: str = "right"  # right: keep the start; left: keep the end
    dtype: str = "auto"  # auto: bfloat16 on GPU, float32 on CPU
    device: str = "auto"  # auto: cuda if available, else cpu
    trust_remote_code: bool = False

    def validate(self, where: str) -> None:
        if self.dtype not in DTYPES:
            raise ConfigError(f"{where}: key 'dtype' must be one of {', '.join(DTYPES)}")
        if self.truncation not in ("left", "right"):
            raise ConfigError(f"{where}: key 'truncation' must be 'left' or 'right'")
        if self.input not in ("response", "concat", "pair"):
            raise ConfigError(f"{where}: key 'input' must be 'response', 'concat' or 'pair'")
        if self.max_length < 8:
            raise ConfigError(f"{where}: key 'max_length' must be >= 8")


def _is_local(model: str) -> bool:
    return Path(model).expanduser().exists() or model.startswith(("/", ".", "~"))


def _hub_offline_error(model: str, err: Exception | None) -> TemplateError:
    reason = f" ({type(err).__name__})" if err is not None else ""
    return TemplateError(
        f"cannot load {model!r} from the Hugging Face Hub: the hub is unreachable or offline "
        f"(HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}){reason}. Download the model "
        "where the hub is reachable (`huggingface-cli download ...`) and set the scoring "
        "template's 'model' to that local folder"
    )


class HFClassifierScorer(Scorer):
    name = "hf_classifier"

    def __init__(
        self, options: HFClassifierOptions, world: Path | None = None, batch_size: int = 32
    ):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.options, self.batch_size = options, batch_size
        local = _is_local(options.model)
        source = str(Path(options.model).expanduser()) if local else options.model
        if local and not Path(source).is_dir():
            raise TemplateError(f"model folder {source} does not exist")
        if not local and os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true", "True", "YES"):
            raise _hub_offline_error(options.model, None)
        self.device = options.device
        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = options.dtype
        if dtype == "auto":
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(
                source, trust_remote_code=options.trust_remote_code
            )
            self.model = AutoModelForSequenceClassification.from_pretrained(
                source, dtype=getattr(torch, dtype), trust_remote_code=options.trust_remote_code
            )
        except OSError as err:
            if local:
                raise TemplateError(f"cannot load the model in {source}: {err}") from None
            raise _hub_offline_error(options.model, err) from None
        self.model.to(self.device).eval()
        self.tokenizer.truncation_side = options.truncation
        if self.tokenizer.pad_token is None:
            # Decoder-only classifiers often ship without one; the mask makes its value moot.
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if getattr(self.model.config, "pad_token_id", None) is None:
            self.model.config.pad_token_id = self.tokenizer.pad_token_id
        n_labels = self.model.config.num_labels
        if not 0 <= options.label < n_labels:
            raise TemplateError(f"label {options.label}: the model has {n_labels} labels")
        self.truncated = 0
        self._takes_position_ids = (
            "position_ids" in inspect.signature(self.model.forward).parameters
        )

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
        special = not self.options.chat
        if prompts is not None and self.options.input == "pair" and not self.options.chat:
            enc = self.tokenizer(prompts, texts, add_special_tokens=special, truncation=False)
        else:
            enc = self.tokenizer(texts, add_special_tokens=special, truncation=False)
        out = []
        limit = self.options.max_length
        for seq in enc["input_ids"]:
            if len(seq) > limit:
                self.truncated += 1
                seq = seq[:limit] if self.options.truncation == "right" else seq[-limit:]
            out.append(seq)
        return out

    def score(self, prompts: list[str], responses: list[str]) -> list[float]:
        import torch

        ids = self._encode(self._texts(prompts, responses), prompts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        scores = [0.0] * len(ids)
        batch = self.batch_size
        i = 0
        while i < len(order):
            chunk = order[i : i + batch]
            try:
                values = self._forward([ids[j] for j in chunk])
            except torch.OutOfMemoryError:
                if batch == 1:
                    raise
                batch = max(1, batch // 2)
                log.warning("out of memory: batch size halved to %d", batch)
                if self.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                continue
            for j, v in zip(chunk, values, strict=True):
                scores[j] = v
            i += len(chunk)
        return scores

    def _forward(self, seqs: list[list[int]]) -> list[float]:
        import torch

        longest = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        left = self.tokenizer.padding_side == "left"
        rows, masks = [], []
        for s in seqs:
            fill = [pad] * (longest - len(s))
            zeros = [0] * (longest - len(s))
            rows.append(fill + s if left else s + fill)
            masks.append(zeros + [1] * len(s) if left else [1] * len(s) + zeros)
        input_ids = torch.tensor(rows, device=self.device)
        mask = torch.tensor(masks, device=self.device)
        kwargs = {}
        if left and self._takes_position_ids:
            # Left padding shifts every real token right; positions must start at the first
            # real token, or a model with absolute positions would score padded texts apart.
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, attention_mask=mask, **kwargs).logits
        return logits[:, self.options.label].float().cpu().tolist()

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "model": self.options.model,
            "label": self.options.label,
            "chat": self.options.chat,
            "device": self.device,
            "dtype": str(self.model.dtype),
        }
