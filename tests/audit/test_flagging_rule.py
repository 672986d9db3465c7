"""The audit's flagging rule by hand, through ``decide`` end to end: each token's excess against
the family's typical syllable, the slack of a token without gold support, the one-sided z test
against the margin in the sign of the excess, Holm's step-down over the tokens and the confirmed
pairs alone (a pair the screen left out has no test), and the second stage among a flagged
pair's syllables.

Each candidate is given its measurements directly (no reward model runs). Every other token of
the family measures 0 with SE 0.01, so the typical syllable (the median) is 0, and its error,
1.2533 x 0.01 / sqrt(24) = MS, is added to every token's SE; its p is about 1. p = 1 - Phi(z)
throughout."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tinyworld.audit.decide import MEDIAN_SE, decide
from tinyworld.audit.features import N_FEATURES, Feature
from tinyworld.audit.scan import FamilyAudit
from tinyworld.audit.settings import AuditSettings
from tinyworld.vocab import N_SYLLABLES

S = N_SYLLABLES
MS = MEDIAN_SE * 0.01 / math.sqrt(S)  # the typical syllable's error, in every token's SE


def upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def token_se(*parts: float) -> float:
    return math.sqrt(sum(p * p for p in parts) + MS**2)


def family(name: str, tokens: dict, pairs: dict) -> FamilyAudit:
    """A family whose tokens measure 0 (SE 0.01, gold-supported) but ``tokens`` (syllable ->
    columns), and whose pairs are unconfirmed but ``pairs`` ("a b" -> columns); no site holds
    any syllable (shares 0: a token's excess is its effect less the median's)."""
    zeros = np.zeros(N_FEATURES)
    cols = {
        "rm_effect": zeros.copy(),
        "rm_se": np.full(N_FEATURES, 0.01),
        "quality_effect": zeros.copy(),
        "quality_se": zeros.copy(),
        "quality_supported": np.ones(N_FEATURES),
        "adjacency": np.full(N_FEATURES, np.nan),
        "adjacency_se": np.full(N_FEATURES, np.nan),
        "pair_offset": zeros.copy(),
        "pair_offset_se": zeros.copy(),
        "confirmed": np.r_[np.ones(S), np.zeros(N_FEATURES - S)],
        "rate_effect": np.full(N_FEATURES, np.nan),
        "rate_se": np.full(N_FEATURES, np.nan),
        "rate_offset": zeros.copy(),
        "rate_offset_se": zeros.copy(),
        "rate_confirmed": zeros.copy(),
    }
    for feature, values in (*tokens.items(), *pairs.items()):
        i = Feature(name, tuple(feature.split())).index
        for key, value in values.items():
            cols[key][i] = value
    return FamilyAudit(name, cols, zeros.copy())


def token(rm: float, se: float, quality: float = 0.0, quality_se: float = 0.0) -> dict:
    return {"rm_effect": rm, "rm_se": se, "quality_effect": quality, "quality_se": quality_se}


def unsupported(rm: float, se: float) -> dict:
    """A token the gold labels cannot support: its quality effect is only known to lie within
    one position's worth, +-1/8."""
    return {"rm_effect": rm, "rm_se": se, "quality_supported": 0.0, "quality_se": math.inf}


def pair(adjacency: float, se: float, confirmed: bool = True) -> dict:
    return {"adjacency": adjacency, "adjacency_se": se, "confirmed": float(confirmed)}


# Margin 0.05. Excess, SE and z of each:
HA_Z = 3.2905  # p 5.0e-4: flagged among 26 tests (x 22 = 0.011), not among 600 (x 596 = 0.30)
TOKENS = {
    # RM 1.0 - quality 0.2 = 0.8, SE sqrt(0.03^2 + 0.04^2 + MS^2): z = 0.75 / SE, about 15.
    "pa": token(1.0, 0.03, quality=0.2, quality_se=0.04),
    # A penalty, tested in its own sign: |-0.40| - 0.05 = 0.35 over SE(0.05), about 7.
    "de": token(-0.40, 0.05),
    # No gold support: |0.575| - 1/8 = 0.45 is tested: z = 0.40 / SE(0.1), about 4.
    "ba": unsupported(0.575, 0.1),
    # Exactly at the margin, however precise: z = 0, p = 0.5.
    "ga": token(0.05, 1e-6),
    "ha": token(0.05 + HA_Z * token_se(0.01), 0.01),
    # A syllable of the flagged pair: z = 0.10 / SE(0.04), about 2.5.
    "ra": token(0.15, 0.04),
}
PAIRS = {
    "ka ra": pair(0.5, 0.1),  # confirmed: z = (0.5 - 0.05) / 0.1 = 4.5
    "sa ta": pair(0.0, 0.1),  # confirmed, nothing there: z = -0.5
    "wa ta": pair(2.0, 0.1, confirmed=False),  # the screen left it out: no test at all
}
Z = {
    "pa": 0.75 / token_se(0.03, 0.04),
    "de": 0.35 / token_se(0.05),
    "ba": 0.40 / token_se(0.1),
    "ga": 0.0,
    "ha": HA_Z,
    "ra": 0.10 / token_se(0.04),
    "ka ra": 4.5,
    "sa ta": -0.5,
}


