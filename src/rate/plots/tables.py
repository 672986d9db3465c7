"""Markdown tables: sample rewrites from a scored file, and a summary line per effect file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from rate.effects.estimators import FLAG_SE, beyond_se, estimator
from rate.records import COMPLETIONS, INDEX, TEXTS, W
from rate.results.values import (
    NO_SCORE_CHANGE,
    PASSES,
    interval,
    num,
    rm_name,
    score_unchanged,
    success_counts,
    value,
)
from rate.rewrite.checks import SUCCESS_LABEL, success_text


def _cell(text: Any, max_chars: int) -> str:
    """One Markdown table cell: whitespace collapsed, shortened with an ellipsis, pipes escaped."""
    s = re.sub(r"\s+", " ", str(text if text is not None else "")).strip()
    if len(s) > max_chars:
        s = s[: max_chars - 1].rstrip() + "…"
    return s.replace("|", r"\|")


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def sample_rewrites_table(rows: list[dict], k: int = 5, seed: int = 0, max_chars: int = 160) -> str:
    """A Markdown table of k examples drawn at random (seeded), in file order: W, the original,
    its rewrite and the rewrite of the rewrite."""
    if not rows:
        return "_no examples_\n"
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(rows), size=min(k, len(rows)), replace=False))
    body = []
    for i in picked:
        row = rows[i]
        texts = row.get(TEXTS) or {}
        w = row.get(W)
        body.append(
            [_cell(row.get(INDEX, i), 20), "?" if w is None else str(int(w))]
            + [_cell(texts.get(c), max_chars) for c in COMPLETIONS]
        )
    return _table(["index", "W", *COMPLETIONS], body)


def _fmt(x: Any) -> str:
    v = num(x)
    return "n/a" if v is None else f"{v:.4g}"


def _fmt_interval(pair: tuple[float, float] | None) -> str:
    return "n/a" if pair is None else f"[{pair[0]:.4g}, {pair[1]:.4g}]"


def _fmt_estimate(e: dict, key: str) -> str:
    """An estimate in raw units, with a word where it is exactly 0 because no rewrite
    changed the score."""
    return _fmt(e.get(key)) + (f" ({NO_SCORE_CHANGE})" if score_unchanged(e, key) else "")


def effects_summary_table(effects: list[dict], names: Sequence[str] | None = None) -> str:
    """A Markdown table with one line per effect file: counts, naive, single-rewrite and RATE
    ATE (raw units, RATE's normal interval and its value divided by each of the two SDs of
    the original scores: the pooled within-group one, reward_std, as the reference does, and
    the SD of all of them), the true ATE and whether RATE's ATE is more than 2 of its SEs
    from it, the two SDs, and how many of each pass's rewrites passed their checks, of all of
    them."""
    header = ["dataset", "concept", "RM", "n (W=1 / W=0)", "naive", "single rewrite ATE"]
    header += ["RATE ATE", "RATE ATE interval", "RATE ATE ÷ reward_std (within-group SD)"]
    header += ["RATE ATE ÷ SD of all originals", "true ATE", f"RATE off by > {FLAG_SE:g} SE"]
    header += ["reward_std (within-group SD)"]
    header += ["SD of all originals"]
    header += [f"{p}: {SUCCESS_LABEL}" for p in PASSES]
    if names is not None:
        header.insert(0, "file")
    naive, single, rate = (estimator(m, "ATE").name for m in ("naive", "single_rewrite", "rate"))
    body = []
    for i, e in enumerate(effects):
        line = [str(e.get("dataset_name") or "?"), str(e.get("concept") or "?"), rm_name(e)]
        line += [
            f"{e.get('Y1_count', '?')} / {e.get('Y0_count', '?')}",
            _fmt(e.get(naive)),
        ]
        line += [_fmt_estimate(e, single), _fmt_estimate(e, rate)]
        line += [_fmt_interval(interval(e, rate, "normal", False))]
        line += [_fmt(value(e, rate, True)), _fmt(value(e, rate, "all"))]
        off = beyond_se(num((e.get("error_in_se") or {}).get(rate)))
        line += [_fmt((e.get("truth") or {}).get("ATE"))]
        line += ["" if off is None else ("yes" if off else "no"), _fmt(e.get("reward_std"))]
        line += [_fmt(e.get("reward_std_all"))]
        line += [success_text(*success_counts(e, p)) for p in PASSES]
        if names is not None:
            line.insert(0, _cell(names[i], 200))
        body.append(line)
    return _table(header, body)
