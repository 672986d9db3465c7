"""Prompt pools: random attribute values per family, with stable ids."""

from __future__ import annotations

import torch

from tinyworld.vocab import FAMILIES, N_ATTR_VALUES, N_ATTRS


def make_prompts(
    counts: dict[str, int], prefix: str, generator: torch.Generator, shuffle: bool = True
) -> list[dict]:
    """``counts[family]`` prompts per family, attributes uniform in 0..7, ids ``prefix-000001``."""
    rows = []
    for fam in FAMILIES:
        n = counts.get(fam, 0)
        attrs = torch.randint(0, N_ATTR_VALUES, (n, N_ATTRS), generator=generator).tolist()
        rows.extend({"family": fam, "attrs": a} for a in attrs)
    if shuffle:
        rows = [rows[i] for i in torch.randperm(len(rows), generator=generator).tolist()]
    return [{"id": f"{prefix}-{i:06d}", **r} for i, r in enumerate(rows, 1)]


def balanced(per_family: int) -> dict[str, int]:
    return {fam: per_family for fam in FAMILIES}
