"""The known-answer check of `rate profile` (rate.profile.check): its comparison by hand on four
examples, then the real thing at smoke size on the drug reviews (planted_minilm against
minilm_sentiment on the same rewrites), which passes with the true bonuses and fails with a
wrong one."""

from __future__ import annotations

import math

import pytest

from rate.errors import RateError
from rate.io import read_json
from rate.profile.check import FLOAT_TOL, SE_LIMIT, check_run, compare, run_profiles, write_check
from rate.records import INDEX, PROMPT, REWRITE, REWRITTEN, TEXTS, W

KEYS = ("planted_minilm", "minilm_sentiment")
# (W, original, rewrite, rewrite of the rewrite, planted (rewrite, rr), plain (rewrite, rr)).
# The planted scores are the plain ones plus the bonuses the planted detectors see: hedging
# -0.25 ("I think", "probably", "perhaps", "might" ...), exclamation +0.20.
EXAMPLES = [
    (True, "I think it works.", "It works.", "I think it works.", (1.0, 1.25), (1.0, 1.5)),
    (False, "It works!", "Probably it works!", "It works!", (1.95, 1.2), (2.0, 1.0)),
    # The rules' hedge list lacks "might": the planted detector sees a hedge in both texts.
    (False, "It might work.", "Perhaps it might work.", "It might work.", (0.25, 0.15), (0.5, 0.4)),
    (True, "It probably works.", "It works.", "Probably it works.", (0.0, 0.05), (0.0, 0.3)),
]
# RATE's per-example differences (W=1 minus W=0: sign * (rr - rewrite)), by hand:
# plain 0.5, 1.0, 0.1, 0.3; planted 0.25, 0.75, 0.1, 0.05; planted - plain -.25, -.25, 0, -.25.


def _rows(which: int) -> list[dict]:
    return [
        {
            INDEX: str(i),
            W: w,
            TEXTS: {"original": o, REWRITE: r, REWRITTEN: rr},
            PROMPT: "Review it: ",
            KEYS[which]: dict(zip((REWRITE, REWRITTEN), scores[which], strict=True)),
        }
        for i, (w, o, r, rr, *scores) in enumerate(EXAMPLES)
    ]


def _effects(ate: float | None, atu: float, naive: float | None) -> dict:
    return {"ATE_rewritten_rewrite": ate, "ATU_rewritten_rewrite": atu, "naive_effect": naive}


PLANTED_FX = _effects(1.15 / 4, (0.75 + 0.1) / 2, 0.30)
PLAIN_FX = _effects(1.9 / 4, (1.0 + 0.1) / 2, 0.50)
FLAGGED = {"bh_survives": True, "p_bh": 0.01}


def _compare(attribute="hedging", effects=(PLANTED_FX, PLAIN_FX), row=FLAGGED, **bonuses):
    bonus = {"sycophancy": 0.30, "exclamation": 0.20, "hedging": -0.25, **bonuses}
    return compare(attribute, effects, (_rows(0), _rows(1)), KEYS, row, bonus)


def test_the_comparison_by_hand():
    r = _compare()
    # 3 of 4 pairs flip hedging as the planted detector reads it; none flips the "!".
    assert r["estimand"] == "ATE" and r["n"] == 4
    assert r["share_flipped"] == pytest.approx(0.75)
    assert r["shares"] == {"sycophancy": 0.0, "exclamation": 0.0, "hedging": 0.75}
    assert r["expected"] == pytest.approx(-0.1875) == r["expected_all_bonuses"]
    assert r["rate_diff"] == pytest.approx(-0.1875)
    # sd(-.25, -.25, 0, -.25) = 0.125; over sqrt(4).
    assert r["rate_diff_se"] == pytest.approx(0.0625)
    assert r["identity_residual"] == pytest.approx(0.0, abs=1e-12)
    assert r["naive_diff"] == pytest.approx(-0.2) and r["naive_error"] == pytest.approx(-0.0125)
    assert r["within"] and r["passed"]


def test_the_comparison_fails_where_it_should():
    # The profile did not flag a planted attribute.
    assert not _compare(row={"bh_survives": False, "p_bh": 0.2})["passed"]
    # A wrong bonus: 0 expected, -0.1875 found, 3 SE away (2 SE = 0.125).
    wrong = _compare(hedging=0.0)
    assert wrong["expected"] == 0.0 and not wrong["within"] and not wrong["passed"]
    assert abs(wrong["rate_error"]) > SE_LIMIT * wrong["rate_diff_se"] + FLOAT_TOL
    # An unplanted attribute whose rewrites flip a planted one: the sum over every bonus
    # says why its difference is not 0.
    other = _compare("emoji")
    assert other["expected"] == 0.0 and other["expected_all_bonuses"] == pytest.approx(-0.1875)
    assert not other["passed"]


