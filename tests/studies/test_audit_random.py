"""The audit study on random worlds, end to end on two small ones: built once each without RL
runs, audited with and without gold labels, and the recall counted against the learned
shortcuts each world's record names (the small world's reward model learns little, so the
figures are checked for what they count, not for what they reach)."""

from __future__ import annotations

import json

from tests.helpers import run_rate
from tinyworld.studies.audit import random_seeds, summary
from tinyworld.studies.audit_cli import RANDOM_DRAW

SEEDS = (11, 12)
TINY = {"n_token": 8, "n_screen": 4, "n_confirm": 16, "screen_top": 4, "n_rate_token": 4,
        "n_rate_screen": 2, "n_rate_confirm": 4, "n_complex": 4}  # fmt: skip


def test_the_audit_study_on_two_small_random_worlds(tmp_path):
    worlds, out = tmp_path / "worlds", tmp_path / "out"
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    seeds = ",".join(map(str, SEEDS))
    args = ["world", "study", "audit", "--seeds", seeds, "--small", "--worlds", str(worlds)]
    printed = run_rate([*args, "--out", str(out), *sets], tmp_path).stdout
    study = json.loads(next(out.glob("audit_study_*.json")).read_text())
    assert list(study["worlds"]) == [f"random-{s}" for s in SEEDS]  # no packaged world
    checks = {kind: [] for kind in ("audit", "diagnostic")}
    for seed in SEEDS:
        record = json.loads((worlds / f"random-{seed}-small/truth/shortcuts.json").read_text())
        for kind, check in study["worlds"][f"random-{seed}"].items():
            assert check["learned"] == sorted(record["learned"])
            assert set(check["flagged_learned"]) | set(check["missed_learned"]) == set(
                record["learned"]
            )
            assert set(check["flagged_learned"]) <= set(check["flagged_planted"])
            checks[kind].append(check)
    random = study["random"]
    assert random["seeds"] == list(SEEDS) and random["small"]
    for kind in ("audit", "diagnostic"):
        s = random[kind]
        learned = [x for c in checks[kind] for x in c["learned"]]
        flagged = [x for c in checks[kind] for x in c["flagged_learned"]]
        assert s["learned"] == len(learned) > 0 and s["flagged_learned"] == len(flagged)
        assert s["recall"] == len(flagged) / len(learned)
        # The same as counted here (a NaN, no learned pair, is null once written).
        assert s == {k: None if v != v else v for k, v in summary(checks[kind]).items()}
    assert f"Random worlds (seeds {', '.join(map(str, SEEDS))}, small)" in printed
    assert "| audit |" in printed and "| diagnostic |" in printed


def test_the_summary_counts_every_world_together():
    """Known answer: 3 of 4 learned shortcuts flagged (1 of 2 pairs), 2 false flags and a
    second-stage flag off every planted pair: recall 0.75, of pairs 0.5, 3 false flags."""

    def check(learned, flagged, false=(), off=(), echoes=()):
        return {"learned": learned, "flagged_learned": flagged, "false_flags": list(false),
                "second_stage_off_planted": list(off), "echoes": list(echoes)}  # fmt: skip

    s = summary([
        check(["a `ka`", "a `ka ra`"], ["a `ka`", "a `ka ra`"], false=["b `x`"]),
        check(["c `pa`", "d `sa sa`"], ["c `pa`"], false=["d `y`"], off=["d `z`"],
              echoes=["e `sa sa` (of d `sa sa`)"]),
    ])  # fmt: skip
    assert (s["learned"], s["flagged_learned"], s["recall"]) == (4, 3, 0.75)
    assert (s["learned_pairs"], s["flagged_learned_pairs"], s["recall_pairs"]) == (2, 1, 0.5)
    assert (s["false_flags"], s["echoes"], s["met"]) == (3, 1, False)


def test_random_n_takes_the_first_n_seeds_of_the_draw():
    """``--random 3`` audits the first three of the acceptance seeds (``--random 12``)."""
    twelve = random_seeds(12, RANDOM_DRAW)
    assert random_seeds(3, RANDOM_DRAW) == twelve[:3]
    assert len(set(twelve)) == 12 and all(2000 <= s < 10**6 for s in twelve)
