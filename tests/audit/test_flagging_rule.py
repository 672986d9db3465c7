"""The audit's flagging rule by hand: the excess against the margin, the slack of a token
without gold support, the one-sided z test in the sign of the excess, Holm's step-down over
every candidate of every family, and the second stage among a flagged pair's syllables.

Each candidate below is given its measurements directly (no reward model is run); all the
others of a family measure an excess of 0 with SE 1, so their p is 1 - Phi(-0.05) = 0.5199,
far from any flag, but they count in Holm's m (600 per family). p = 1 - Phi(z) throughout;
the normal tail values are quoted to four figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tinyworld.audit.features import N_FEATURES, Feature
from tinyworld.audit.scan import AuditSettings, FamilyAudit, decide


def upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def null_columns() -> dict[str, np.ndarray]:
    """Every candidate of a family measured at an excess of 0 with SE 1, gold-supported; RATE
    unmeasured (NaN: its p is 1 and it flags nothing)."""
    zeros, ones = np.zeros(N_FEATURES), np.ones(N_FEATURES)
    return {
        "rm_effect": zeros.copy(),
        "rm_se": ones.copy(),
        "rm_sites": ones * 100,
        "gap_interaction": zeros.copy(),
        "gap_se": zeros.copy(),
        "rate_effect": np.full(N_FEATURES, np.nan),
        "rate_se": np.full(N_FEATURES, np.nan),
        "quality_effect": zeros.copy(),
        "quality_se": zeros.copy(),
        "quality_supported": ones.copy(),
    }


def family(name: str, **candidates: dict[str, float]) -> FamilyAudit:
    """A family's audit: the null everywhere but at the candidates given (the feature's name
    with '_' for the space of a pair -> its columns)."""
    cols = null_columns()
    for feature, values in candidates.items():
        i = Feature(name, tuple(feature.split("_"))).index
        for key, value in values.items():
            cols[key][i] = value
    return FamilyAudit(name, cols, np.zeros(N_FEATURES))


def token(rm: float, rm_se: float, quality: float = 0.0, quality_se: float = 0.0) -> dict:
    return {"rm_effect": rm, "rm_se": rm_se, "quality_effect": quality, "quality_se": quality_se}


def unsupported(rm: float, rm_se: float) -> dict:
    """A token the gold labels cannot support: its quality effect is only known to lie within
    one position's worth, +-1/8."""
    return {"rm_effect": rm, "rm_se": rm_se, "quality_supported": 0.0, "quality_se": math.inf}


# One family, "dune", with these candidates; margin 0.05, alpha 0.05. Excess, SE, z and p:
DUNE = {
    # RM 1.0 - quality 0.2 = 0.8, SE sqrt(0.03^2 + 0.04^2) = 0.05: z = (0.8 - 0.05) / 0.05 = 15.
    "pa": token(1.0, 0.03, quality=0.2, quality_se=0.04),
    # A penalty: excess -0.40, tested in its own sign: z = (0.40 - 0.05) / 0.05 = 7.
    "de": token(-0.40, 0.05),
    # Adjacency: 0.6 next to each other minus 0.1 at a gap = 0.5, SE sqrt(0.06^2 + 0.08^2) =
    # 0.1: z = (0.5 - 0.05) / 0.1 = 4.5.
    "ka_ra": {"rm_effect": 0.6, "rm_se": 0.06, "gap_interaction": 0.1, "gap_se": 0.08},
    # No gold support: |0.575| - 1/8 = 0.45 is tested: z = (0.45 - 0.05) / 0.1 = 4.
    "ba": unsupported(0.575, 0.1),
    # No gold support again: |0.3| - 1/8 = 0.175, z = (0.175 - 0.05) / 0.05 = 2.5. The same RM
    # effect with gold support would be z = (0.3 - 0.05) / 0.05 = 5 (p 2.9e-7, flagged).
    "wa": unsupported(0.3, 0.05),
    # Exactly at the margin, however precise: z = (0.05 - 0.05) / 1e-6 = 0, p = 0.5.
    "ga": token(0.05, 1e-6),
    # A hair above it, measured precisely: z = (0.0501 - 0.05) / 1e-6 = 100, p = 0 (underflow).
    "ha": token(0.0501, 1e-6),
    # Two alike just past Holm's reach: z = (0.087625 - 0.05) / 0.01 = 3.7625, p = 8.4112e-5.
    "sa": token(0.087625, 0.01),
    "ta": token(0.087625, 0.01),
    # A syllable of the flagged pair: z = (0.15 - 0.05) / 0.04 = 2.5, p = 6.210e-3.
    "ra": token(0.15, 0.04),
}


def rows_by_feature(rows: list[dict], fam: str = "dune") -> dict[str, dict]:
    return {r["feature"]: r for r in rows if r["family"] == fam}


