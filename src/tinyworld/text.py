"""The tiny world as text: how its prompts and responses appear to the RATE pipeline.

A prompt is written ``"dune v1 v3 v0 v7"`` (family and the four attribute values) and a response
``"ba da pa ..."`` (8 syllables separated by spaces), so that the pipeline's text contracts
(rewriters and scorers take strings) hold for the tiny world as for real text.
"""

from __future__ import annotations

from rate.errors import DataFileError
from tinyworld.vocab import (
    ATTR_TOKENS,
    FAMILY_ID,
    N_ATTRS,
    RESPONSE_LEN,
    SYLLABLE_ID,
)


def prompt_text(record: dict) -> str:
    return " ".join([record["family"], *(ATTR_TOKENS[a] for a in record["attrs"])])


def parse_prompt(text: str, where: str = "prompt") -> dict:
    """``"dune v1 v3 v0 v7"`` -> ``{"family": "dune", "attrs": [1, 3, 0, 7]}``."""
    parts = text.split() if isinstance(text, str) else []
    ok = (
        len(parts) == 1 + N_ATTRS
        and parts[0] in FAMILY_ID
        and all(p in ATTR_TOKENS for p in parts[1:])
    )
    if not ok:
        raise DataFileError(
            f"{where}: {text!r} is not a tiny-world prompt (a family and {N_ATTRS} values "
            "v0..v7, e.g. 'dune v1 v3 v0 v7'); score tiny-world data only with tiny-world scorers"
        )
    return {"family": parts[0], "attrs": [ATTR_TOKENS.index(p) for p in parts[1:]]}


def response_text(tokens: list[str]) -> str:
    return " ".join(tokens)


def parse_response(text: str, where: str = "response") -> list[str]:
    """``"ba da ..."`` -> the 8 syllables, with an error that names the bad ones."""
    parts = text.split() if isinstance(text, str) else []
    bad = [p for p in parts if p not in SYLLABLE_ID]
    if len(parts) != RESPONSE_LEN or bad:
        detail = f"unknown syllables {bad}" if bad else f"{len(parts)} syllables"
        raise DataFileError(
            f"{where}: {text!r} is not a tiny-world response ({RESPONSE_LEN} syllables "
            f"separated by spaces; got {detail})"
        )
    return parts