def test_only_the_identified_estimand_and_the_files_own_rows():
    # Only the ATU: the W=0 originals (examples 1 and 2), and no naive effect.
    atu = (_effects(None, 0.425, None), _effects(None, 0.55, None))
    r = _compare(effects=atu)
    assert (r["estimand"], r["n"], r["naive_diff"]) == ("ATU", 2, None)
    assert r["rate_diff"] == pytest.approx(-0.125) and r["share_flipped"] == 0.5
    assert r["rate_diff_se"] == pytest.approx(0.125)  # sd(-.25, 0) / sqrt(2)
    # Rows that do not give the effects file's estimate are not its rows.
    with pytest.raises(RateError, match="the effects file"):
        _compare(effects=(_effects(0.3, 0.425, 0.3), PLAIN_FX))
    assert not math.isnan(r["rate_diff"])


SMOKE_ATTRIBUTES = "sycophancy,exclamation,hedging,emoji"


@pytest.fixture
def smoke_check(tmp_path, monkeypatch):
    """The check at smoke size (60 reviews; the three planted attributes and emoji), run for
    real: the rules, the sweep, MiniLM (its head fitted on 150 reviews of each split instead of
    every one, to keep the test short: a real sentiment head all the same) and both profiles."""
    from rate.demos import planted_rm
    from rate.score import minilm

    labelled = minilm._labelled
    monkeypatch.setattr(minilm, "_labelled", lambda split: tuple(x[:150] for x in labelled(split)))
    monkeypatch.setattr(planted_rm, "_minilm", None)  # built again with that head
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", "")  # restored after: the sweep sets it
    out = tmp_path / "check"
    return run_profiles(out, SMOKE_ATTRIBUTES, None, smoke=True), out


def test_the_smoke_check_on_drug_reviews_passes_and_fails_with_a_wrong_bonus(smoke_check):
    run, out = smoke_check
    record = check_run(run, out)
    rows = {r["attribute"]: r for r in record["attributes"]}
    assert list(rows) == SMOKE_ATTRIBUTES.split(",") and record["smoke"]
    # The drug reviews hold no sycophantic opener: an ATU. Some exclaim and some hedge: ATEs.
    assert rows["sycophancy"]["estimand"] == "ATU" and rows["sycophancy"]["n"] == 60
    assert rows["exclamation"]["estimand"] == rows["hedging"]["estimand"] == "ATE"
    for name, r in rows.items():
        # planted - MiniLM is the bonuses, text by text (float32 logits batched differently).
        assert r["identity_residual"] < FLOAT_TOL, name
        # Within 2 SE of the data (the SE of the paired difference; not a constant).
        assert abs(r["rate_error"]) <= SE_LIMIT * r["rate_diff_se"] + FLOAT_TOL, name
        assert r["passed"], r
    for name in ("sycophancy", "exclamation", "hedging"):
        assert rows[name]["bh_survives"] and rows[name]["p_bh"] <= 0.05, rows[name]
        assert rows[name]["share_flipped"] > 0.5, rows[name]
    # "That is an excellent question." is one of the rules' openers the planted detector does
    # not read: fewer than every pair flips it, so its SE is not 0.
    assert 0 < rows["sycophancy"]["share_flipped"] < 1 and rows["sycophancy"]["rate_diff_se"] > 0
    assert rows["emoji"]["planted_bonus"] == 0.0 and rows["emoji"]["expected"] == 0.0
    # A wrong bonus: hedging believed unplanted (and so expected 0) fails its row alone.
    wrong = check_run(run, out, {"sycophancy": 0.30, "exclamation": 0.20, "hedging": 0.0})
    failed = [r["attribute"] for r in wrong["attributes"] if not r["passed"]]
    assert failed == ["hedging"], wrong["attributes"]
    # The set: check.json and check.md, the table naming every attribute.
    files = write_check(out, record)
    assert read_json(files[0])["passed"] is True
    table = files[1].read_text()
    assert all(f"| {name} |" in table for name in rows) and "every check holds" in table
