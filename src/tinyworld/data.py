"""Reading and writing the world's JSONL records, validated line by line; the digest of what a
built world holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from rate.errors import DataFileError
from rate.io import read_jsonl
from rate.provenance import content_digest
from tinyworld.vocab import (
    FAMILIES,
    decode_responses,
    encode_prompts,
    encode_responses,
    family_ids,
    validate_labelled_record,
    validate_prompt_record,
    validate_response,
)


def require_world(world: Path) -> Path:
    """``world`` if a built world is there, else an error that says how to get one."""
    if not (Path(world) / "world_info.json").is_file():
        raise DataFileError(
            f"no tiny RLHF world at {world}; build it with `make world-build` (or `rate demo`), or "
            "point RATE_WORLD (or the template's 'world' option) at one"
        )
    return Path(world)


@dataclass
class PromptPool:
    """Prompt records with their token ids (N, 6) and family indices (N,)."""

    records: list[dict]
    tokens: torch.Tensor
    families: torch.Tensor

    def __len__(self) -> int:
        return len(self.records)

    def families_present(self) -> list[str]:
        return [FAMILIES[i] for i in sorted(set(self.families.tolist()))]

    def subset(self, idx: torch.Tensor) -> PromptPool:
        return PromptPool(
            [self.records[i] for i in idx.tolist()], self.tokens[idx], self.families[idx]
        )


@dataclass
class LabelledSet(PromptPool):
    """Prompt records with responses (N, 8) and labels (N,)."""

    responses: torch.Tensor = None  # type: ignore[assignment]
    labels: torch.Tensor = None  # type: ignore[assignment]


def pool_from_records(records: list[dict]) -> PromptPool:
    return PromptPool(records, encode_prompts(records), family_ids(records))


def _read_validated(path: Path, validate, what: str) -> list[dict]:
    """Read a JSONL file and validate every row, naming the file and line of the first bad one."""
    rows = read_jsonl(path)
    if not rows:
        raise DataFileError(f"{path}: no {what} in the file")
    for lineno, rec in zip(_line_numbers(path), rows, strict=True):
        validate(rec, f"{path}:{lineno}")
    return rows


def load_prompts(path: Path) -> PromptPool:
    """Read a prompt JSONL file; every bad line is reported with its file and line number."""
    return pool_from_records(_read_validated(path, validate_prompt_record, "prompts"))


def load_labelled(path: Path) -> LabelledSet:
    """Read labelled rows (prompt + response + label)."""
    return _labelled_set(_read_validated(path, validate_labelled_record, "labelled rows"))


def load_response_rows(path: Path) -> LabelledSet:
    """Read rows with prompt fields and a 'response' (a 'label' is kept when present, else NaN)."""

    def validate(rec: dict, where: str) -> None:
        validate_prompt_record(rec, where)
        validate_response(rec.get("response"), where)

    return _labelled_set(_read_validated(path, validate, "rows"))


def _labelled_set(rows: list[dict]) -> LabelledSet:
    return LabelledSet(
        rows,
        encode_prompts(rows),
        family_ids(rows),
        responses=encode_responses([r["response"] for r in rows]),
        labels=torch.tensor([float(r.get("label", float("nan"))) for r in rows]),
    )


def labelled_rows(pool: PromptPool, responses: torch.Tensor, labels: torch.Tensor) -> list[dict]:
    """Records with ``response`` and ``label`` added (labels rounded to 6 decimals)."""
    return [
        {**rec, "response": resp, "label": round(float(lab), 6)}
        for rec, resp, lab in zip(
            pool.records, decode_responses(responses), labels.tolist(), strict=True
        )
    ]


def _line_numbers(path: Path) -> list[int]:
    """Line number of each non-blank row (read_jsonl skips blank lines)."""
    return [n for n, line in enumerate(Path(path).read_text().splitlines(), 1) if line.strip()]


# What RL and an analyst's tools read of a built world (not its truth/, runs/ or anything a
# user adds, such as more gold sets in data/): a digest of them tells one build from another
# at the same path.
BUILD_PARTS = (
    "configs/default.json",
    "data/prompts_train.jsonl",
    "data/prompts_dev.jsonl",
    "data/gold_calib.jsonl",
    "policy",
    "reward_model",
)


def build_digest(world: Path) -> str:
    """A :func:`~rate.provenance.content_digest` of the world's :data:`BUILD_PARTS`: what RL and the
    certificates start from, so that outputs made from one build are never reused for
    another built at the same path."""
    return content_digest(paths=[Path(world) / part for part in BUILD_PARTS])
