"""Certification, assessment, the recipe sweep and their harnesses, end to end on the small
world (CI-sized: few steps, few replicates)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rate.errors import RateError
from tests.helpers import run_rate
from tinyworld.certify.certificate import CertifySettings
from tinyworld.certify.certify import certify_policy, load_gold
from tinyworld.certify.recipes import split_gold
from tinyworld.vocab import FAMILY_ID

FAST = ["--fresh", "60", "--replicates", "200"]


def test_the_reference_certifies_as_its_gold_mean(small_world):
    # pi_new = pi_ref: every weight is 1, so SNIPS is the gold mean, ESS is n and KL is 0.
    report = certify_policy(small_world, small_world / "policy", settings=CertifySettings(60, 200))
    gold = load_gold(small_world)
    for fam, row in report["per_family"].items():
        labels = gold.labels[gold.families == FAMILY_ID[fam]].double().numpy()
        assert row["snips"]["estimate"] == pytest.approx(labels.mean(), abs=1e-6)
        assert row["ess"] == pytest.approx(len(labels), abs=0.01)
        assert row["kl"] == pytest.approx(0.0, abs=1e-5)
        assert row["snips_gain"]["estimate"] == pytest.approx(0.0, abs=1e-6)
        assert row["abstain"] is None
    # No gain is no release.
    assert report["verdict"]["decision"] == "hold"


def test_the_kl_is_read_from_a_draw_of_its_own(small_world):
    # The abstention's KL and the DR's fresh samples are two draws of the same policy: the
    # same size and prompts, different responses.
    from tinyworld.certify.certify import gather
    from tinyworld.models import load_policy, load_reward_model

    run = next((small_world / "runs").glob("*/checkpoint"))
    inputs = gather(
        load_policy(run), load_policy(small_world / "policy"),
        load_reward_model(small_world / "reward_model"), load_gold(small_world),
        settings=CertifySettings(60, 200),
    )  # fmt: skip
    for x in inputs.values():
        assert x.log_w_kl.shape == x.log_w_fresh.shape == (60,)
        assert not np.array_equal(x.log_w_kl, x.log_w_fresh)
        assert abs(x.log_w_kl.mean() - x.log_w_fresh.mean()) < 1.0


def test_a_certifier_scores_its_gold_set_once(small_world, monkeypatch):
    """A sweep's screens and an assessment's certificates share one certifier: the reference's
    log-probabilities and the corrected reward of the gold responses are computed once, and
    each certificate is the one a certifier of its own gives, to the bit."""
    from tinyworld.certify import certify as module
    from tinyworld.certify.certify import Certifier

    settings = CertifySettings(60, 50, plan_per_family=0)
    runs = [small_world / "runs" / name / "checkpoint" for name in ("kl05-s800", "kl002-s1500")]
    rows = np.arange(0, len(load_gold(small_world).labels), 3)
    alone = [certify_policy(small_world, run, settings=settings) for run in runs]
    alone_rows = certify_policy(small_world, runs[0], settings=settings, gold_rows=rows)
    reference_passes, rewards_scored = [], []
    token_logprobs, corrected_reward = module.token_logprobs, module.corrected_reward

    def counted_logprobs(policy, prompts, responses):
        reference_passes.append(len(prompts))
        return token_logprobs(policy, prompts, responses)

    def counted_reward(rm, transform, name, pool, responses):
        rewards_scored.append(len(responses))
        return corrected_reward(rm, transform, name, pool, responses)

    monkeypatch.setattr(module, "token_logprobs", counted_logprobs)
    monkeypatch.setattr(module, "corrected_reward", counted_reward)
    certifier = Certifier.load(small_world)
    n = len(certifier.gold.labels)
    assert n != 6 * 60  # the gold set's size tells its passes from the fresh samples'
    assert [certifier.certify(run, settings) for run in runs] == alone
    assert certifier.certify(runs[0], settings) == alone[0]
    assert reference_passes == [n] and rewards_scored.count(n) == 1
    assert rewards_scored.count(6 * 60) == 3  # the fresh samples are each policy's own
    # A subset runs its own passes once, on its rows alone, as a certifier of them would.
    assert certifier.subset(rows).certify(runs[0], settings) == alone_rows
    assert reference_passes == [n, len(rows)]


def test_an_abstaining_certificate_sizes_the_gold_set_that_would_let_it_answer(small_world):
    from tinyworld.certify.certificate import certify_inputs, markdown
    from tinyworld.certify.certify import gather
    from tinyworld.models import load_policy, load_reward_model
    from tinyworld.studies.certify import fresh_gold, write_fresh_gold

    run = small_world / "runs" / "kl002-s1500" / "checkpoint"
    planned = certify_policy(small_world, run, settings=CertifySettings(60, 200))
    plain = certify_policy(small_world, run, settings=CertifySettings(60, 200, plan_per_family=0))
    assert planned["verdict"]["decision"] == "abstain"
    # The plan draws on its own: the certificate's numbers are the same without it.
    for fam, row in plain["per_family"].items():
        assert "gold_plan" not in row
        assert {k: v for k, v in planned["per_family"][fam].items() if k != "gold_plan"} == row
    assert planned["verdict"]["decision"] == plain["verdict"]["decision"]
    plans = {f: r["gold_plan"]["rows"] for f, r in planned["per_family"].items()}
    for fam, rows in plans.items():
        if rows is not None:  # the KL floor holds at the planned size
            assert rows * np.exp(-max(planned["per_family"][fam]["kl"], 0)) >= 15
    b = planned["balanced"]["gold_plan"]
    sizes = list(plans.values())
    assert b["rows"] == (None if None in sizes else max(sizes))
    said = planned["verdict"]["gold_plan"]
    assert ("about" if b["rows"] else "more than") in said and said in markdown(planned)

    # Against the truth: fresh gold sets of the planned size, labelled by the oracle. The plan
    # says the family answers on at least 90% of them (its simulated share); over 20 sets the
    # share that does is within 0.25 of that (3 SDs of 20 draws).
    fam, rows = next((f, n) for f, n in plans.items() if n and planned["per_family"][f]["abstain"])
    assert rows > planned["per_family"][fam]["n_gold"]
    bigger = small_world.parent / f"gold{rows}.jsonl"
    write_fresh_gold(small_world, rows, 30_000, bigger)
    again = certify_policy(small_world, run, gold=bigger, settings=CertifySettings(60, 20))
    assert again["per_family"][fam]["n_gold"] == rows
    policy, reference = load_policy(run), load_policy(small_world / "policy")
    rm = load_reward_model(small_world / "reward_model")
    answered = []
    for seed in range(20):
        settings = CertifySettings(60, 20, seed=seed, plan_per_family=0)
        gold = fresh_gold(small_world, rows, 30_001 + seed)
        report = certify_inputs(gather(policy, reference, rm, gold, settings=settings), settings)
        answered.append(report["per_family"][fam]["abstain"] is None)
    predicted = planned["per_family"][fam]["gold_plan"]["pass_share"]
    assert predicted >= 0.9
    assert abs(np.mean(answered) - predicted) <= 0.25, (answered, predicted)


def test_the_gold_split_halves_every_family():
    families = np.repeat(np.arange(6), 11)
    select, report = split_gold(families, 0)
    assert not set(select) & set(report)
    assert len(select) + len(report) == len(families)
    assert all((families[select] == f).sum() == 5 for f in range(6))


def test_assessment_watches_the_features_the_wrapper_corrects():
    # Flagged features, and the syllables the audit's second stage flagged (the wrapper
    # corrects both); an unflagged row and one of an audit without the stage are left out.
    from tinyworld.certify.assess import flagged_features

    audit = {"candidates": [
        {"family": "fjord", "feature": "ba ba", "flagged": True, "pair_syllable_flagged": False},
        {"family": "fjord", "feature": "ba", "flagged": False, "pair_syllable_flagged": True},
        {"family": "fjord", "feature": "va", "flagged": False, "pair_syllable_flagged": False},
        {"family": "dune", "feature": "pa", "flagged": True},
        {"family": "dune", "feature": "ka", "flagged": False},
    ]}  # fmt: skip
    assert flagged_features(audit) == {"fjord": ["ba ba", "ba"], "dune": ["pa"]}


def test_certify_and_assess_commands(small_world, tmp_path):
    run = small_world / "runs" / "kl002-s1500" / "checkpoint"
    out = run_rate(
        ["world", "certify", "--world", str(small_world), "--policy", str(run),
         "--out", str(tmp_path / "cert"), *FAST],
        tmp_path,
    )  # fmt: skip
    report = json.loads((tmp_path / "cert.json").read_text())
    assert json.loads(out.stdout.splitlines()[-1])["decision"] == report["verdict"]["decision"]
    assert set(report["per_family"]) and "balanced" in report
    assert (tmp_path / "cert.md").read_text().startswith("| family | ESS")

    audit = tmp_path / "audit.json"
    run_rate(
        ["world", "audit", "--world", str(small_world), "--out", str(audit),
         "--write-wrapper", str(tmp_path / "ours.py")],
        tmp_path,
    )  # fmt: skip
    gold = tmp_path / "gold.jsonl"
    out = run_rate(
        ["world", "study", "gold", "--world", str(small_world), "--per-family", "40", "--out", str(gold)],
        tmp_path,
    )  # fmt: skip
    assert json.loads(out.stdout.splitlines()[-1])["rows"] == 240
    again = run_rate(
        ["world", "study", "gold", "--world", str(small_world), "--per-family", "50", "--out", str(gold)],
        tmp_path, check=False,
    )  # fmt: skip
    assert again.returncode != 0 and "exists; choose another --out" in again.stderr
    assert len(gold.read_text().splitlines()) == 240  # kept as it was
    run_rate(
        ["world", "assess", "--world", str(small_world), "--audit", str(audit),
         "--wrapper", str(tmp_path / "ours.py"), "--out", str(tmp_path / "assess"),
         "--gold", str(gold), *FAST],
        tmp_path,
    )  # fmt: skip
    result = json.loads((tmp_path / "assess" / "assessment.json").read_text())
    assert result["gold"] == str(gold)
    for row in result["runs"]:  # every certificate read the gold set given
        assert {r["n_gold"] for r in row["certification"]["per_family"].values()} == {40}
        if row["decision"] == "abstain":  # and says how much more gold would answer
            assert any("gold rows per family" in f for f in row["findings"]), row["findings"]
    names = {r["run"] for r in result["runs"]}
    assert names == {p.name for p in (small_world / "runs").iterdir() if p.is_dir()}
    for row in result["runs"]:
        assert row["ship"] == (row["decision"] == "ship")
        assert row["ship"] or row["findings"], row["run"]  # a run held back says why
    pilot = next(r for r in result["runs"] if r["run"] == "pilotmix-s800")
    assert any("under-weights" in f for f in pilot["findings"])

    # Issue 45, item 2: a wrapper made from another audit, or an audit whose files beside it
    # are another run's (a re-audit killed midway), is refused before any work.
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(audit.read_text()), "file_set": {}}))
    for args, message in (
        (["--audit", str(other), "--wrapper", str(tmp_path / "ours.py")], "another audit"),
        (["--audit", str(audit)], "audit.png beside it is not the one written with it"),
    ):
        if "another audit" not in message:
            (tmp_path / "audit.png").write_bytes(b"a previous run's figure")
        mixed = run_rate(
            ["world", "assess", "--world", str(small_world), *args, "--out", str(tmp_path / "y")],
            tmp_path, check=False,
        )  # fmt: skip
        assert mixed.returncode == 2 and message in mixed.stderr, mixed.stderr
        assert not (tmp_path / "y").exists()

    bad = run_rate(
        ["world", "assess", "--world", str(small_world), "--audit", str(tmp_path / "cert.json"),
         "--out", str(tmp_path / "x")],
        tmp_path, check=False,
    )  # fmt: skip
    assert bad.returncode != 0 and "not a `rate world audit` JSON" in bad.stderr
    assert "Traceback" not in bad.stderr
    few = run_rate(
        ["world", "certify", "--world", str(small_world), "--policy", str(run),
         "--plan-samples", "5"],
        tmp_path, check=False,
    )  # fmt: skip
    assert few.returncode != 0 and "Traceback" not in few.stderr
    assert "--plan-samples must be 0 (no plan) or >= 100, got 5" in few.stderr


def _world_with_runs(small_world, where, runs: tuple[str, ...]):
    """A copy of the small world with only ``runs`` of its runs."""
    world = where / "world"
    shutil.copytree(small_world, world, ignore=shutil.ignore_patterns("runs"))
    for name in runs:
        shutil.copytree(small_world / "runs" / name, world / "runs" / name)
    return world


def test_an_assessment_loads_every_policy_first_and_names_the_runs_it_leaves_out(
    small_world, tmp_path, monkeypatch
):
    from tinyworld.certify.assess import NO_CHECKPOINT, assess_world, markdown
    from tinyworld.certify.certify import Certifier

    world = _world_with_runs(small_world, tmp_path, ("kl002-s1500",))
    (world / "runs" / "aa-killed").mkdir()  # a run killed before its checkpoint
    (world / "runs" / "aa-killed" / "run_config.json").write_text("{}")
    broken = world / "runs" / "zz-broken" / "checkpoint"  # sorted after the good run
    shutil.copytree(world / "runs" / "kl002-s1500" / "checkpoint", broken)
    (broken / "policy.safetensors").write_bytes(b"not a safetensors file")
    certified = []
    certify = Certifier.certify

    def counted(self, policy_dir, settings):
        certified.append(policy_dir)
        return certify(self, policy_dir, settings)

    monkeypatch.setattr(Certifier, "certify", counted)
    settings = CertifySettings(60, 50, plan_per_family=0)
    audit = {"candidates": [{"family": "dune", "feature": "pa", "flagged": True}]}
    with pytest.raises(RateError, match="zz-broken/checkpoint/policy.safetensors: cannot load"):
        assess_world(world, audit, None, settings=settings)
    assert certified == []  # stopped before the good run's certificate, not after it

    shutil.rmtree(broken.parent)
    result = assess_world(world, audit, None, settings=settings)
    assert [r["run"] for r in result["runs"]] == ["kl002-s1500"]
    assert result["not_assessed"] == [{"run": "aa-killed", "reason": NO_CHECKPOINT}]
    assert f"| aa-killed | not assessed | | | | {NO_CHECKPOINT} |" in markdown(result)


def test_a_rerun_of_an_assessment_certifies_only_the_runs_whose_inputs_changed(
    small_world, tmp_path, monkeypatch, caplog
):
    from rate.errors import BusyError
    from rate.provenance import folder_lock
    from tinyworld.certify.assess import JOURNAL, assess_world
    from tinyworld.certify.certify import Certifier

    world = _world_with_runs(small_world, tmp_path, ("kl002-s1500", "kl05-s800"))
    certified = []
    certify = Certifier.certify

    def counted(self, policy_dir, settings):
        certified.append(policy_dir.parent.name)
        return certify(self, policy_dir, settings)

    monkeypatch.setattr(Certifier, "certify", counted)
    settings = CertifySettings(60, 50, plan_per_family=0)
    audit = {"candidates": [{"family": "dune", "feature": "pa", "flagged": True}]}
    out = tmp_path / "assess"
    first = assess_world(world, audit, None, settings=settings, out=out)
    assert sorted(certified) == ["kl002-s1500", "kl05-s800"]
    written = (out / "assessment.json").read_text()
    assert json.loads(written)["runs"] == json.loads(json.dumps(first["runs"]))
    assert (out / "assessment.md").is_file()

    certified.clear()  # the same inputs: nothing certified again, the same bytes written
    assess_world(world, audit, None, settings=settings, out=out)
    assert certified == []
    assert (out / "assessment.json").read_text() == written

    # One run's config changes (its mix now under-weights dune) and the other's kept row is
    # damaged: both are assessed anew, and the rerun writes what a fresh assessment writes.
    config = world / "runs" / "kl05-s800" / "run_config.json"
    weights = {fam: float(fam != "dune") for fam in FAMILY_ID}
    config.write_text(json.dumps({**json.loads(config.read_text()), "family_weights": weights}))
    (out / JOURNAL / "kl002-s1500.json").write_text('{"key": ')
    with caplog.at_level("WARNING"):
        assess_world(world, audit, None, settings=settings, out=out)
    assert sorted(certified) == ["kl002-s1500", "kl05-s800"]
    assert "kl002-s1500.json:1: not valid JSON" in caplog.text
    fresh = tmp_path / "fresh"
    assess_world(world, audit, None, settings=settings, out=fresh)
    assert (out / "assessment.json").read_text() == (fresh / "assessment.json").read_text()
    assert (out / "assessment.json").read_text() != written
    assert "under-weights dune (0.0%)" in (out / "assessment.md").read_text()

    certified.clear()  # a different gold set is a different certificate
    gold = tmp_path / "gold.jsonl"
    lines = (world / "data" / "gold_calib.jsonl").read_text().splitlines()
    gold.write_text("\n".join(lines[: len(lines) // 2 + 7]) + "\n")
    assess_world(world, audit, None, settings=settings, gold=gold, out=out)
    assert sorted(certified) == ["kl002-s1500", "kl05-s800"]

    # Other code (an edit to the certificate's estimators, say) never reuses a kept row.
    certified.clear()
    monkeypatch.setattr("rate.code_digest.code_digest", lambda *names: "other code")
    assess_world(world, audit, None, settings=settings, gold=gold, out=out)
    assert sorted(certified) == ["kl002-s1500", "kl05-s800"]

    # A second assessment into a folder being written fails at once and changes nothing.
    before = (out / "assessment.json").read_text()
    busy = lambda pid: BusyError(pid)  # noqa: E731
    with folder_lock(out, busy), pytest.raises(BusyError, match="another assessment"):
        assess_world(world, audit, None, settings=settings, out=out)
    assert (out / "assessment.json").read_text() == before

    with pytest.raises(RateError, match="kl05-s800 is assessed under that name already"):
        assess_world(world, audit, None, {"kl05-s800": world / "policy"}, settings)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("../../x=W/policy", "NAME may hold letters, digits"),
        (".hidden=W/policy", "NAME may hold letters, digits"),
        ("a/b=W/policy", "NAME may hold letters, digits"),
        ("noequals", "expected NAME=DIR"),
    ],
)
def test_a_policy_name_that_is_not_a_file_name_part_is_refused(item, message):
    from rate.errors import ConfigError
    from tinyworld.certify.cli import named_paths

    with pytest.raises(ConfigError, match=message):
        named_paths([item])
    with pytest.raises(ConfigError, match="NAME given twice"):
        named_paths(["a=W/x", "a=W/y"])
    assert named_paths(["a.b+c=W/x", "d=W/y"]) == {"a.b+c": Path("W/x"), "d": Path("W/y")}
    # A name that names no file (a tilt study's REWARD:BETA) is parsed by its caller.
    assert named_paths(["raw:0.1=W/x"], "--proposal", file_name=False) == {"raw:0.1": Path("W/x")}


def test_two_certificates_to_one_out_never_mix(small_world, tmp_path):
    from rate.errors import BusyError
    from rate.provenance import folder_lock

    run = small_world / "runs" / "kl002-s1500" / "checkpoint"
    out = tmp_path / "certs" / "cert"
    busy = lambda pid: BusyError(pid)  # noqa: E731
    with folder_lock(out.parent, busy, name=".cert.lock"):  # a certificate being written
        second = run_rate(
            ["world", "certify", "--world", str(small_world), "--policy", str(run),
             "--out", str(out), *FAST],
            tmp_path, check=False,
        )  # fmt: skip
    assert second.returncode != 0 and "Traceback" not in second.stderr
    assert "another certificate" in second.stderr and "choose another --out" in second.stderr
    assert not out.with_suffix(".json").exists() and not out.with_suffix(".md").exists()


def test_the_sweep_certifies_every_checkpoint_and_reports_on_held_out_gold(small_world, tmp_path):
    run_rate(
        ["world", "recipe-sweep", "--world", str(small_world), "--kl", "0.1,0.05", "--steps", "12",
         "--save-every", "6", "--out", str(tmp_path / "sweep"), "--selection", "split", *FAST],
        tmp_path,
    )  # fmt: skip
    result = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [(c["kl_coef"], c["step"]) for c in result["candidates"]] == [
        (0.1, 6), (0.1, 12), (0.05, 6), (0.05, 12),
    ]  # fmt: skip
    passing = [c for c in result["candidates"] if c["decision"] == "ship"]
    if passing:
        assert result["chosen"] == max(passing, key=lambda c: c["dr"]["low"])
        assert "held_out" in result
    else:
        assert result["chosen"] is None
    total = result["gold_split"]["selection"] + result["gold_split"]["report"]
    assert total == len(load_gold(small_world).labels)
    # A rerun reuses the trained runs; by default it chooses without reading a label, and the
    # whole gold set certifies the choice.
    first = (tmp_path / "sweep" / "kl0.1-s12" / "checkpoint" / "policy.safetensors").stat()
    run_rate(
        ["world", "recipe-sweep", "--world", str(small_world), "--kl", "0.1", "--steps", "12",
         "--save-every", "6", "--out", str(tmp_path / "sweep"), *FAST],
        tmp_path,
    )  # fmt: skip
    again = (tmp_path / "sweep" / "kl0.1-s12" / "checkpoint" / "policy.safetensors").stat()
    assert again.st_mtime_ns == first.st_mtime_ns
    result = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert result["selection"] == "label-free"
    assert result["gold_split"] == {"selection": 0, "report": len(load_gold(small_world).labels)}
    certifiable = [c for c in result["candidates"] if c["decision"] == "certifiable"]
    assert certifiable, "12 steps from the reference: its weights support a certificate"
    assert result["chosen"] == max(certifiable, key=lambda c: c["corrected_reward"])
    assert result["held_out"]["verdict"]["decision"] in {"ship", "hold", "abstain"}
    # The harness checks the choice against the truth.
    out = run_rate(["world", "study", "sweep-truth", "--world", str(small_world), "--sweep",
                    str(tmp_path / "sweep"), "--per-family", "50"], tmp_path)  # fmt: skip
    assert "| corrected reward (no label) |" in out.stdout
    truth = json.loads((tmp_path / "sweep" / "sweep_truth.json").read_text())
    assert [(c["kl_coef"], c["step"]) for c in truth["candidates"]] == [(0.1, 6), (0.1, 12)]
    assert truth["chosen"]["step"] == result["chosen"]["step"]
    assert truth["best"]["true_quality"] == max(c["true_quality"] for c in truth["candidates"])
    # On a gold set given (--gold), the screen and the certificate of the choice read it.
    gold = tmp_path / "gold.jsonl"
    run_rate(["world", "study", "gold", "--world", str(small_world), "--per-family", "40",
              "--out", str(gold)], tmp_path)  # fmt: skip
    out = run_rate(
        ["world", "recipe-sweep", "--world", str(small_world), "--kl", "0.1", "--steps", "12",
         "--save-every", "6", "--out", str(tmp_path / "sweep"), "--gold", str(gold), *FAST],
        tmp_path,
    )  # fmt: skip
    result = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert result["gold"] == str(gold)
    assert result["gold_split"] == {"selection": 0, "report": 240}
    assert result["chosen"], "12 steps from the reference: 40 rows per family support it"
    assert "On the whole gold set (240 rows; no label chose it)" in out.stdout
    assert (tmp_path / "sweep" / "kl0.1-s12" / "checkpoint" / "policy.safetensors").stat(
    ).st_mtime_ns == first.st_mtime_ns  # fmt: skip


def test_a_rerun_of_a_sweep_screens_only_what_is_new(small_world, tmp_path, monkeypatch, caplog):
    from tinyworld.certify import recipes

    calls = []
    screen, certify = recipes.screen, recipes.Certifier.certify

    def screened(certifier, path, settings):
        calls.append(("screen", path.parent.name if path.name == "checkpoint" else path.name))
        return screen(certifier, path, settings)

    def certified(self, path, settings):
        calls.append(("certify", path.name))
        return certify(self, path, settings)

    monkeypatch.setattr(recipes, "screen", screened)
    monkeypatch.setattr(recipes.Certifier, "certify", certified)
    settings = CertifySettings(60, 50, plan_per_family=0)
    out = tmp_path / "sweep"

    def sweep(kls, **kwargs):
        calls.clear()
        return recipes.recipe_sweep(
            small_world, out, kls, 6, 3, None, settings=settings, jobs=1, **kwargs
        )

    first = sweep([0.1])
    assert sorted(calls) == [("certify", "checkpoint"), ("screen", "kl0.1-s6"),
                             ("screen", "step_000003")]  # fmt: skip
    assert first["chosen"], "6 steps from the reference: its weights support a certificate"
    written = (out / "sweep.json").read_text()
    sweep([0.1])  # the same inputs: nothing screened or certified, the same bytes
    assert calls == []
    assert (out / "sweep.json").read_text() == written
    sweep([0.1, 0.05])  # a run added: only its checkpoints are screened
    assert sorted(c for c in calls if c[0] == "screen") == [
        ("screen", "kl0.05-s6"), ("screen", "step_000003"),
    ]  # fmt: skip
    (out / recipes.SCREENED / "screen-kl0.1-s6-3.json").write_text("{")  # damaged
    with caplog.at_level("WARNING"):
        sweep([0.1])
    assert calls == [("screen", "step_000003")] and "not valid JSON" in caplog.text
    assert (out / "sweep.json").read_text() == written  # and computed anew, the same
    with monkeypatch.context() as m:  # other code: every screen and the certificate anew
        m.setattr("rate.code_digest.code_digest", lambda *names: "other code")
        sweep([0.1])
    assert sorted(calls) == [("certify", "checkpoint"), ("screen", "kl0.1-s6"),
                             ("screen", "step_000003")]  # fmt: skip
    gold = tmp_path / "gold.jsonl"  # another gold set: every screen is new
    lines = (small_world / "data" / "gold_calib.jsonl").read_text().splitlines()
    gold.write_text("\n".join(lines[: len(lines) - 5]) + "\n")
    sweep([0.1], gold_path=gold)
    assert sorted(c for c in calls if c[0] == "screen") == [
        ("screen", "kl0.1-s6"), ("screen", "step_000003"),
    ]  # fmt: skip
    sweep([0.1], selection="split")  # another way to choose: certified anew on its half
    assert ("certify", "step_000003") in calls and not any(c[0] == "screen" for c in calls)
    # The runs are reused by name: a sweep of another RL seed into this folder would choose
    # among seed-0 runs, and stops before any work instead.
    with pytest.raises(RateError, match=r"made from other inputs \(seed differ\)"):
        sweep([0.1, 0.2], seed=1)
    assert calls == [] and not (out / "kl0.2-s6").exists()


def test_the_screen_reads_the_gold_set_it_is_given(small_world, tmp_path):
    # The reference's weights are all 1: its screen's ESS is the gold set's rows per family.
    from tinyworld.certify.recipes import label_free_screen
    from tinyworld.studies.certify import write_fresh_gold

    settings = CertifySettings(60, 50, plan_per_family=0)
    gold = tmp_path / "gold.jsonl"
    write_fresh_gold(small_world, 40, 30000, gold)
    reference = small_world / "policy"
    families = load_gold(small_world).families.numpy()
    fewest = min(np.bincount(families)[np.unique(families)])
    own = label_free_screen(small_world, reference, None, settings)
    assert own["min_ess"] == pytest.approx(fewest, abs=0.01) and fewest != 40
    screen = label_free_screen(small_world, reference, None, settings, load_gold(small_world, gold))
    assert screen["min_ess"] == pytest.approx(40, abs=0.01)
    assert screen["decision"] == "certifiable"


def test_the_label_free_screen_reads_no_label(small_world, monkeypatch):
    """The screen of a checkpoint is the same when every gold label is replaced by NaN: no
    label took part in the choice, so all of them can certify it."""
    import torch

    from tinyworld.certify import recipes
    from tinyworld.certify.certificate import CertifySettings

    settings = CertifySettings(60, 50)
    policy = small_world / "runs" / "kl05-s800" / "checkpoint"
    before = recipes.label_free_screen(small_world, policy, None, settings)
    gold = load_gold(small_world)
    gold.labels = torch.full_like(gold.labels, float("nan"))
    monkeypatch.setattr(recipes, "load_gold", lambda world: gold)
    assert recipes.label_free_screen(small_world, policy, None, settings) == before
    assert np.isfinite(before["corrected_reward"]) and before["min_ess"] > 0


def rows(*screens: tuple[float, int, str, float]) -> list[dict]:
    """Label-free screens: (kl_coef, step, decision, corrected reward)."""
    return [
        {"kl_coef": kl, "step": step, "decision": d, "corrected_reward": r}
        for kl, step, d, r in screens
    ]


def test_the_refined_kl_lies_at_the_edge_next_to_the_choice():
    from tinyworld.certify.recipes import refined_kl

    # 0.1 certifiable (the choice: its corrected reward is the highest that qualifies), 0.05
    # not: the geometric midpoint, sqrt(0.005) = 0.0707...
    grid = rows((0.2, 1, "certifiable", 0.30), (0.1, 1, "certifiable", 0.35),
                (0.05, 1, "abstain", 0.45), (0.03, 1, "abstain", 0.50))  # fmt: skip
    assert refined_kl(grid, "label-free") == 0.0707
    # The added run qualifies at its first checkpoint and gains more: it is the choice now.
    grid += rows((0.0707, 1, "certifiable", 0.38), (0.0707, 2, "abstain", 0.41))
    assert refined_kl(grid, "label-free") == 0.0595  # sqrt(0.0707 * 0.05) = 0.05946
    # kl 0.03 qualifies at its first checkpoint only, below kl 0.05's last: the better
    # checkpoints lie between 0.05 and 0.03, not below 0.03 (sqrt(0.0015) = 0.0387).
    wide = rows((0.1, 2, "certifiable", 0.39), (0.05, 1, "certifiable", 0.45),
                (0.05, 2, "certifiable", 0.56), (0.03, 1, "certifiable", 0.53),
                (0.03, 2, "abstain", 0.64))  # fmt: skip
    assert refined_kl(wide, "label-free") == 0.0387
    # Nothing qualifies: nothing to refine.
    assert (
        refined_kl(rows((0.1, 1, "abstain", 0.3), (0.05, 1, "abstain", 0.4)), "label-free") is None
    )
    # Nothing was tried below the choice, and its run qualifies to its end: the edge lies
    # below the grid, at half the choice's kl_coef.
    assert refined_kl(rows((0.1, 1, "certifiable", 0.3), (0.05, 1, "certifiable", 0.4)),
                      "label-free") == 0.025  # fmt: skip
    # Nothing was tried below the choice, and its run leaves the floors after it (the
    # variant world's grid with RL seed 1 and 25,600 rows: kl 0.03 chosen at step 400): the
    # midpoint to the next larger kl_coef, sqrt(0.03 * 0.05) = 0.0387. (The old rule: None.)
    seed1 = rows((0.05, 1, "certifiable", 0.46), (0.05, 2, "certifiable", 0.47),
                 (0.03, 1, "certifiable", 0.46), (0.03, 2, "certifiable", 0.55),
                 (0.03, 3, "abstain", 0.58))  # fmt: skip
    assert refined_kl(seed1, "label-free") == 0.0387
    # If that run abstains, the next one goes between it and the choice (sqrt(0.03 * 0.0387)).
    assert refined_kl(seed1 + rows((0.0387, 1, "abstain", 0.5)), "label-free") == 0.0341
    # One kl_coef whose run leaves the floors after the choice: no side to refine toward.
    lone = rows((0.03, 1, "certifiable", 0.46), (0.03, 2, "abstain", 0.58))
    assert refined_kl(lone, "label-free") is None
    # With --selection split the choice is the best lower bound of those that ship.
    split = [
        {"kl_coef": 0.02, "step": 1, "decision": "ship", "dr": {"low": 0.40, "estimate": 0.5}},
        {"kl_coef": 0.01, "step": 1, "decision": "ship", "dr": {"low": 0.35, "estimate": 0.6}},
        {"kl_coef": 0.0, "step": 1, "decision": "hold", "dr": {"low": 0.10, "estimate": 0.2}},
    ]
    assert refined_kl(split, "split") == 0.0141  # sqrt(0.02 * 0.01)
    split[0]["dr"]["low"] = 0.30  # the choice moves to 0.01; below it 0.0: the plain midpoint
    assert refined_kl(split, "split") == 0.005
    # Once the midpoint rounds onto a kl_coef tried, refining stops.
    close = rows((0.1, 1, "certifiable", 0.4), (0.0999, 1, "abstain", 0.5))
    assert refined_kl(close, "label-free") is None


def test_stricter_screens_choose_among_the_checkpoints_they_pass(tmp_path):
    # experiments/release/screen_rules.py on a hand-made sweep: kl 0.05 passes at step 1,
    # fails at 2 and passes again at 3 (ESS 10.5: just over the floor); kl 0.1 passes
    # throughout. As shipped the choice is 0.05 step 3 (highest corrected reward among the
    # passes); the prefix screen drops it (after a failure) and takes 0.05 step 1; the margin
    # screen (ESS >= 12) drops it too, and 0.05 step 1's ESS 11 as well: 0.1 step 2.
    import subprocess
    import sys
    from pathlib import Path

    def cand(kl, step, decision, reward, true):
        return {"kl_coef": kl, "step": step, "decision": decision, "corrected_reward": reward,
                "true_quality": true}  # fmt: skip

    truth = {"candidates": [cand(0.1, 1, "certifiable", 0.40, 0.38),
                            cand(0.1, 2, "certifiable", 0.42, 0.40),
                            cand(0.05, 1, "certifiable", 0.45, 0.43),
                            cand(0.05, 2, "abstain", 0.50, 0.47),
                            cand(0.05, 3, "certifiable", 0.52, 0.48)]}  # fmt: skip
    ess = {(0.1, 1): 300.0, (0.1, 2): 200.0, (0.05, 1): 11.0, (0.05, 2): 9.0, (0.05, 3): 10.5}
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    md = ["| kl_coef | step | screen (no label read) | corrected reward, fresh samples | min ESS |",
          "|---|---|---|---|---|"]  # fmt: skip
    md += [f"| {kl} | {s} | x | 0.1 | {e} |" for (kl, s), e in ess.items()]
    (tmp_path / "sweep.md").write_text("\n".join(md))
    script = Path(__file__).resolve().parents[2] / "experiments" / "release" / "screen_rules.py"
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "truth.json"), str(tmp_path / "sweep.md")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows_ = {r.split("|")[3].strip(): r.split("|") for r in out.splitlines()[2:]}
    assert rows_["as shipped"][4].strip() == "kl 0.05, step 3"
    assert rows_["prefix"][4].strip() == "kl 0.05, step 1"
    assert rows_["margin"][4].strip() == "kl 0.1, step 2"
    assert [float(rows_[k][6]) for k in ("as shipped", "prefix", "margin")] == [0.0, 0.05, 0.08]
    # A missing file, or the files given the wrong way round: one line that names them.
    for pair, said in (
        (["missing.json", "sweep.md"], "missing.json: cannot read"),
        (
            ["sweep.md", "truth.json"],
            "sweep.md, truth.json: not a `rate world study sweep-truth` JSON",
        ),
    ):
        bad = subprocess.run(
            [sys.executable, str(script), *pair], capture_output=True, text=True, cwd=tmp_path
        )
        assert bad.returncode == 2 and said in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 2


def test_a_missing_gold_file_is_a_one_line_error_before_anything_is_written(small_world, tmp_path):
    out = run_rate(
        ["world", "recipe-sweep", "--world", str(small_world), "--gold", str(tmp_path / "no.jsonl"),
         "--out", str(tmp_path / "sweep")],
        tmp_path,
        check=False,
    )  # fmt: skip
    assert out.returncode != 0 and f"{tmp_path / 'no.jsonl'}: no such file" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "sweep").exists()


def test_a_negative_refine_is_a_one_line_error(small_world, tmp_path):
    out = run_rate(
        ["world", "recipe-sweep", "--world", str(small_world), "--refine", "-1",
         "--out", str(tmp_path / "sweep")],
        tmp_path,
        check=False,
    )  # fmt: skip
    assert (
        out.returncode != 0
        and "argument --refine: must be >= 0 and <= 100 (more runs), got -1" in out.stderr
    )
    assert "Traceback" not in out.stderr and not (tmp_path / "sweep").exists()


def test_the_sweep_refines_at_the_edge(small_world, tmp_path, monkeypatch):
    """With a screen that certifies kl_coef >= 0.07 only, three refinements train 0.0707 (which
    qualifies) then 0.0595 and 0.0649 (which do not), and the choice is among all the runs."""
    from tinyworld.certify import recipes

    def screen(certifier, path, settings):
        run = path.parent if path.name == "checkpoint" else path.parent.parent
        kl = float(run.name.removeprefix("kl").split("-s")[0])
        ok = kl >= 0.07
        reward = 1.0 - kl + 0.001 * int(str(path).endswith("checkpoint"))
        return {"decision": "certifiable" if ok else "abstain", "reasons": [],
                "corrected_reward": reward, "min_ess": 50.0 if ok else 5.0}  # fmt: skip

    monkeypatch.setattr(recipes, "screen", screen)
    monkeypatch.setattr(recipes.Certifier, "certify", lambda *a, **k: {
        "balanced": {"dr": {"estimate": 0.5, "low": 0.4, "high": 0.6},
                     "dr_gain": {"estimate": 0.1}},
        "verdict": {"decision": "ship", "reasons": []}, "per_family": {},
    })  # fmt: skip
    out = tmp_path / "sweep"
    result = recipes.recipe_sweep(small_world, out, [0.1, 0.05], 4, 2, None, jobs=1, refine=3)
    assert result["refined"] == [0.0707, 0.0595, 0.0649]
    assert sorted({c["kl_coef"] for c in result["candidates"]}, reverse=True) == [
        0.1, 0.0707, 0.0649, 0.0595, 0.05,
    ]  # fmt: skip
    assert (out / "kl0.0707-s4" / "checkpoint" / "policy.safetensors").is_file()
    assert result["chosen"]["kl_coef"] == 0.0707 and result["chosen"]["step"] == 4
    assert "kl_coef 0.0707, 0.0595, 0.0649" in recipes.markdown(result)
    # The table is written with the JSON, inside the sweep's lock.
    assert (out / "sweep.md").read_text() == recipes.markdown(result)
    # A rerun reuses every run, the refined ones too.
    stamp = (out / "kl0.0595-s4" / "checkpoint" / "policy.safetensors").stat().st_mtime_ns
    again = recipes.recipe_sweep(small_world, out, [0.1, 0.05], 4, 2, None, jobs=1, refine=3)
    assert again["refined"] == result["refined"]
    assert (out / "kl0.0595-s4" / "checkpoint" / "policy.safetensors").stat().st_mtime_ns == stamp


def test_the_release_study_and_the_coverage_harness(small_world, tmp_path, monkeypatch):
    out = run_rate(
        ["world", "study", "release", "--world", str(small_world), "--out", str(tmp_path / "rel"),
         "--seeds", "0", "--recipes", "R1", "--steps", "10", "--per-family", "40"],
        tmp_path,
    )  # fmt: skip
    study = json.loads((tmp_path / "rel" / "release_study.json").read_text())
    assert [c["correction"] for c in study["cells"]] == ["none", "ridge", "ours", "oracle"]
    rows = study["summary"]["R1"]["rows"]
    goals = study["summary"]["R1"]["goals"]
    assert goals["ours_minus_oracle"] == pytest.approx(
        rows["ours"]["balanced_mean"] - rows["oracle"]["balanced_mean"], abs=1e-4
    )
    assert "| R1 (kl 0.1, 10 steps) | oracle |" in out.stdout
    oracle_py = (tmp_path / "rel" / "wrappers" / "oracle.py").read_text()
    assert "CORRECTIONS" in oracle_py
    # Its runs' evaluations are reused by name: a rerun on another number of prompts would
    # mix them with its own, and stops with a one-line error instead.
    other = run_rate(
        ["world", "study", "release", "--world", str(small_world), "--out", str(tmp_path / "rel"),
         "--seeds", "0", "--recipes", "R1", "--steps", "10", "--per-family", "50"],
        tmp_path, check=False,
    )  # fmt: skip
    assert other.returncode != 0 and "Traceback" not in other.stderr
    assert "made from other inputs (per_family differ)" in other.stderr
    assert json.loads((tmp_path / "rel" / "release_study.json").read_text()) == study

    from tinyworld.studies.certify import coverage_study

    policies = {"reference": small_world / "policy"}
    policies["kl05"] = small_world / "runs" / "kl05-s800" / "checkpoint"
    cov = coverage_study(
        small_world, policies, tmp_path / "cov", None, sets=3, truth_per_family=200,
        settings=CertifySettings(40, 100),
    )  # fmt: skip
    cells = {(c["policy"], c["cell"]): c for c in cov["cells"]}
    assert all(c["sets"] == 3 for c in cells.values())
    ref = [c for (p, _), c in cells.items() if p == "reference"]
    assert all(c["abstained"] == 0 for c in ref)  # weights of 1 always support an answer
    s = cov["summary"]
    answered = sum(c["sets"] - c["abstained"] for c in cells.values())
    assert s["answered_cells"] == answered
    assert s["dr_coverage_where_answered"] == pytest.approx(
        sum(c["dr_covered"] for c in cells.values()) / answered, abs=1e-4
    )
    for c in cells.values():
        # Misses below the truth are some of the misses; the signed error is within the abs.
        assert 0 <= c["dr_missed_low"] <= c["sets"] - c["abstained"] - c["dr_covered"]
        if c["dr_mean_error"] is not None:
            assert abs(c["dr_mean_error"]) <= c["dr_mean_abs_error"] + 1e-4

    # Each set's certificates were journalled as they were made: a header, then one line a set.
    journal = tmp_path / "cov" / "sets.jsonl"
    lines = journal.read_bytes().split(b"\n")
    assert len(lines) == 5 and lines[-1] == b""  # header, 3 sets, the final newline
    assert [json.loads(x)["seed"] for x in lines[1:4]] == [20_000, 20_001, 20_002]
    # A kill in the middle of the third set's append: its line is cut off. The rerun drops the
    # piece, certifies that set alone again and tallies the same as the whole first run.
    journal.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:40])
    import tinyworld.studies.certify as harness

    drawn = []
    real_fresh_gold = harness.fresh_gold
    monkeypatch.setattr(harness, "fresh_gold", lambda *a: drawn.append(a[2]) or real_fresh_gold(*a))
    again = coverage_study(
        small_world, policies, tmp_path / "cov", None, sets=3, truth_per_family=200,
        settings=CertifySettings(40, 100),
    )  # fmt: skip
    assert drawn == [20_002]
    assert again["cells"] == cov["cells"]
    assert journal.read_bytes() == b"\n".join(lines)
    # Another commit of the same code (a README edit) resumes the study; other code is
    # another study, whose sets never mix with these.
    drawn.clear()
    monkeypatch.setattr(harness, "git_commit", lambda: "another commit")
    resumed = coverage_study(
        small_world, policies, tmp_path / "cov", None, sets=3, truth_per_family=200,
        settings=CertifySettings(40, 100),
    )  # fmt: skip
    assert drawn == [] and resumed["cells"] == cov["cells"]
    assert resumed["commit"] == "another commit" and resumed["code"] == cov["code"]
    with monkeypatch.context() as m:
        m.setattr(harness, "code_digest", lambda name: "other code")
        with pytest.raises(RateError, match="settings, code, or a world"):
            coverage_study(
                small_world, policies, tmp_path / "cov", None, sets=3, truth_per_family=200,
                settings=CertifySettings(40, 100),
            )  # fmt: skip
    assert journal.read_bytes() == b"\n".join(lines)
    # A policy folder that is not one is a one-line error before any truth is sampled.
    with pytest.raises(RateError, match="not a policy directory"):
        coverage_study(
            small_world, {"typo": small_world / "runs" / "nope"}, tmp_path / "cov2", None,
            sets=1, truth_per_family=200,
        )  # fmt: skip
    assert not (tmp_path / "cov2" / "truth").exists()
    # A truth cached under a name is the policy's it was made of: a name reused for another
    # policy folder is evaluated anew.
    cache = tmp_path / "cov" / "truth" / "kl05.json"
    reused = harness.true_values(small_world, small_world / "policy", 200, cache)
    assert all(r["kl"] == pytest.approx(0, abs=1e-9) for r in reused["per_family"].values())
    assert harness.true_values(small_world, policies["kl05"], 200, cache) != reused
    # A policy retrained in place (the same folder, other weights) is another study, and its
    # cached truth is evaluated anew.
    moved = tmp_path / "kl05-copy"
    shutil.copytree(policies["kl05"], moved)
    copies = {"kl05": moved}
    first = coverage_study(
        small_world, copies, tmp_path / "cov3", None, sets=1, truth_per_family=200,
        settings=CertifySettings(40, 100),
    )  # fmt: skip
    shutil.rmtree(moved)
    shutil.copytree(small_world / "runs" / "kl002-s1500" / "checkpoint", moved)
    truth = tmp_path / "cov3" / "truth" / "kl05.json"
    before = json.loads(truth.read_text())
    with pytest.raises(RateError, match="a world or policy rebuilt in place"):
        coverage_study(
            small_world, copies, tmp_path / "cov3", None, sets=1, truth_per_family=200,
            settings=CertifySettings(40, 100),
        )  # fmt: skip
    assert harness.true_values(small_world, moved, 200, truth) != before
    assert first["cells"]  # the first study tallied its set
    # A study with other settings never resumes from (or mixes into) this one's sets.
    with pytest.raises(RateError, match="another coverage study"):
        coverage_study(
            small_world, policies, tmp_path / "cov", None, sets=3, truth_per_family=200,
            settings=CertifySettings(40, 101),
        )  # fmt: skip

    # experiments/release/gold_plan_check.py on this study: a row per policy and family, the
    # observed share read off the journal. The reference's weights are all 1 at KL 0: every
    # gold set answers, predicted and observed.
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "experiments" / "release" / "gold_plan_check.py"
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "cov"), "--sets", "50"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows = [r.strip("|").split("|") for r in out.splitlines()[2:]]
    assert len(rows) == sum(c["cell"] != "balanced" for c in cov["cells"])  # policy x family
    for r in rows:
        name, fam, observed = r[1].strip(), r[2].strip(), float(r[7])
        answered = [not json.loads(x)["policies"][name][fam]["abstain"] for x in lines[1:4]]
        assert observed == pytest.approx(np.mean(answered), abs=0.005)
        if name == "reference":
            assert r[5].strip() == r[6].strip() == "1.00" and observed == 1.0


def test_the_benchmark_times_each_runs_certificate_as_certify_gives_it(small_world):
    # `make bench`'s certify section: one row per run, the same certificate as `certify`
    # (its abstentions), the median of the rows' totals in the text.
    from benchmarks.certify import bench_certify, render_certify
    from tinyworld.certify.assess import runs_of

    settings = CertifySettings(60, 200)
    figures = bench_certify(small_world, settings, screen_gold_per_family=150)
    runs = runs_of(small_world)
    assert sorted(figures["certify_runs"]) == sorted(runs)
    for name, row in figures["certify_runs"].items():
        report = certify_policy(small_world, runs[name], settings=settings)
        abstained = sum(bool(c["abstain"]) for c in report["per_family"].values())
        assert row["families_abstained"] == abstained
        assert row["gather_s"] > 0 and row["estimators_s"] > 0
    totals = sorted(r["gather_s"] + r["estimators_s"] for r in figures["certify_runs"].values())
    text, screens = "\n".join(render_certify(figures, "2026-12-03")).split("A sweep's")
    assert f"Median certificate: {np.median(totals):.2f} s" in text
    assert text.count("\n| ") == len(runs) + 1  # the header, then a row per run
    # The screens on the world's gold set and a larger one, each way (they agree, or the
    # bench stops): a row per gold set, with the ratio of the two.
    n = len(load_gold(small_world).labels)
    assert sorted(figures["screens"], key=int) == [str(n), str(6 * 150)]
    for rows, v in figures["screens"].items():
        assert v["runs"] == len(runs) and v["own"] > 0 and v["shared"] > 0
        assert f"| {int(rows):,} | {len(runs)} | {v['own']:.2f} s | {v['shared']:.2f} s | " in (
            screens
        )
        assert f"{v['own'] / v['shared']:.2f}x |" in screens
    assert (
        "200 bootstrap replicates" in text
        and f"{len(load_gold(small_world).labels):,} gold rows" in text
    )


def test_the_benchmark_says_in_one_line_when_a_world_has_no_run_to_certify(small_world, tmp_path):
    # A copy of the world without its runs: one line naming the folder, and nothing written.
    import shutil
    import subprocess
    import sys

    world = tmp_path / "world"
    shutil.copytree(small_world, world, ignore=shutil.ignore_patterns("runs"))
    out = tmp_path / "BENCH.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--world", str(world), "--sections", "certify",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{world}/runs holds no finished run" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()
