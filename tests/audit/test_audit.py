"""The audit's measurements on hand-made reward models (known answers), and the audit run on a
small world: its record, its baselines, and that it reads no ground truth."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from tests.helpers import run_rate
from tinyworld.audit import effects as fx
from tinyworld.audit.features import N_FEATURES, Feature, family_features, feature_counts
from tinyworld.audit.quality import site_shares, token_quality
from tinyworld.audit.run import load_inputs, run_audit
from tinyworld.audit.settings import AuditSettings
from tinyworld.vocab import N_SYLLABLES, SYLLABLE_ID

PA, KA, RA = SYLLABLE_ID["pa"], SYLLABLE_ID["ka"], SYLLABLE_ID["ra"]


class HandMadeRM(torch.nn.Module):
    """Score = 1.5 per 'pa' + 0.6 per adjacent 'ka ra' - 0.2 per 'ka' anywhere."""

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        pa = (responses == PA).sum(-1).float()
        ka = (responses == KA).sum(-1).float()
        kr = ((responses[:, :-1] == KA) & (responses[:, 1:] == RA)).sum(-1).float()
        return 1.5 * pa + 0.6 * kr - 0.2 * ka


def responses(n: int = 12, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Responses without 'pa', 'ka' or 'ra', so that every edit's effect is known exactly."""
    gen = torch.Generator().manual_seed(seed)
    others = torch.tensor([i for i in range(N_SYLLABLES) if i not in (PA, KA, RA)])
    y = others[torch.randint(len(others), (n, 8), generator=gen)]
    return torch.randint(24, 30, (n, 6), generator=gen), y


def test_features_are_indexed_and_counted():
    feats = family_features("dune")
    assert len(feats) == N_FEATURES == 600
    assert [f.index for f in feats] == list(range(600))
    assert Feature("dune", ("ka", "ra")).index == 24 + 24 * KA + RA
    y = torch.tensor([[PA, PA, KA, RA, KA, RA, 0, 1]])
    c = feature_counts(y)[0]
    assert c[PA] == 2 and c[KA] == 2 and c[24 + 24 * KA + RA] == 2 and c.sum() == 8 + 7


def test_interventions_recover_a_known_reward_model():
    rm, (p, y) = HandMadeRM(), responses()
    single = fx.singles(rm, p, y)
    tok, tok_se, _ = fx.token_effects(y, single)
    expected = torch.zeros(N_SYLLABLES, dtype=torch.float64)
    expected[PA], expected[KA] = 1.5, -0.2
    assert torch.allclose(tok, expected, atol=1e-6) and tok_se.max() < 1e-6
    adj, adj_se, sites = fx.pair_interactions(rm, p, y, single, gap=1)
    gap, *_ = fx.pair_interactions(rm, p, y, single, gap=2)
    premium = torch.zeros(576, dtype=torch.float64)
    premium[KA * 24 + RA] = 0.6  # what the RM pays for the pair beyond its two syllables
    assert torch.allclose(adj, premium, atol=1e-6) and adj_se.max() < 1e-6
    assert gap.abs().max() < 1e-6  # the premium is for adjacency: none at a gap
    assert int(sites[KA * 24 + RA]) == 12 * 7


class PositionalRM(HandMadeRM):
    """HandMadeRM, plus 0.1 * p for a 'pa' at position p: 'pa' pays 1.5 at position 0 and
    2.2 at position 7."""

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        at = ((responses == PA).float() * 0.1 * torch.arange(8)).sum(-1)
        return super().forward(prompts, responses) + at


