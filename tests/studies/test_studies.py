"""The studies: coverage bookkeeping on data with a known answer and the sweeps' designs (the
studies' claims on the worlds are in test_claims.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rate.stats import slope
from tinyworld.studies.common import ScoredPool
from tinyworld.studies.coverage import coverage_of_pool, coverage_table
from tinyworld.studies.synthetic import (
    TEMPLATE,
    correlation_sweep,
    inject_typos,
    sweep_table,
    typo_level_rows,
)


def normal_pool(n: int, seed: int = 0, bias: float = 0.0, placebo: bool = False) -> ScoredPool:
    """A pool where every estimator's truth is known: per-unit effects 1 (W=1) and 0.5 (W=0),
    a rewriter signature that shifts both rewrites by 0.3, and ``bias`` added to the
    rewrite-of-rewrite only (a non-idempotent rewriter: one round more than the rewrite);
    with ``placebo``, placebo rewrites that have had that round too, W kept."""
    rng = np.random.default_rng(seed)
    w = rng.random(n) < 0.4
    effect = np.where(w, 1.0, 0.5)
    sign = np.where(w, 1.0, -1.0)
    o = rng.normal(size=n) + 2 * w  # confounded: W=1 examples score higher anyway
    perfect = o - sign * effect + rng.normal(size=n) * 0.2
    r = perfect + 0.3
    rr = o + 0.3 + bias + rng.normal(size=n) * 0.2
    rows = [{"key": str(i)} for i in range(n)]
    cols = {"original": o, "rewrite": r, "rewritten rewrite": rr, "perfect rewrite": perfect}
    if placebo:
        cols["placebo rewrite"] = r + bias + rng.normal(size=n) * 0.2
    return ScoredPool(rows, w, {"s": cols, "tinyrlhf_oracle": cols})


def test_coverage_of_an_unbiased_estimator_is_nominal():
    res = coverage_of_pool(normal_pool(50_000), "s", n=500, seeds=400, seed=1)
    for key in ("ATT_rewritten_rewrite", "ATU_rewritten_rewrite", "ATE_rewritten_rewrite"):
        assert abs(res["coverage"][key] - 0.95) < 4 * res["coverage_mc_se"], key
        assert res["coverage"][f"{key}_unpaired"] >= res["coverage"][key]
        assert res["width_ratio_paired_over_unpaired"][key] < 0.5  # pairs are tightly linked
    assert res["coverage"]["naive_effect"] == 0.0  # confounded by 2 units
    assert res["coverage"]["ATT_single_rewrite"] < 0.1  # the signature's 0.3 shift
    assert res["population_truth"]["ATT"] == pytest.approx(1.0, abs=0.01)


def test_coverage_sees_a_biased_rewriter():
    res = coverage_of_pool(normal_pool(50_000, bias=0.1), "s", n=500, seeds=100, seed=1)
    assert res["coverage"]["ATT_rewritten_rewrite"] < 0.5
    assert res["mean_error"]["ATT_rewritten_rewrite"] == pytest.approx(0.1, abs=0.02)


def test_the_placebo_removes_the_extra_rounds_bias_and_the_table_flags_what_is_left():
    res = coverage_of_pool(normal_pool(50_000, bias=0.1, placebo=True), "s", 500, 100, seed=1)
    assert res["coverage"]["ATT_rewritten_rewrite"] < 0.5
    assert res["mean_error"]["ATT_rewritten_rewrite_placebo"] == pytest.approx(0.0, abs=0.01)
    assert res["coverage"]["ATT_rewritten_rewrite_placebo"] > 0.85
    assert 1 < res["width_ratio_placebo_over_rate"]["ATT"] < 1.5
    table = coverage_table({"template": "t", "results": [res]})
    lines = {row.split(" | ")[1]: row for row in table.splitlines() if row.startswith("| s |")}
    assert lines["ATT_rewritten_rewrite"].endswith("| yes |")  # bias > 2 SE
    assert lines["ATT_rewritten_rewrite_placebo"].endswith("|  |")
    # Without placebo rewrites the study and its table have no such rows.
    plain = coverage_of_pool(normal_pool(5_000), "s", 500, 5, seed=1)
    assert "ATT_rewritten_rewrite_placebo" not in plain["coverage"]
    assert "placebo" not in coverage_table({"template": "t", "results": [plain]})


def test_sweep_tables_flag_each_level_whose_estimate_is_off_by_more_than_2_se():
    band = {"low": [-0.1, -0.1], "high": [0.1, 0.1]}
    sweep = {
        "title": "t",
        "x_label": "level",
        "levels": [0.0, 1.0],
        "series": {
            "naive": {"estimate": [0.0, 1.0], "low": [-0.1, 0.9], "high": [0.1, 1.1]},
            "rate": {"estimate": [0.05, -0.05], **band},
            "truth": {"estimate": [0.0, 0.0], **band},
        },
        "slopes": {"naive": 1.0, "rate": -0.1, "truth": 0.0},
    }
    lines = sweep_table(sweep).splitlines()
    assert lines[2].endswith("| off by > 2 SE |")
    assert lines[4].endswith("|  |") and lines[5].endswith("| naive |")


def test_correlation_sweep_subsamples_the_design():
    pool = normal_pool(40_000)
    sweeps = correlation_sweep(pool, 1000, seed=0)
    sweep = sweeps["s"]
    assert sweep["levels"] == [float(i) for i in range(11)]
    # Truth per level is the sample's; the naive estimate grows with the correlation here
    # because Z (high original score) is itself W-dependent in this pool.
    naive = sweep["series"]["naive"]["estimate"]
    assert naive[-1] > naive[0]
    assert "slope" in sweep_table(sweep)
    assert slope(np.arange(3), np.array([1.0, 3.0, 5.0])) == pytest.approx(2.0)


def test_inject_typos_is_seeded_and_spares_w_tokens():
    text = "pa da fa ha ja la ma na"
    a = inject_typos(text, "k1", "pa", "he").split()
    assert a == inject_typos(text, "k1", "pa", "he").split()
    assert a[0] == "pa" and a.count("ga") == 2
    assert sum(x != y for x, y in zip(a, text.split(), strict=True)) == 2


def test_a_typo_level_typos_the_w1_examples_below_its_share_and_the_rewriter_corrects_them():
    from rate.catalog import load_dataset_template
    from rate.records import ORIGINAL, PERFECT, REWRITE, REWRITTEN, TEXTS
    from rate.rewrite.backends import build_rewriter

    template = load_dataset_template(TEMPLATE)
    texts = ["pa da fa ha ja la ma na", "he da fa ha ja la ma na", "pa ba da ma na la ja ha"]
    base = ScoredPool(
        [{"key": f"k{i}", TEXTS: {ORIGINAL: t}} for i, t in enumerate(texts)],
        np.array([True, False, True]),
        {},
    )
    u = np.array([0.2, 0.1, 0.7])
    rows = typo_level_rows(base, u, 0.5, build_rewriter(template, 0), template.part("w_classifier"))
    # Only the first example is W=1 with u below the share: its original gets two typos.
    assert [r[TEXTS][ORIGINAL].split().count("ga") for r in rows] == [2, 0, 0]
    assert rows[1][TEXTS][ORIGINAL] == texts[1] and rows[2][TEXTS][ORIGINAL] == texts[2]
    first = rows[0][TEXTS]
    # The perfect rewrite keeps the typos; the rewriter's outputs have corrected them.
    assert first[PERFECT].split().count("ga") == 2 and first[PERFECT].split()[0] == "he"
    assert "ga" not in first[REWRITE].split() and "ga" not in first[REWRITTEN].split()
    assert first[REWRITTEN].split()[0] == "pa"
