"""A reward wrapper from an audit: the RM's reward minus what the audit found it pays beyond
expert quality, for each flagged feature (``rate world audit --write-wrapper FILE``).

The file is a plain Python module defining ``transform(records, response_tokens, rewards)``, the
interface of ``rate world rl --set reward_wrapper=FILE``. It embeds its corrections, so it
runs anywhere without the audit's JSON:

- a flagged token: its excess (the RM's effect minus the gold-supported quality effect) per
  occurrence, at the occurrence's position: the RM's effect there, minus the same quality
  effect (RL writes a shortcut where it is paid most; the gold labels are too few to tell
  quality position by position). In the portable diagnostic, without gold labels, the RM's
  whole effect, which may also remove up to one position's worth of real quality (1/8). An
  audit that measured no position (older records) gives one excess for all;
- a flagged pair: what the RM pays for its two syllables together beyond each alone, at the
  response's dose and arrangement: the excess of its cell (how many of each syllable, how many
  adjacent pairs; :mod:`tinyworld.audit.complexes`), or, for an audit that measured no complex, the
  one-site interaction per adjacent occurrence. Its quality effect is 0 exactly;
- a syllable of a flagged pair that the audit's second stage flagged
  (``pair_syllable_flagged``, :func:`tinyworld.audit.scan.second_stage`): as a flagged token, what
  the RM pays for it alone beyond its quality (the cell's excess leaves that in).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from rate.filesets import file_digest
from rate.io import atomic_write_text, json_text

TEMPLATE = '''"""A reward wrapper written by `rate world audit --write-wrapper` from {source} ({method}).

It subtracts what the audit found the reward model pays beyond expert quality: for each
flagged token its excess per occurrence (at the occurrence's position, where the audit
measured positions); for each flagged pair the excess of the response's cell (its count of
each syllable and of adjacent pairs) where the audit measured the pair's complex, else its
adjacency interaction per adjacent occurrence.
Use it with: rate world rl --set reward_wrapper={name}
"""

import json

# The SHA-256 of the audit file it was made from (empty: not made from an audit file);
# `rate world assess` refuses to pair this wrapper with another audit.
AUDIT_SHA256 = {audit_digest!r}

CORRECTIONS = json.loads({table!r})


def transform(records, response_tokens, rewards):
    out = rewards.copy()
    for i, (record, tokens) in enumerate(zip(records, response_tokens)):
        family = CORRECTIONS.get(record["family"])
        if family is None:
            continue
        for token, excess in family["tokens"].items():
            out[i] -= excess * tokens.count(token)
        for token, by_position in family.get("positions", {{}}).items():
            out[i] -= sum(by_position[p] for p, t in enumerate(tokens) if t == token)
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


_AUDIT_LINE = re.compile(r"^AUDIT_SHA256 = '([0-9a-f]{64})'$", re.M)


def corrections(audit: dict, method: str = "ours") -> dict[str, dict]:
    """Per family, the reward to remove: per occurrence of each flagged token (ours: and each
    syllable of a flagged pair flagged by the second stage) at each of the 8
    positions (``positions``; ``tokens``, one for all, where the audit has no positions) and
    per adjacent pair (``pairs``), and per cell of each flagged pair whose complex was measured
    (``complexes``); by our scan, or by a baseline's (``ridge``: the analyst's fitted bonus of
    each flagged token, one for all positions)."""
    out: dict[str, dict] = {}
    rows = audit["candidates"] if method == "ours" else audit["baselines"][method]
    for row in rows:
        ours_too = method == "ours" and (row.get("pair_syllable_flagged") or row.get("echo_of"))
        if not (row["flagged"] or ours_too):
            continue
        if method == "ours" and row["kind"] == "pair" and row.get("complex"):
            family = out.setdefault(row["family"], {"tokens": {}, "pairs": {}})
            cells = {k: v[0] for k, v in row["complex"]["cells"].items()}
            family.setdefault("complexes", {})[row["feature"]] = cells
            continue
        if method == "ours" and row["kind"] == "token" and row.get("rm_effect_by_position"):
            family = out.setdefault(row["family"], {"tokens": {}, "pairs": {}})
            family.setdefault("positions", {})[row["feature"]] = by_position(row)
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


def by_position(row: dict) -> list[float]:
    """A flagged token's excess at each position: its excess shifted by how much more (or
    less) the RM pays it there than on average; the excess itself where a position has no
    measurement (NaN, or null in a saved audit)."""
    excess, mean = row["excess"], row["rm_effect"]
    return [
        round(float(excess + at - mean), 6)
        if at is not None and math.isfinite(at)
        else round(float(excess), 6)
        for at in row["rm_effect_by_position"]
    ]


def tokens_without_positions(audit: dict) -> list[str]:
    """The flagged tokens of an audit recorded before ``rate`` measured positions: a wrapper
    written from it corrects them by one excess for all positions."""
    return [
        f"{r['family']} `{r['feature']}`"
        for r in audit["candidates"]
        if r["flagged"] and r["kind"] == "token" and not r.get("rm_effect_by_position")
    ]


def write_wrapper(audit: dict, path: Path, source: str, method: str = "ours") -> dict:
    """Write the wrapper of ``audit`` (by ``method``) to ``path`` (atomically); -> its
    corrections."""
    table = corrections(audit, method)
    write_corrections(table, path, source, method)
    return table


def wrapper_audit_digest(path: Path) -> str | None:
    """The digest of the audit a wrapper file says it was made from (``AUDIT_SHA256``), read
    from its text (never run); None where it names none."""
    match = _AUDIT_LINE.search(Path(path).read_text(encoding="utf-8", errors="replace"))
    return match.group(1) if match else None


def write_corrections(table: dict[str, dict], path: Path, source: str, method: str) -> None:
    """Write a wrapper removing ``table``'s corrections (family -> tokens/pairs -> reward per
    occurrence, complexes -> pair -> reward per cell) to ``path``, atomically."""
    text = TEMPLATE.format(
        source=source,
        audit_digest=file_digest(source) if Path(source).is_file() else "",
        method=method,
        name=Path(path).name,
        table=json_text(table, sort_keys=True),
    )
    atomic_write_text(path, text)
