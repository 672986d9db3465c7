"""Tokens of the tiny RLHF world and conversion between records and tensors.

A prompt is ``[family, a1, a2, a3, a4, SEP]`` (6 tokens); a response is exactly 8 syllables.
Syllables take ids 0..23 so that a policy's output index *is* the token id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rate.errors import DataFileError

if TYPE_CHECKING:  # torch loads when a tensor is made: the stages read the names alone
    import torch

SYLLABLES: tuple[str, ...] = (
    "ba", "da", "fa", "ga", "ha", "ja", "ka", "la", "ma", "na", "pa", "ra",
    "sa", "ta", "va", "wa", "za", "be", "de", "fe", "ge", "he", "je", "ke",
)  # fmt: skip
FAMILIES: tuple[str, ...] = ("anvil", "birch", "cobalt", "dune", "ember", "fjord")
N_ATTRS = 4
N_ATTR_VALUES = 8
ATTR_TOKENS: tuple[str, ...] = tuple(f"v{i}" for i in range(N_ATTR_VALUES))
SEP = "<sep>"

N_SYLLABLES = len(SYLLABLES)
PROMPT_LEN = 1 + N_ATTRS + 1
RESPONSE_LEN = 8
SEQ_LEN = PROMPT_LEN + RESPONSE_LEN

TOKENS: tuple[str, ...] = SYLLABLES + FAMILIES + ATTR_TOKENS + (SEP,)
VOCAB_SIZE = len(TOKENS)
TOKEN_ID = {tok: i for i, tok in enumerate(TOKENS)}
FAMILY_ID = {fam: i for i, fam in enumerate(FAMILIES)}
SYLLABLE_ID = {tok: i for i, tok in enumerate(SYLLABLES)}


def validate_prompt_record(rec: dict, where: str) -> None:
    """Raise DataFileError unless ``rec`` is a well-formed prompt record."""
    if not isinstance(rec.get("id"), str):
        raise DataFileError(f"{where}: field 'id' must be a string")
    if rec.get("family") not in FAMILY_ID:
        raise DataFileError(
            f"{where}: unknown family {rec.get('family')!r}; expected one of {', '.join(FAMILIES)}"
        )
    attrs = rec.get("attrs")
    if (
        not isinstance(attrs, list)
        or len(attrs) != N_ATTRS
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in attrs)
        or not all(0 <= a < N_ATTR_VALUES for a in attrs)
    ):
        raise DataFileError(
            f"{where}: field 'attrs' must be a list of {N_ATTRS} integers in 0..{N_ATTR_VALUES - 1},"
            f" got {attrs!r}"
        )


def validate_response(resp: object, where: str) -> None:
    """Raise DataFileError unless ``resp`` is a list of 8 known syllables."""
    if not isinstance(resp, list) or len(resp) != RESPONSE_LEN:
        raise DataFileError(f"{where}: 'response' must be a list of {RESPONSE_LEN} syllables")
    bad = [t for t in resp if t not in SYLLABLE_ID]
    if bad:
        raise DataFileError(f"{where}: unknown syllable(s) {bad}; valid: {' '.join(SYLLABLES)}")


def validate_labelled_record(rec: dict, where: str) -> None:
    """Raise DataFileError unless ``rec`` is a prompt record with a response and a float label."""
    validate_prompt_record(rec, where)
    validate_response(rec.get("response"), where)
    label = rec.get("label")
    if not isinstance(label, (int, float)) or isinstance(label, bool):
        raise DataFileError(f"{where}: 'label' must be a number, got {label!r}")


def encode_prompts(records: Sequence[dict]) -> torch.Tensor:
    """Prompt records -> token ids, shape (N, PROMPT_LEN)."""
    import torch

    rows = [
        [TOKEN_ID[r["family"]], *(TOKEN_ID[ATTR_TOKENS[a]] for a in r["attrs"]), TOKEN_ID[SEP]]
        for r in records
    ]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), PROMPT_LEN)


def encode_responses(responses: Sequence[Sequence[str]]) -> torch.Tensor:
    """Responses (lists of syllables) -> ids, shape (N, RESPONSE_LEN)."""
    import torch

    rows = [[SYLLABLE_ID[t] for t in r] for r in responses]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), RESPONSE_LEN)


def decode_responses(ids: torch.Tensor) -> list[list[str]]:
    """Response ids (N, RESPONSE_LEN) -> lists of syllables."""
    return [[SYLLABLES[i] for i in row] for row in ids.tolist()]


def family_ids(records: Sequence[dict]) -> torch.Tensor:
    """Family index of each record, shape (N,)."""
    import torch

    return torch.tensor([FAMILY_ID[r["family"]] for r in records], dtype=torch.long)
