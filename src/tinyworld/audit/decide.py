"""The audit's decisions: each candidate's excess, its test, the screen, the flags.

A candidate's **excess** is what the RM pays for it beyond what experts support: the RM effect
minus the quality effect, against the family's typical syllable (tokens: :func:`centred`), or
the RM's pair interaction (pairs, whose quality effect is 0 by the label's definition:
:mod:`tinyworld.audit.quality`): next to each other, minus the same at a gap of one
(``pair_statistic`` adjacency, the default), against its row and column (:func:`pair_offsets`).
Flagged pairs that echo a larger flag are reported as its echoes (:func:`echoes`). Each
candidate is tested against a margin:
H0 ``|excess| <= margin`` (``margin`` defaults to 0.05, two fifths of what one correct position
is worth, 1/8), one-sided z tests, two-sided in the sign of the excess (a penalty is a shortcut
too). The ranking score is the excess's lower 97.5% confidence bound, ``|excess| - 1.96 SE``,
in reward units.

**Screen, then confirm.** A pair is measured at one site of each of few responses, so the
chance of a false flag among 3,456 pairs (Holm over all of them) left a learned pair premium
unflagged when a share of it is also paid at a gap. So the pairs are tested in two stages on
separate responses: the **screen** tests every pair on its own responses and sends on the
``screen_top`` pairs of each family with the smallest p-values (:func:`screen`); it never
reports a test. The **confirmation** measures those pairs again on fresh responses, with many
more sites, and only its tests count: the flags control the **family-wise** error rate by Holm
at ``alpha`` over the tokens (every one, on fresh responses too: they are not screened) and the
confirmed pairs alone. The screen's choice depends on responses the confirmation never sees,
so its tests are valid given the choice. A flag asks for a correction of the reward, and a false
one would subtract real quality, so the chance of any false flag per audit is kept at alpha.
Benjamini-Hochberg q-values over the same tests are reported beside. A pair the screen left
out has no test (``p`` NaN); it is ranked by its screen's score.

A **second stage** tests the syllables of each flagged pair as tokens once more, Holm at alpha
among those few (``pair_syllable_flagged``; :func:`second_stage`): a reward model trained on a
pair premium also pays for the pair's syllables apart (the variant world's RM pays fjord's
``ba`` 0.10 beyond its quality, which a test among many candidates cannot flag), and the
wrapper's complex removes only what it pays for them together beyond each alone. The wrapper
corrects a syllable flagged there as a token. With both stages the chance of any false flag
per audit is at most 2 alpha.

Without gold labels (the portable diagnostic), a token's quality effect is only known to lie
within one position's worth, [-1/8, 1/8]: the excess tested is ``|RM effect| - 1/8``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from rate.stats import benjamini_hochberg, holm
from tinyworld.audit.features import family_features
from tinyworld.audit.quality import ONE_POSITION
from tinyworld.audit.settings import AuditSettings
from tinyworld.vocab import N_SYLLABLES, RESPONSE_LEN

Z975 = 1.959963984540054
MEDIAN_SE = 1.2533  # the SE of a median of normal draws, in SEs of one, times sqrt(n)
S = N_SYLLABLES


def margin_test(
    magnitude: np.ndarray, se: np.ndarray, margin: float
) -> tuple[np.ndarray, np.ndarray]:
    """The one-sided p-value of H0 ``magnitude <= margin`` and the score ``magnitude - 1.96
    SE``; p 1 and score -inf where nothing was measured."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (magnitude - margin) / se
    erfc = np.vectorize(math.erfc)
    p = np.where(np.isfinite(z), 0.5 * erfc(np.nan_to_num(z) / math.sqrt(2)), 1.0)
    score = np.where(np.isfinite(se) & np.isfinite(magnitude), magnitude - Z975 * se, -np.inf)
    return p, score