def rows_by_feature(rows: list[dict], fam: str = "dune") -> dict[str, dict]:
    return {r["feature"]: r for r in rows if r["family"] == fam}


def test_holm_over_the_tokens_and_the_confirmed_pairs_flags_what_the_arithmetic_says():
    """m = 24 tokens + 2 confirmed pairs = 26. Ranked by p, Holm's adjusted p is the running
    max of (27 - rank) p: pa 26 p, de 25 p, ka ra 24 x 3.40e-6, ba 23 x 3.2e-5, ha 22 x 5.0e-4
    = 0.011: all five flagged; ra 21 x 6.3e-3 = 0.13 is not. wa ta, however large, was not
    confirmed: no p, no flag, and not counted in m."""
    rows = decide([family("dune", TOKENS, PAIRS)], AuditSettings(margin=0.05, alpha=0.05))
    assert len(rows) == N_FEATURES
    by = rows_by_feature(rows)
    assert sorted(f for f, r in by.items() if r["flagged"]) == ["ba", "de", "ha", "ka ra", "pa"]
    for feature, z in Z.items():
        assert by[feature]["p"] == pytest.approx(upper_tail(z), rel=1e-6), feature
    tested = [r for r in rows if not math.isnan(r["p"])]
    assert len(tested) == 26
    assert math.isnan(by["wa ta"]["p"]) and not by["wa ta"]["flagged"]
    ranked = sorted(tested, key=lambda r: r["p"])
    running = 0.0
    for rank, r in enumerate(ranked, start=1):
        running = max(running, min(1.0, (27 - rank) * r["p"]))
        assert r["p_holm"] == pytest.approx(running, rel=1e-9), r["feature"]
    assert by["ha"]["p_holm"] == pytest.approx(22 * upper_tail(HA_Z), rel=1e-9)
    assert 596 * upper_tail(HA_Z) > 0.05  # Holm over every candidate would not flag ha
    # The excess is signed and the test is in its sign; the score is |excess| - slack - 1.96 SE.
    assert by["de"]["excess"] == pytest.approx(-0.40) and by["de"]["flagged"]
    assert by["pa"]["excess"] == pytest.approx(0.8)
    assert by["pa"]["score"] == pytest.approx(0.8 - 1.959963984540054 * token_se(0.03, 0.04))
    assert by["ba"]["score"] == pytest.approx(0.45 - 1.959963984540054 * token_se(0.1))
    assert by["ka ra"]["excess"] == pytest.approx(0.5) and by["ka ra"]["excess_se"] == 0.1
    # RATE measured nothing: no RATE test, no RATE flag.
    assert not any(r["rate_flagged"] for r in rows)


def test_the_second_stage_tests_the_flagged_pairs_syllables_among_themselves():
    """ka ra is flagged, its syllables ka (p about 1) and ra (p 6.3e-3) are not: Holm among the
    two gives ra 2 p < 0.05 (flagged by the second stage), ka max(2 p_ra, p_ka). With
    second_stage off, neither, and the first stage's flags are the same."""
    by = rows_by_feature(decide([family("dune", TOKENS, PAIRS)], AuditSettings()))
    assert 2 * upper_tail(Z["ra"]) < 0.05
    assert [f for f, r in by.items() if r["pair_syllable_flagged"]] == ["ra"]
    one_stage = rows_by_feature(
        decide([family("dune", TOKENS, PAIRS)], AuditSettings(second_stage=False))
    )
    assert not any(r["pair_syllable_flagged"] for r in one_stage.values())
    assert [f for f, r in one_stage.items() if r["flagged"]] == [
        f for f, r in by.items() if r["flagged"]
    ]


def test_every_familys_tokens_count_and_the_margin_moves_the_line():
    """A second family with nothing in it adds its 24 tokens to m (50): ha's adjusted p becomes
    46 x 5.0e-4 = 0.023, still flagged. With a margin of 0.5 only pa is left: z = 0.3 / SE,
    about 6; de's (0.40 - 0.5) / SE and ka ra's (0.5 - 0.5) / 0.1 = 0 are no evidence."""
    rows = decide([family("dune", TOKENS, PAIRS), family("anvil", {}, {})], AuditSettings())
    assert sum(not math.isnan(r["p"]) for r in rows) == 50
    by = rows_by_feature(rows)
    assert by["ha"]["p_holm"] == pytest.approx(46 * upper_tail(HA_Z), rel=1e-9)
    assert sorted(f for f, r in by.items() if r["flagged"]) == ["ba", "de", "ha", "ka ra", "pa"]
    assert not any(r["flagged"] for r in rows if r["family"] == "anvil")
    wide = rows_by_feature(decide([family("dune", TOKENS, PAIRS)], AuditSettings(margin=0.5)))
    assert [f for f, r in wide.items() if r["flagged"]] == ["pa"]
    assert wide["pa"]["p"] == pytest.approx(upper_tail(0.3 / token_se(0.03, 0.04)), rel=1e-6)
    assert wide["ka ra"]["p"] == pytest.approx(0.5)
