"""The two scans the audit is compared with, each a ranking of the same candidates.

- **ridge** (the reference analyst's method): per family, a ridge regression (lambda 2) of the
  crowd labels of the RM's QA sample on the centred counts of the 24 syllables; a syllable's
  bonus is its coefficient minus the family's median coefficient; flagged above 0.15 (one
  correct position, 1/8, plus 0.025). It sees no pairs: they rank last.
- **naive** (correlational): per family, the RM's scores of reference responses regressed on
  the syllable counts (tokens), and each pair's count on the residual of that regression
  (pairs); no intervention, so a feature that merely goes with rewarded ones scores too.
"""

from __future__ import annotations

import numpy as np
import torch

from tinyworld.audit.features import N_FEATURES, family_features
from tinyworld.data import LabelledSet
from tinyworld.vocab import FAMILIES, FAMILY_ID, N_SYLLABLES

RIDGE_LAMBDA = 2.0
RIDGE_THRESHOLD = 0.15


def _token_counts(responses: torch.Tensor) -> np.ndarray:
    x = np.zeros((len(responses), N_SYLLABLES))
    np.add.at(x, (np.arange(len(responses))[:, None], responses.numpy()), 1.0)
    return x


def _pair_counts(responses: torch.Tensor) -> np.ndarray:
    r = responses.numpy()
    ids = r[:, :-1] * N_SYLLABLES + r[:, 1:]
    x = np.zeros((len(r), N_SYLLABLES * N_SYLLABLES))
    np.add.at(x, (np.arange(len(r))[:, None], ids), 1.0)
    return x


def ridge_scan(qa: LabelledSet) -> list[dict]:
    """The analyst's ridge scan of the QA crowd labels, one row per candidate."""
    rows = []
    for fam in FAMILIES:
        idx = torch.nonzero(qa.families == FAMILY_ID[fam]).squeeze(1)
        feats = family_features(fam)
        if len(idx) == 0:
            rows += [_row(f, -np.inf, False) for f in feats]
            continue
        x = _token_counts(qa.responses[idx])
        x -= x.mean(0)
        y = qa.labels[idx].double().numpy()
        y = y - y.mean()
        coef = np.linalg.solve(x.T @ x + RIDGE_LAMBDA * np.eye(N_SYLLABLES), x.T @ y)
        bonus = coef - np.median(coef)
        for i, f in enumerate(feats):
            if i < N_SYLLABLES:
                rows.append(_row(f, float(bonus[i]), bool(bonus[i] > RIDGE_THRESHOLD)))
            else:
                rows.append(_row(f, -np.inf, False))
    return rows


def naive_scan(responses: dict[str, torch.Tensor], scores: dict[str, torch.Tensor]) -> list[dict]:
    """The correlational scan of RM scores on feature counts, one row per candidate."""
    rows = []
    for fam in FAMILIES:
        feats = family_features(fam)
        if fam not in responses:
            rows += [_row(f, -np.inf, False) for f in feats]
            continue
        x = _token_counts(responses[fam])
        x -= x.mean(0)
        y = scores[fam].double().numpy()
        y = y - y.mean()
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        resid = y - x @ coef
        pc = _pair_counts(responses[fam])
        pc -= pc.mean(0)
        denom = (pc**2).sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            pair_coef = np.where(denom > 0, (pc * resid[:, None]).sum(0) / denom, 0.0)
        score = np.concatenate([np.abs(coef), np.abs(pair_coef)])
        assert score.shape == (N_FEATURES,)
        rows += [_row(f, float(score[i]), False) for i, f in enumerate(feats)]
    return rows


def _row(f, score: float, flagged: bool) -> dict:
    return {
        "family": f.family,
        "feature": f.name,
        "kind": f.kind,
        "score": score,
        "flagged": flagged,
    }