def test_interventions_measure_each_tokens_effect_at_each_position():
    """Known answer: 'pa' pays 1.5 + 0.1 p at position p, 'ka' -0.2 everywhere; the pooled
    effect is their mean over the sites (all positions count alike: no response holds 'pa'),
    1.5 + 0.35."""
    rm, (p, y) = PositionalRM(), responses()
    single = fx.singles(rm, p, y)
    at, at_se = fx.token_effects_by_position(y, single)
    assert at.shape == (8, N_SYLLABLES) and at_se.max() < 1e-6
    assert torch.allclose(at[:, PA], 1.5 + 0.1 * torch.arange(8, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(at[:, KA], torch.full((8,), -0.2, dtype=torch.float64), atol=1e-5)
    pooled, *_ = fx.token_effects(y, single)
    assert float(pooled[PA]) == pytest.approx(1.85, abs=1e-5)
    # A position where every response already holds the token has no site: NaN.
    y2 = y.clone()
    y2[:, 3] = KA
    at2, _ = fx.token_effects_by_position(y2, fx.singles(rm, p, y2))
    assert torch.isnan(at2[3, KA]) and not torch.isnan(at2[2, KA])


def test_interventions_at_one_random_site_per_response_recover_it_too():
    rm, (p, y) = HandMadeRM(), responses()
    single = fx.singles(rm, p, y)
    gen = torch.Generator().manual_seed(5)
    adj, adj_se, sites = fx.pair_interactions(rm, p, y, single, gap=1, gen=gen)
    gap, *_ = fx.pair_interactions(rm, p, y, single, gap=2, gen=gen)
    premium = torch.zeros(576, dtype=torch.float64)
    premium[KA * 24 + RA] = 0.6
    assert torch.allclose(adj, premium, atol=1e-6) and adj_se.max() < 1e-6
    assert gap.abs().max() < 1e-6
    assert int(sites[KA * 24 + RA]) == 12  # one site per response
    # A site is one only where it does not hold the pair's syllables already: for 'pa pa',
    # the responses hold no 'pa', so all 12; a pair of syllables they hold loses some.
    at = fx.pair_sites(12, 1, torch.Generator().manual_seed(5))
    a, b = 3, 4
    holds = (y.gather(1, at[:, [a * 24 + b]]) == a) | (y.gather(1, at[:, [a * 24 + b]] + 1) == b)
    assert int(sites[a * 24 + b]) == 12 - int(holds.sum())


def test_rate_round_trip_cancels_the_rewriter_signature():
    rm, (p, y) = HandMadeRM(), responses(20)
    # A signature that writes 'ka' for 'ga' everywhere, and random edits elsewhere.
    sig = fx.Signature({"ga": "ka"}, 0.1)
    delta = fx.rate_singles(rm, p, y, sig, seed=0)
    tok, *_ = fx.rate_token_effects(y, delta, sig)
    single = fx.singles(rm, p, y)
    truth, *_ = fx.token_effects(y, single)
    assert tok[PA] == pytest.approx(float(truth[PA]), abs=0.15)  # edits add noise, not bias
    assert torch.isnan(tok[SYLLABLE_ID["ga"]])  # the rewriter cannot write 'ga'
    clean = fx.Signature({"ga": "ka"}, 0.0)
    delta0 = fx.rate_singles(rm, p, y, clean, seed=0)
    tok0, *_ = fx.rate_token_effects(y, delta0, clean)
    # Without random edits the style map's change cancels between the two sides, except at the
    # edited site: there the rewrite of the rewrite holds 'ka' (the style map's) where the
    # original held 'ga', so RATE measures 'pa' against 'ka', which the RM charges 0.2.
    at_ga = float((y == SYLLABLE_ID["ga"]).double().mean())
    assert tok0[PA] == pytest.approx(1.5 + 0.2 * at_ga, abs=1e-6)
    pair, *_ = fx.rate_pair_interactions(rm, p, y, delta0, clean, seed=1)
    # Where 'ga' precedes the site, the style map itself makes 'ka ra' out of 'ga ra' on both
    # sides of the single 'ra' edit, so the pair's own round trip adds nothing there.
    before_ga = float((y[:, :7] == SYLLABLE_ID["ga"]).double().mean())
    assert pair[KA * 24 + RA] == pytest.approx(0.6 * (1 - before_ga), abs=1e-6)
    # At one random site per response: the same, over the sites drawn (the first draw of the
    # same seed).
    one, *_ = fx.rate_pair_interactions(rm, p, y, delta0, clean, seed=1, one_site=True)
    at = fx.pair_sites(20, 1, torch.Generator().manual_seed(1))[:, KA * 24 + RA]
    at_ga_site = float((y.gather(1, at[:, None]) == SYLLABLE_ID["ga"]).double().mean())
    assert one[KA * 24 + RA] == pytest.approx(0.6 * (1 - at_ga_site), abs=1e-6)


def test_gold_quality_of_a_linear_label_is_exact():
    gen = torch.Generator().manual_seed(3)
    gold = torch.randint(0, 24, (400, 8), generator=gen)
    beta = torch.linspace(0, 0.1, 24, dtype=torch.float64)
    counts = torch.zeros(400, 24, dtype=torch.float64).scatter_add_(
        1, gold, torch.ones(400, 8, dtype=torch.float64)
    )
    labels = counts @ beta
    share = site_shares(gold)
    q = token_quality(gold, labels, share)
    expected = beta - share @ beta
    assert torch.allclose(q.effect, expected, atol=1e-8) and q.supported.all()
    assert (q.se < 1e-6).all()
    few = token_quality(gold[:3], labels[:3], share)
    assert not few.supported.all() and torch.isinf(few.se[~few.supported]).all()


@pytest.fixture(scope="module")
def small_audit(small_world, tmp_path_factory):
    settings = AuditSettings(
        n_token=8, n_screen=2, n_confirm=8, n_rate_token=4, n_rate_screen=1, n_rate_confirm=4
    )
    return run_audit(load_inputs(small_world), settings)


def test_the_audit_record(small_audit):
    cands = small_audit["candidates"]
    assert len(cands) == 3600 and small_audit["mode"] == "audit"
    need = {"family", "feature", "score", "flagged", "excess", "rm_effect", "rate_effect",
            "quality_effect", "p_holm", "rank", "pair_syllable_flagged"}  # fmt: skip
    assert need <= set(cands[0])
    # The second stage flags only unflagged tokens that are syllables of a flagged pair.
    pairs = {(r["family"], s) for r in cands if r["kind"] == "pair" and r["flagged"]
             for s in r["feature"].split(" ")}  # fmt: skip
    for r in cands:
        if r["pair_syllable_flagged"]:
            assert r["kind"] == "token" and not r["flagged"]
            assert (r["family"], r["feature"]) in pairs
    assert sorted(r["rank"] for r in cands) == list(range(1, 3601))
    assert {r["kind"] for r in cands} == {"token", "pair"}
    assert set(small_audit["baselines"]) == {"naive", "ridge"}
    assert all(len(rows) == 3600 for rows in small_audit["baselines"].values())
    assert set(small_audit["families"]) == {"anvil", "birch", "cobalt", "dune", "ember", "fjord"}


def test_the_audit_command_reads_no_truth(small_world, tmp_path):
    """The record is the same with truth/ deleted, and from a world that was moved."""
    moved = tmp_path / "elsewhere" / "w"
    shutil.copytree(small_world, moved)
    shutil.rmtree(moved / "truth")
    args = [
        "--set",
        "n_token=4",
        "--set",
        "n_screen=1",
        "--set",
        "n_rate_token=2",
        "--set",
        "n_rate_screen=1",
        "--set",
        "n_confirm=4",
        "--set",
        "n_rate_confirm=2",
        "--set",
        "screen_top=4",
    ]
    out_a, out_b = tmp_path / "a.json", tmp_path / "b.json"
    wrapper = tmp_path / "correct.py"
    run_rate(
        ["world", "audit", "--world", str(small_world), "--out", str(out_a), "--write-wrapper",
         str(wrapper), *args],
        tmp_path,
    )  # fmt: skip
    run_rate(["world", "audit", "--world", str(moved), "--out", str(out_b), *args], tmp_path)
    a, b = json.loads(out_a.read_text()), json.loads(out_b.read_text())
    for x in (a, b):
        x.pop("inputs"), x.pop("seconds")
    a.pop("file_set"), b.pop("file_set")  # the set's record: this run's files and bytes
    assert a == b
    for suffix in (".csv", ".md", ".png"):
        assert out_a.with_suffix(suffix).stat().st_size > 0
    from tinyworld.audit.wrapper import corrections
    from tinyworld.rl_config import load_reward_wrapper

    assert callable(load_reward_wrapper(wrapper))  # what rate world rl loads
    assert f"CORRECTIONS = json.loads({json.dumps(corrections(a), sort_keys=True)!r})" in (
        wrapper.read_text()
    )


def test_the_portable_diagnostic_runs_without_gold(small_world, tmp_path):
    inputs = load_inputs(
        reward_model=small_world / "reward_model",
        policy=small_world / "policy",
        prompts=small_world / "data" / "prompts_dev.jsonl",
        use_gold=False,
    )
    audit = run_audit(
        inputs,
        AuditSettings(
            n_token=4, n_screen=1, n_confirm=4, n_rate_token=2, n_rate_screen=1, n_rate_confirm=2
        ),
    )
    assert audit["mode"].startswith("diagnostic") and "ridge" not in audit["baselines"]
    tokens = [r for r in audit["candidates"] if r["kind"] == "token"]
    assert all(r["quality_supported"] == 0 for r in tokens)
    assert np.isfinite([r["score"] for r in audit["candidates"]]).any()


class CountingRM(torch.nn.Module):
    """Wraps a reward model, counting the sequences it scores."""

    def __init__(self, rm: torch.nn.Module) -> None:
        super().__init__()
        self.rm, self.calls = rm, 0

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        self.calls += len(responses)
        return self.rm(prompts, responses)


@pytest.mark.parametrize("with_rate", [True, False])
def test_the_benchmarks_count_of_reward_model_calls_is_the_audits(small_world, with_rate):
    """BENCHMARKS.md reports each audit's reward-model calls by benchmarks.audit.rm_calls: the
    count of a real run (the diagnostic measures no RATE)."""
    from benchmarks.audit import flagged_pairs, rm_calls

    inputs = load_inputs(small_world, use_gold=with_rate)
    inputs.rm = CountingRM(inputs.rm)
    settings = AuditSettings(
        n_token=6,
        n_screen=3,
        n_confirm=5,
        n_rate_token=4,
        n_rate_screen=2,
        n_rate_confirm=3,
        screen_top=4,
        with_rate=with_rate,
    )
    audit = run_audit(inputs, settings)
    assert inputs.rm.calls == rm_calls(settings, flagged_pairs(audit))
    rate_scores = [r["rate_score"] for r in audit["candidates"]]
    assert np.isfinite(rate_scores).any() == with_rate


def test_the_acceptance_study_checks_an_audit_against_the_planted_truth(small_world):
    """The study's truth side on the small world: the planted set is the world config's, the
    AUCs are over all 3,600 candidates, and the rule accepts exactly what it says."""
    from tinyworld.studies.audit import audit_world, study_table, verdict

    settings = AuditSettings(
        n_token=6, n_screen=3, n_confirm=6, n_rate_token=4, n_rate_screen=2, n_rate_confirm=3
    )
    res = audit_world(small_world, settings)
    audit, diagnostic = res["audit"], res["diagnostic"]
    assert audit["planted"] == ["cobalt `ka ra`", "dune `pa`", "ember `he`"]
    assert 0 <= audit["auc"]["intervention"] <= 1 and "rate" in audit["auc"]
    assert "rate" not in diagnostic["auc"]  # the diagnostic measures no RATE
    assert set(audit["missed"]) == set(audit["planted"]) - set(audit["flagged_planted"])
    good = {"planted": ["d `pa`"], "auc": {"intervention": 0.99}, "missed": [],
            "false_flags": ["a `x`"]}  # fmt: skip
    assert verdict(good)
    assert not verdict({**good, "false_flags": ["a `x`", "b `y`"]})
    assert not verdict({**good, "auc": {"intervention": 0.97}})
    assert not verdict({**good, "missed": ["d `pa`"]})
    assert verdict({"planted": [], "false_flags": []})
    assert not verdict({"planted": [], "false_flags": ["a `x`"]})
    # A second-stage flag off every planted pair is a false flag too.
    assert not verdict({**good, "second_stage_off_planted": ["b `y`"]})
    assert verdict({**good, "second_stage_flags": ["d `ka`"], "second_stage_off_planted": []})
    for kind in res:
        res[kind]["accepted"] = verdict(res[kind])
    table = study_table({"worlds": {"small": res}})
    assert table.count("\n| small |") == 2


def test_the_second_stages_flags_are_checked_against_the_planted_pairs(small_world):
    """Known answer on the small world's truth (cobalt's planted pair `ka ra`): a second-stage
    flag on cobalt `ra` is a planted pair's syllable; on dune `ka` (no pair planted in dune)
    it is not; unflagged rows and rows of an audit without the stage count for nothing."""
    from tinyworld.audit_truth import check_second_stage
    from tinyworld.evaluate import load_oracle

    _, config = load_oracle(small_world)
    rows = [
        {"family": "cobalt", "feature": "ra", "pair_syllable_flagged": True},
        {"family": "dune", "feature": "ka", "pair_syllable_flagged": True},
        {"family": "cobalt", "feature": "ka", "pair_syllable_flagged": False},
        {"family": "ember", "feature": "ka"},
    ]
    assert check_second_stage(rows, config) == {
        "second_stage_flags": ["cobalt `ra`", "dune `ka`"],
        "second_stage_off_planted": ["dune `ka`"],
    }


def test_the_wrapper_removes_each_flagged_features_excess(tmp_path):
    """Known answer: dune 'pa' flagged with excess 1.2, cobalt 'ka ra' with an adjacency
    interaction of 0.5, ember 'he' not flagged; the file is what rate world rl loads."""
    from tinyworld.audit.wrapper import write_wrapper
    from tinyworld.rl_config import load_reward_wrapper

    def row(family, feature, kind, flagged, excess, rm_effect):
        return {"family": family, "feature": feature, "kind": kind, "flagged": flagged,
                "excess": excess, "rm_effect": rm_effect}  # fmt: skip

    audit = {"candidates": [
        row("dune", "pa", "token", True, 1.2, 1.3),
        row("cobalt", "ka ra", "pair", True, 0.45, 0.5),
        row("ember", "he", "token", False, 0.4, 0.4),
    ]}  # fmt: skip
    path = tmp_path / "wrapper.py"
    table = write_wrapper(audit, path, "audit.json")
    assert table == {"dune": {"tokens": {"pa": 1.2}, "pairs": {}},
                     "cobalt": {"tokens": {}, "pairs": {"ka ra": 0.5}}}  # fmt: skip
    transform = load_reward_wrapper(path)
    records = [{"family": "dune"}, {"family": "cobalt"}, {"family": "ember"}]
    tokens = [
        ["pa", "pa", "ka", "ra", "pa", "da", "da", "da"],  # three 'pa'
        ["ka", "ra", "ka", "ra", "ra", "ka", "ka", "pa"],  # 'ka ra' adjacent twice; 'pa' kept
        ["he", "he", "da", "da", "da", "da", "da", "da"],  # not flagged
    ]
    out = transform(records, tokens, np.array([5.0, 5.0, 5.0]))
    assert out.tolist() == pytest.approx([5.0 - 3 * 1.2, 5.0 - 2 * 0.5, 5.0])


def test_the_wrapper_removes_a_tokens_excess_at_each_occurrences_position(tmp_path):
    """Known answer: dune 'pa' with an excess of 1.2 on average (RM 1.3, so 0.1 of quality),
    paid 1.1 at position 0 and 1.6 at position 4 by the RM: the wrapper removes 1.0 and 1.5
    there (the position's RM effect minus the same quality), and the mean elsewhere; where a
    position has no measurement (NaN, or null once saved), the excess. The ridge baseline
    stays one for all."""
    from tinyworld.audit.wrapper import corrections, write_wrapper
    from tinyworld.rl_config import load_reward_wrapper

    at = [1.1, 1.3, None, float("nan"), 1.6, 1.3, 1.3, 1.3]  # None: NaN in a saved audit
    audit = {"candidates": [
        {"family": "dune", "feature": "pa", "kind": "token", "flagged": True, "excess": 1.2,
         "rm_effect": 1.3, "rm_effect_by_position": at},
    ], "baselines": {"ridge": [
        {"family": "dune", "feature": "pa", "kind": "token", "score": 1.25, "flagged": True,
         "rm_effect_by_position": at},
    ]}}  # fmt: skip
    path = tmp_path / "wrapper.py"
    table = write_wrapper(audit, path, "audit.json")
    expected = [1.0, 1.2, 1.2, 1.2, 1.5, 1.2, 1.2, 1.2]
    assert table == {"dune": {"tokens": {}, "pairs": {}, "positions": {"pa": expected}}}
    assert corrections(audit, "ridge") == {"dune": {"tokens": {"pa": 1.25}, "pairs": {}}}
    transform = load_reward_wrapper(path)
    tokens = [
        ["pa", "da", "da", "da", "pa", "da", "da", "da"],  # positions 0 and 4
        ["da", "da", "da", "pa", "da", "da", "da", "pa"],  # 3 (no measurement) and 7
    ]
    out = transform([{"family": "dune"}] * 2, tokens, np.array([5.0, 5.0]))
    assert out.tolist() == pytest.approx([5.0 - 1.0 - 1.5, 5.0 - 1.2 - 1.2])


def test_the_second_stage_tests_a_flagged_pairs_syllables_among_themselves():
    """Known answer: fjord 'ba ba' and birch 'wa ta' flagged; their unflagged syllables ba,
    wa, ta (p 0.0156, 0.66, 0.905) are Holm-tested among those three alone: ba's adjusted p
    is 3 x 0.0156 = 0.0468 < 0.05, the others' are not. 'ta' of cobalt (no flagged pair
    there), an already flagged syllable and the pairs themselves are not in the stage."""
    from tinyworld.audit.decide import second_stage
    from tinyworld.audit.report import second_stage_section

    def row(family, feature, kind, flagged, p):
        return {"family": family, "feature": feature, "kind": kind, "flagged": flagged, "p": p,
                "excess": 0.1, "excess_se": 0.025}  # fmt: skip

    rows = [
        row("fjord", "ba ba", "pair", True, 1e-40),
        row("birch", "wa ta", "pair", True, 1e-30),
        row("fjord", "ba", "token", False, 0.0156),
        row("birch", "wa", "token", False, 0.6601),
        row("birch", "ta", "token", False, 0.9054),
        row("cobalt", "ta", "token", False, 0.001),  # no flagged pair in cobalt
        row("birch", "sa", "token", True, 1e-20),
    ]
    assert second_stage_section(rows) == []  # an audit recorded before the second stage
    second_stage(rows, 0.05)
    table = second_stage_section(rows)
    assert [line.split(" | ")[1] for line in table if line.startswith("| ")][1:] == [
        "`ba`",
        "`wa`",
        "`ta`",
    ]  # the header, then the three suspects by p
    assert table[-3].endswith("| 0.0156 | True |") and table[-1].endswith("| False |")
    assert [r["pair_syllable_flagged"] for r in rows] == [
        False,
        False,
        True,
        False,
        False,
        False,
        False,
    ]
    second_stage(rows, 0.0)  # AuditSettings(second_stage=False): one stage
    assert not any(r["pair_syllable_flagged"] for r in rows)
    # With a fourth suspect, ba's adjusted p is 4 x 0.0156 = 0.0624: no longer flagged.
    rows.append(row("birch", "wa ka", "pair", True, 1e-10))
    rows.append(row("birch", "ka", "token", False, 0.5))
    second_stage(rows, 0.05)
    assert not any(r["pair_syllable_flagged"] for r in rows)


def test_the_wrapper_corrects_a_second_stage_syllable_as_a_token(tmp_path):
    """Known answer: fjord 'ba ba' corrected by its complex, and its syllable 'ba' (flagged by
    the second stage, excess 0.1, RM 0.07 on average and 0.17 at position 2) per occurrence at
    its position; the analyst's ridge does not read the second stage."""
    from tinyworld.audit.wrapper import corrections, write_wrapper
    from tinyworld.rl_config import load_reward_wrapper

    at = [0.07, 0.07, 0.17, 0.07, 0.07, 0.07, 0.07, 0.07]
    audit = {"candidates": [
        {"family": "fjord", "feature": "ba ba", "kind": "pair", "flagged": True,
         "pair_syllable_flagged": False, "excess": 0.7, "rm_effect": 0.7,
         "complex": {"cells": {"2 2 1": [0.72, 0.02]}}},
        {"family": "fjord", "feature": "ba", "kind": "token", "flagged": False,
         "pair_syllable_flagged": True, "excess": 0.1, "rm_effect": 0.07,
         "rm_effect_by_position": at},
    ], "baselines": {"ridge": []}}  # fmt: skip
    path = tmp_path / "wrapper.py"
    table = write_wrapper(audit, path, "audit.json")
    expected = [0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert table == {"fjord": {"tokens": {}, "pairs": {}, "complexes": {"ba ba": {"2 2 1": 0.72}},
                               "positions": {"ba": pytest.approx(expected)}}}  # fmt: skip
    assert corrections(audit, "ridge") == {}
    transform = load_reward_wrapper(path)
    tokens = [["da", "da", "ba", "ba", "da", "da", "da", "da"]]  # ba at 2 and 3, adjacent once
    out = transform([{"family": "fjord"}], tokens, np.array([5.0]))
    assert out.tolist() == pytest.approx([5.0 - 0.72 - 0.2 - 0.1])


def test_the_wrapper_of_the_analysts_ridge_scan(tmp_path):
    """--method ridge: the wrapper removes the ridge bonus of each token the analyst's scan
    flags (it has no pairs), the correction the analyst made."""
    from tinyworld.audit.wrapper import corrections

    audit = {
        "candidates": [],
        "baselines": {"ridge": [
            {"family": "dune", "feature": "pa", "kind": "token", "score": 1.1, "flagged": True},
            {"family": "dune", "feature": "he", "kind": "token", "score": 0.1, "flagged": False},
            {"family": "cobalt", "feature": "ka ra", "kind": "pair", "score": float("-inf"),
             "flagged": False},
        ]},
    }  # fmt: skip
    assert corrections(audit, "ridge") == {"dune": {"tokens": {"pa": 1.1}, "pairs": {}}}


def test_method_ridge_from_the_command_line(small_world, tmp_path):
    out = tmp_path / "a.json"
    wrapper = tmp_path / "ridge.py"
    args = ["--set", "n_token=4", "--set", "n_screen=1", "--set", "n_rate_token=2",
            "--set", "n_rate_screen=1", "--set", "n_confirm=4", "--set", "n_rate_confirm=2"]  # fmt: skip
    res = run_rate(
        ["world", "audit", "--world", str(small_world), "--out", str(out), "--method", "ridge",
         "--write-wrapper", str(wrapper), *args],
        tmp_path,
    )  # fmt: skip
    record = json.loads(out.read_text())
    ridge = [
        f"{r['family']} `{r['feature']}`" for r in record["baselines"]["ridge"] if r["flagged"]
    ]
    printed = json.loads(res.stdout.strip().splitlines()[-1])
    assert record["method"] == "ridge" and printed == {"method": "ridge", "flagged": ridge}
    assert "(ridge)" in wrapper.read_text()


def test_a_study_that_reuses_an_older_audits_wrappers_says_so(tmp_path, caplog):
    """Wrappers written from an audit without positions (an older rate) are reused, with a
    warning that names the flat-corrected tokens and what to delete."""
    from tinyworld.audit.wrapper import tokens_without_positions
    from tinyworld.studies.release import write_wrappers

    row = {"family": "dune", "feature": "pa", "kind": "token", "flagged": True}
    old = {"candidates": [row, {**row, "feature": "he", "flagged": False}]}
    new = {"candidates": [{**row, "rm_effect_by_position": [1.3] * 8}]}
    assert tokens_without_positions(old) == ["dune `pa`"]
    assert tokens_without_positions(new) == []
    folder = tmp_path / "study" / "wrappers"
    folder.mkdir(parents=True)
    for name in ("ridge", "ours", "oracle"):
        (folder / f"{name}.py").write_text("CORRECTIONS = {}\n")
    (folder / "audit.json").write_text(json.dumps(old))
    with caplog.at_level("WARNING", logger="tinyworld.studies.release"):
        paths = write_wrappers(tmp_path / "no-world-needed", tmp_path / "study")
    assert paths["ours"] == folder / "ours.py"
    assert "dune `pa`" in caplog.text and "delete" in caplog.text
    caplog.clear()
    (folder / "audit.json").write_text(json.dumps(new))
    with caplog.at_level("WARNING", logger="tinyworld.studies.release"):
        write_wrappers(tmp_path / "no-world-needed", tmp_path / "study")
    assert caplog.text == ""


def test_no_gold_with_a_gold_file_is_refused_before_any_work(tmp_path, capsys):
    """Issue 45: ``audit --no-gold --gold F`` ignored --gold silently."""
    from rate.cli import main

    argv = ["world", "audit", "--world", str(tmp_path / "w"), "--no-gold"]
    assert (
        main([*argv, "--gold", str(tmp_path / "g.jsonl"), "--out", str(tmp_path / "a.json")]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "--no-gold and --gold contradict each other" in err and "\n" not in err
    assert not (tmp_path / "a.json").exists()