def test_holm_over_one_familys_600_candidates_flags_what_the_arithmetic_says():
    """m = 600. Ranked by p, Holm's adjusted p is the running max of (601 - rank) p:
    ha 600 x 0 = 0; pa 599 x 3.671e-51 = 2.2e-48; de 598 x 1.280e-12 = 7.65e-10;
    ka ra 597 x 3.398e-6 = 0.00203; ba 596 x 3.167e-5 = 0.01888: all five below 0.05.
    sa and ta (tied, ranks 6 and 7): 595 x 8.4112e-5 = 0.050046 >= 0.05, so rank 6 fails; rank 7
    alone would pass (594 x 8.4112e-5 = 0.049962) but Holm steps down no further: its adjusted p
    is the running max, 0.050046 (a step-up rule such as Hochberg's would flag both). ra and wa
    (6.210e-3, ranks 8 and 9): 593 x 6.210e-3 = 3.68, capped at 1. ga (p 0.5) is not flagged:
    the margin is H0's edge. The null candidates' p is 0.5199."""
    rows = decide([family("dune", **DUNE)], AuditSettings(margin=0.05, alpha=0.05))
    assert len(rows) == 600
    by = rows_by_feature(rows)
    assert sorted(f for f, r in by.items() if r["flagged"]) == ["ba", "de", "ha", "ka ra", "pa"]
    p = {f: upper_tail(z) for f, z in
         {"pa": 15, "de": 7, "ka ra": 4.5, "ba": 4, "wa": 2.5, "ga": 0, "sa": 3.7625}.items()}  # fmt: skip
    for feature, z in (("pa", 15), ("de", 7), ("ka ra", 4.5), ("ba", 4), ("ga", 0)):
        assert by[feature]["p"] == pytest.approx(upper_tail(z), rel=1e-9), feature
    assert p["sa"] == pytest.approx(8.4112e-5, rel=1e-5)  # the value quoted above
    assert by["ha"]["p"] == 0.0 and by["ha"]["p_holm"] == 0.0
    expected_holm = {
        "pa": 599 * p["pa"],
        "de": 598 * p["de"],
        "ka ra": 597 * p["ka ra"],
        "ba": 596 * p["ba"],
        "sa": 595 * p["sa"],
        "ta": 595 * p["sa"],  # the running max, not 594 p
        "wa": 1.0,
        "ra": 1.0,
    }
    for feature, value in expected_holm.items():
        assert by[feature]["p_holm"] == pytest.approx(value, rel=1e-9), feature
    assert by["ba"]["p_holm"] == pytest.approx(0.01888, abs=5e-6)
    assert by["sa"]["p_holm"] == pytest.approx(0.050046, abs=1e-6)
    assert by["sa"]["p_holm"] >= 0.05 and not by["sa"]["flagged"] and not by["ta"]["flagged"]
    assert 594 * p["sa"] < 0.05  # what a step-up rule would have flagged
    # The excess is signed; the test is in its sign; the score is |excess| - slack - 1.96 SE.
    assert by["de"]["excess"] == pytest.approx(-0.40) and by["de"]["flagged"]
    assert by["pa"]["score"] == pytest.approx(0.8 - 1.959963984540054 * 0.05)
    assert by["ba"]["score"] == pytest.approx(0.45 - 1.959963984540054 * 0.1)
    assert by["ka ra"]["excess"] == pytest.approx(0.5)
    assert by["ka ra"]["excess_se"] == pytest.approx(0.1)
    # The null candidates: p 0.5199, Holm 1.
    assert by["fa"]["p"] == pytest.approx(0.5199, abs=1e-4) and by["fa"]["p_holm"] == 1.0
    # RATE measured nothing: no RATE flag anywhere.
    assert not any(r["rate_flagged"] for r in rows)


def test_the_second_stage_tests_the_flagged_pairs_syllables_among_themselves():
    """ka ra is flagged, its syllables ka (p 0.5199) and ra (p 6.210e-3) are not: Holm among
    the two gives ra 2 x 6.210e-3 = 0.01242 < 0.05 (flagged by the second stage) and ka
    max(0.01242, 1 x 0.5199) = 0.5199. With second_stage off, neither."""
    rows = decide([family("dune", **DUNE)], AuditSettings())
    by = rows_by_feature(rows)
    assert by["ra"]["pair_syllable_flagged"] and not by["ra"]["flagged"]
    assert [f for f, r in by.items() if r["pair_syllable_flagged"]] == ["ra"]
    one_stage = rows_by_feature(decide([family("dune", **DUNE)], AuditSettings(second_stage=False)))
    assert not any(r["pair_syllable_flagged"] for r in one_stage.values())
    assert [f for f, r in one_stage.items() if r["flagged"]] == [
        f for f, r in by.items() if r["flagged"]
    ]


def test_holm_counts_every_candidate_of_every_family():
    """A second family with nothing in it doubles m to 1,200: ba's adjusted p becomes
    1196 x 3.167e-5 = 0.03788 (still flagged), ka ra's 1197 x 3.398e-6 = 0.004067. With a
    margin of 0.5 only pa is left: z = (0.8 - 0.5) / 0.05 = 6 (p 9.866e-10); de's
    (0.40 - 0.5) / 0.05 = -2 and ka ra's (0.5 - 0.5) / 0.1 = 0 are no longer evidence."""
    rows = decide([family("dune", **DUNE), family("anvil")], AuditSettings())
    assert len(rows) == 1200
    by = rows_by_feature(rows)
    assert by["ba"]["p_holm"] == pytest.approx(1196 * upper_tail(4), rel=1e-9)
    assert by["ba"]["p_holm"] == pytest.approx(0.03788, abs=5e-6)
    assert by["ka ra"]["p_holm"] == pytest.approx(1197 * upper_tail(4.5), rel=1e-9)
    assert sorted(f for f, r in by.items() if r["flagged"]) == ["ba", "de", "ha", "ka ra", "pa"]
    assert not any(r["flagged"] for r in rows if r["family"] == "anvil")
    wide = rows_by_feature(decide([family("dune", **DUNE)], AuditSettings(margin=0.5)))
    assert [f for f, r in wide.items() if r["flagged"]] == ["pa"]
    assert wide["pa"]["p"] == pytest.approx(upper_tail(6), rel=1e-9)
    assert wide["pa"]["p"] == pytest.approx(9.866e-10, rel=1e-3)
    assert wide["de"]["p"] == pytest.approx(upper_tail(-2), rel=1e-9)
