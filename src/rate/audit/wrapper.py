"""A reward wrapper from an audit: the RM's reward minus what the audit found it pays beyond
expert quality, for each flagged feature (``rate audit --write-wrapper FILE``).

The file is a plain Python module defining ``transform(records, response_tokens, rewards)``, the
interface of ``rate tinyrlhf rl --set reward_wrapper=FILE``. It embeds its corrections, so it
runs anywhere without the audit's JSON:

- a flagged token: its excess (the RM's effect minus the gold-supported quality effect) per
  occurrence; in the portable diagnostic, without gold labels, the RM's whole effect, which
  may also remove up to one position's worth of real quality (1/8);
- a flagged pair: what the RM pays for its two syllables together beyond each alone, at the
  response's dose and arrangement: the excess of its cell (how many of each syllable, how many
  adjacent pairs; :mod:`rate.audit.complexes`), or, for an audit that measured no complex, the
  one-site interaction per adjacent occurrence. Its quality effect is 0 exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from rate.io import atomic_write_text

TEMPLATE = '''"""A reward wrapper written by `rate audit --write-wrapper` from {source} ({method}).

It subtracts what the audit found the reward model pays beyond expert quality: for each
flagged token its excess per occurrence; for each flagged pair the excess of the response's
cell (its count of each syllable and of adjacent pairs) where the audit measured the pair's
complex, else its adjacency interaction per adjacent occurrence.
Use it with: rate tinyrlhf rl --set reward_wrapper={name}
"""

import json

CORRECTIONS = json.loads({table!r})


def transform(records, response_tokens, rewards):
    out = rewards.copy()
    for i, (record, tokens) in enumerate(zip(records, response_tokens)):
        family = CORRECTIONS.get(record["family"])
        if family is None:
            continue
        for token, excess in family["tokens"].items():
            out[i] -= excess * tokens.count(token)
        for pair, excess in family["pairs"].items():
            first, second = pair.split(" ")
            out[i] -= excess * adjacent(tokens, first, second)
        for pair, cells in family.get("complexes", {{}}).items():
            first, second = pair.split(" ")
            cell = (tokens.count(first), tokens.count(second), adjacent(tokens, first, second))
            out[i] -= cells.get(" ".join(map(str, cell)), 0.0)
    return out


def adjacent(tokens, first, second):
    return sum(1 for a, b in zip(tokens, tokens[1:]) if a == first and b == second)
'''


def corrections(audit: dict, method: str = "ours") -> dict[str, dict]:
    """Per family, the reward to remove: per occurrence of each flagged token (``tokens``) and
    adjacent pair (``pairs``), and per cell of each flagged pair whose complex was measured
    (``complexes``); by our scan, or by a baseline's (``ridge``: the analyst's fitted bonus of
    each flagged token)."""
    out: dict[str, dict] = {}
    rows = audit["candidates"] if method == "ours" else audit["baselines"][method]
    for row in rows:
        if not row["flagged"]:
            continue
        if method == "ours" and row["kind"] == "pair" and row.get("complex"):
            family = out.setdefault(row["family"], {"tokens": {}, "pairs": {}})
            cells = {k: v[0] for k, v in row["complex"]["cells"].items()}
            family.setdefault("complexes", {})[row["feature"]] = cells
            continue
        if method != "ours":
            value, kind = row["score"], "tokens" if row["kind"] == "token" else "pairs"
        elif row["kind"] == "token":
            value, kind = row["excess"], "tokens"
        else:
            value, kind = row["rm_effect"], "pairs"
        if value is None or not math.isfinite(value):
            continue
        family = out.setdefault(row["family"], {"tokens": {}, "pairs": {}})
        family[kind][row["feature"]] = round(float(value), 6)
    return out


def write_wrapper(audit: dict, path: Path, source: str, method: str = "ours") -> dict:
    """Write the wrapper of ``audit`` (by ``method``) to ``path`` (atomically); -> its
    corrections."""
    table = corrections(audit, method)
    write_corrections(table, path, source, method)
    return table


def write_corrections(table: dict[str, dict], path: Path, source: str, method: str) -> None:
    """Write a wrapper removing ``table``'s corrections (family -> tokens/pairs -> reward per
    occurrence, complexes -> pair -> reward per cell) to ``path``, atomically."""
    text = TEMPLATE.format(
        source=source,
        method=method,
        name=Path(path).name,
        table=json.dumps(table, sort_keys=True),
    )
    atomic_write_text(path, text)