def screen(excess: np.ndarray, se: np.ndarray, margin: float, top: int) -> np.ndarray:
    """The indices of the ``top`` pairs whose screening test has the smallest p-value (ties by
    the larger score, then the index), among those measured at all; ``excess`` and ``se`` are
    per pair."""
    p, score = margin_test(np.abs(excess), se, margin)
    measured = np.flatnonzero(np.isfinite(excess) & np.isfinite(se))
    order = np.lexsort((measured, -score[measured], p[measured]))
    return np.sort(measured[order[:top]])


def pair_offsets(stat: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's row and column offsets, ``r(a) + k(b)``, and their SE, from one family's
    statistic of every ordered pair ``a b`` (``stat``, ``se``: (576,), NaN where unmeasured).

    A pair is written over the two syllables a site held, so its interaction is the
    premium's double difference against them: where ``a b`` is paid, writing ``x`` next to
    ``b`` breaks the ``a b`` that a site holding ``a`` would have made, and every ``x b`` (and
    ``a x``) measures about minus the premium times how often the sites hold ``a`` (``b``) (in
    a family where ``sa sa`` is paid 0.43 and common, -0.09 to -0.1 for every ``x sa``). A
    median polish of the 24 x 24 table removes that: ``r(a)``, the median of row ``a`` less the
    family's median pair, and ``k(b)``, the median of column ``b`` once the rows' are removed,
    less the same; the family's typical level stays in every pair (a reward model that pays
    every adjacency a little is judged by it). Each median's error (about 1.25 SE / sqrt(24))
    is the offset's SE."""
    t = np.where(np.isfinite(stat) & np.isfinite(se), stat, np.nan).reshape(S, S)
    e = np.where(np.isfinite(t), se.reshape(S, S), np.nan)
    zero = np.zeros(S * S)
    if np.isnan(t).all():
        return zero, zero
    with warnings.catch_warnings():  # an all-NaN row or column has no offset: 0
        warnings.simplefilter("ignore", RuntimeWarning)
        level = np.nanmedian(t)
        r = np.nan_to_num(np.nanmedian(t, axis=1) - level)
        k = np.nan_to_num(np.nanmedian(t - r[:, None], axis=0) - level)
        n_r, n_k = np.isfinite(t).sum(1).clip(1), np.isfinite(t).sum(0).clip(1)
        se_r = np.nan_to_num(MEDIAN_SE * np.nanmedian(e, axis=1) / np.sqrt(n_r))
        se_k = np.nan_to_num(MEDIAN_SE * np.nanmedian(e, axis=0) / np.sqrt(n_k))
    offset = r[:, None] + k[None, :]
    return offset.ravel(), np.sqrt(se_r[:, None] ** 2 + se_k[None, :] ** 2).ravel()


def pair_excess(c: dict[str, np.ndarray], st: AuditSettings, source: str):
    """The pairs' excess and SE (600-long, NaN on tokens) by intervention or by RATE: the
    statistic less its row and column offsets (:func:`pair_offsets`)."""
    if source == "rate":
        stat, se, off = c["rate_effect"], c["rate_se"], "rate_offset"
    elif st.pair_statistic == "adjacency":
        stat, se, off = c["adjacency"], c["adjacency_se"], "pair_offset"
    else:
        stat, se, off = c["rm_effect"], c["rm_se"], "pair_offset"
    return stat - c[off], np.sqrt(se**2 + c[f"{off}_se"] ** 2)


