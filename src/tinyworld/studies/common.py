"""Shared pieces of the studies: a scored pool of examples held as arrays."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rate.catalog import load_scoring_template
from rate.effects.estimators import Scores
from rate.records import ORIGINAL, PERFECT, PLACEBO, PROMPT, REWRITE, REWRITTEN, TEXTS, W
from rate.rewrite.stage import build_dataset
from rate.score.backends import build_scorer
from rate.templates import DatasetTemplate
from tinyworld.options import using_world

log = logging.getLogger(__name__)

COMPLETIONS = (ORIGINAL, REWRITE, REWRITTEN, PERFECT)
OPTIONAL = (PLACEBO,)  # scored where the rows have it (a template with a placebo_prompt)


@dataclass
class ScoredPool:
    """Examples with W and, per scorer, the scores of every completion (arrays of length n)."""

    rows: list[dict]
    w: np.ndarray
    scores: dict[str, dict[str, np.ndarray]]  # scorer -> completion -> (n,)

    def subset(self, idx: np.ndarray) -> ScoredPool:
        return ScoredPool(
            [self.rows[i] for i in idx],
            self.w[idx],
            {s: {c: v[idx] for c, v in cols.items()} for s, cols in self.scores.items()},
        )

    def estimator_input(self, scorer: str) -> tuple[Scores, np.ndarray]:
        c = self.scores[scorer]
        return Scores(self.w, c[ORIGINAL], c[REWRITE], c[REWRITTEN], c.get(PLACEBO)), c[PERFECT]


def score_rows_with(rows: list[dict], scorer_names: list[str], world: Path) -> dict:
    """Every completion of ``rows`` scored by each scoring template named."""
    out = {}
    prompts = [r[PROMPT] for r in rows]
    for name in scorer_names:
        with using_world(world):
            scorer = build_scorer(load_scoring_template(name))
        out[name] = {}
        optional = [c for c in OPTIONAL if rows and all(c in r[TEXTS] for r in rows)]
        for comp in (*COMPLETIONS, *optional):
            texts = [r[TEXTS][comp] for r in rows]
            vals = []
            for i in range(0, len(texts), 8192):
                vals.extend(scorer.score(prompts[i : i + 8192], texts[i : i + 8192]))
            out[name][comp] = np.asarray(vals, dtype=float)
    return out


def scored_pool(
    template: DatasetTemplate, n: int, seed: int, world: Path, scorer_names: list[str]
) -> ScoredPool:
    """Draw ``n`` examples with the template, rewrite them and score them with each scorer."""
    with using_world(world):
        rows, summary = build_dataset(template, n, seed, batch_size=8192)
    log.info("pool of %d examples (W=1: %d)", len(rows), summary["counts"]["w_1"])
    w = np.array([r[W] for r in rows], dtype=bool)
    return ScoredPool(rows, w, score_rows_with(rows, scorer_names, world))