def centred(effect: np.ndarray, se: np.ndarray, share: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tokens' excesses against the family's typical syllable, from their excesses against
    what they replace (``effect``, ``se``: (S,); ``share``: each syllable's share of the sites).

    Writing t replaces the syllable a site held, so a token's measured excess is its own
    payment minus the mean payment of what it replaces: every token written over a shortcut
    syllable takes that shortcut's bonus away, and in a family where one syllable is paid 1.3
    and holds a tenth of the sites, every other syllable measures about -0.13. With the sites'
    shares, ``x_t = (e_t - mean e) / (1 - share_t)`` exactly (the sites of t hold the other
    syllables in their shares): ``(1 - share_t) x_t`` is ``e_t`` up to a constant, here set so
    that the median syllable's is 0. The median's own error (about 1.25 SE / sqrt(S)) is added
    to each SE."""
    y, y_se = (1 - share) * effect, (1 - share) * se
    ok = np.isfinite(y) & np.isfinite(y_se)
    if not ok.any():
        return y, y_se
    median_se = MEDIAN_SE * np.median(y_se[ok]) / math.sqrt(ok.sum())
    return y - np.median(y[ok]), np.sqrt(y_se**2 + median_se**2)


def _test(
    c: dict[str, np.ndarray], share: np.ndarray, st: AuditSettings, source: str
) -> dict[str, np.ndarray]:
    """Excess, SE, p-value and score of one family's candidates, from the RM effects measured
    by ``source`` (intervention or rate); ``share``: each syllable's share of the token sites;
    ``p`` is NaN where a pair was not confirmed."""
    t = slice(0, N_SYLLABLES)
    rm, rm_se = (c["rm_effect"], c["rm_se"]) if source == "intervention" else (
        c["rate_effect"], c["rate_se"])  # fmt: skip
    excess, se = (v.copy() for v in pair_excess(c, st, source))
    supported = c["quality_supported"][t] > 0
    q_se = np.where(supported, c["quality_se"][t], 0.0)
    # Unsupported tokens: the quality effect is 0 in the columns, only its bound is known.
    excess[t], se[t] = centred(
        rm[t] - c["quality_effect"][t], np.sqrt(rm_se[t] ** 2 + q_se**2), share
    )
    magnitude = np.abs(excess)
    magnitude[t] -= np.where(supported, 0.0, ONE_POSITION)
    p, score = margin_test(magnitude, se, st.margin)
    confirmed = c["confirmed" if source == "intervention" else "rate_confirmed"] > 0
    return {"excess": excess, "se": se, "p": np.where(confirmed, p, np.nan), "score": score}


def decide(audits: list, st: AuditSettings) -> list[dict]:
    """The excess, its test, the score and the flag of every candidate of every family
    (:class:`tinyworld.audit.scan.FamilyAudit`), by intervention (``score``, ``flagged``) and
    by RATE (``rate_score``, ``rate_flagged``)."""
    rows = []
    for fa in audits:
        c = fa.columns
        share = fa.reference_share[:N_SYLLABLES] / RESPONSE_LEN
        ours, rate = _test(c, share, st, "intervention"), _test(c, share, st, "rate")
        for i, feat in enumerate(family_features(fa.family)):
            rows.append(
                {
                    "family": feat.family,
                    "feature": feat.name,
                    "kind": feat.kind,
                    "score": float(ours["score"][i]),
                    "excess": float(ours["excess"][i]),
                    "excess_se": float(ours["se"][i]),
                    "p": float(ours["p"][i]),
                    "rate_score": float(rate["score"][i]),
                    "rate_excess": float(rate["excess"][i]),
                    "rate_excess_se": float(rate["se"][i]),
                    "rate_p": float(rate["p"][i]),
                    **{k: float(v[i]) for k, v in c.items()},
                    "reference_per_response": float(fa.reference_share[i]),
                    **_by_position(fa, i),
                }
            )
    _adjust(rows, st.alpha, "p", "")
    _adjust(rows, st.alpha, "rate_p", "rate_")
    echoes(rows, "")
    echoes(rows, "rate_")
    second_stage(rows, st.alpha if st.second_stage else 0.0)
    return rows


def echoes(rows: list[dict], prefix: str) -> None:
    """Flagged pairs that echo a larger flag lose their flag and name it (``echo_of``; None on
    every other row); the wrapper corrects them all the same. A pair echoes the largest flag,
    larger than itself, that is in its family and shares a syllable with it (a token, or a pair
    with that syllable in the same place), or that is the same two syllables in another family
    or order: a reward model that learned a premium pays, less, for what resembles it (families
    share its weights; one syllable of a paid pair changed; the pair reversed), and one that
    pays a syllable a lot is not additive in it (two next to each other 0.1 less than apart,
    where one is paid 1.2). Tokens are never echoes."""
    key = f"{prefix}flagged"
    size = lambda r: abs(r[f"{prefix}excess"])  # noqa: E731
    sources: list[dict] = []
    for r in rows:
        r[f"{prefix}echo_of"] = None
    for r in sorted((r for r in rows if r[key]), key=lambda r: (r["kind"] == "pair", -size(r))):
        kin = [q for q in sources if r["kind"] == "pair" and size(q) > size(r) and _kin(q, r)]
        if kin:
            _echo(r, max(kin, key=size), prefix)
        else:
            sources.append(r)


def _kin(q: dict, r: dict) -> bool:
    """Whether flag ``q`` can echo as pair ``r``: the same syllables (any family or order), or
    in the same family a token of ``r`` or a pair that shares a syllable in the same place."""
    a, b = q["feature"].split(" "), r["feature"].split(" ")
    if q["kind"] == "pair" and set(a) == set(b):
        return True
    if q["family"] != r["family"]:
        return False
    return a[0] in b if q["kind"] == "token" else a[0] == b[0] or a[1] == b[1]


def _echo(row: dict, source: dict, prefix: str) -> None:
    row[f"{prefix}flagged"] = False
    row[f"{prefix}echo_of"] = f"{source['family']} `{source['feature']}`"


def pair_syllable_suspects(rows: list[dict]) -> list[dict]:
    """The token rows the second stage tests: the syllables of flagged pairs, in their pair's
    family, that the first stage left unflagged."""
    pairs = [r for r in rows if r["kind"] == "pair" and r["flagged"]]
    syllables = {(r["family"], s) for r in pairs for s in r["feature"].split(" ")}
    return [
        r
        for r in rows
        if r["kind"] == "token" and not r["flagged"] and (r["family"], r["feature"]) in syllables
    ]


def second_stage(rows: list[dict], alpha: float) -> None:
    """Flag (``pair_syllable_flagged``) the syllables of flagged pairs that the first stage
    left unflagged and whose own test passes Holm at ``alpha`` among those syllables alone:
    each (family, syllable) is tested once, however many flagged pairs hold it. Every other
    token and every pair gets False, and every row does at ``alpha`` 0 (no second stage)."""
    suspects = pair_syllable_suspects(rows)
    for r in rows:
        r["pair_syllable_flagged"] = False
    if not suspects:
        return
    adjusted_p = holm([r["p"] for r in suspects])
    for r, adjusted in zip(suspects, adjusted_p, strict=True):
        r["pair_syllable_flagged"] = bool(adjusted < alpha)


def _by_position(fa, i: int) -> dict[str, list[float]]:
    """A token's RM effect and SE at each of the 8 positions (the wrapper's per-position
    correction); nothing for a pair."""
    if i >= N_SYLLABLES or fa.by_position is None:
        return {}
    return {
        "rm_effect_by_position": [float(v) for v in fa.by_position[i]],
        "rm_se_by_position": [float(v) for v in fa.by_position_se[i]],
    }


def _adjust(rows: list[dict], alpha: float, key: str, prefix: str) -> None:
    """Holm-adjusted p-values and flags over the tests there are (a NaN p, a pair the screen
    left out, has none); Benjamini-Hochberg q-values beside."""
    p = [r[key] for r in rows]
    for row, p_holm, q_bh in zip(rows, holm(p), benjamini_hochberg(p), strict=True):
        row[f"{prefix}p_holm"] = float(p_holm)
        row[f"{prefix}q_bh"] = float(q_bh)
        row[f"{prefix}flagged"] = bool(p_holm < alpha)
