"""`rate results` and the results record, end to end on files made by the real stages."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from rate.effects.estimators import ESTIMATORS
from rate.io import read_json
from tests.helpers import run_rate

SMOKE = "experiments/tinyworld/smoke.yaml"


def _files(project: Path) -> set[str]:
    """Every visible file under ``project`` (not scoring's hidden lock and progress files)."""
    return {
        str(p)
        for p in project.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(project).parts)
    }


@pytest.fixture(scope="module")
def project(small_world: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The four stages as a user runs them (the oracle added to the scored file), the files
    there when the run ended; then two more effect files: the reward model's again (newer)
    and the oracle's."""
    root = tmp_path_factory.mktemp("results")
    world = {"RATE_WORLD": str(small_world)}
    run_rate(["create_dataset", "--config", SMOKE], root, **world)
    run_rate(["score_dataset", "--config", SMOKE], root, **world)
    oracle = ["--set=scoring.model=tinyrlhf_oracle", "--set=scoring.dataset_folder=scored"]
    run_rate(["score_dataset", "--config", SMOKE, *oracle], root, **world)
    first = run_rate(["treatment_effects", "--config", SMOKE], root, **world).stdout.strip()
    run_rate(["plots", "--config", SMOKE], root, **world)
    after_run = _files(root)
    second = run_rate(["treatment_effects", "--config", SMOKE], root, **world).stdout.strip()
    truth = ["--set=effects.reward_key=true_quality", "--set=effects.score=oracle"]
    third = run_rate(["treatment_effects", "--config", SMOKE, *truth], root, **world).stdout
    return {
        "root": root,
        "after_run": after_run,
        "effects": [Path(first), Path(second), Path(third.strip())],
    }


def _results(project: dict, *args: str) -> str:
    return run_rate(["results", *args], project["root"]).stdout


def _csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_csv_holds_every_file_group_and_estimator_with_the_files_numbers(project):
    rows = _csv(_results(project, "--format", "csv"))
    first, _, oracle = project["effects"]
    e = read_json(first)
    assert {r["file"] for r in rows} == {str(p) for p in project["effects"]}
    mine = [r for r in rows if r["file"] == str(first)]
    groups = sorted(e["groups"])
    assert len(mine) == len(ESTIMATORS) * (1 + len(groups))
    assert sorted({r["group"] for r in mine if r["group"]}) == groups
    whole = {r["estimator"]: r for r in mine if not r["group"]}
    rate = whole["ATE_rewritten_rewrite"]
    assert float(rate["estimate"]) == e["ATE_rewritten_rewrite"]
    assert float(rate["stderr"]) == e["ATE_rewritten_rewrite_stderr"]
    assert float(rate["stderr_unpaired"]) == e["ATE_rewritten_rewrite_stderr_unpaired"]
    assert [float(rate["normal_low"]), float(rate["normal_high"])] == (
        e["intervals"]["normal"]["ATE_rewritten_rewrite"]
    )
    assert [float(rate["bootstrap_low"]), float(rate["bootstrap_high"])] == (
        e["intervals"]["bootstrap"]["ATE_rewritten_rewrite"]
    )
    assert float(rate["normalized"]) == pytest.approx(e["normalized"]["ATE_rewritten_rewrite"])
    assert float(rate["truth"]) == e["truth"]["ATE"]
    assert float(rate["error_in_se"]) == e["error_in_se"]["ATE_rewritten_rewrite"]
    for row in mine:  # the flag beside every error in SEs
        assert row["error_beyond_2se"] == str(abs(float(row["error_in_se"])) > 2)
    assert (int(rate["n_w1"]), int(rate["n_w0"])) == (e["Y1_count"], e["Y0_count"])
    assert rate["group_by"] == "policy" and rate["smoke_test"] == "True"
    assert whole["naive_effect"]["stderr_unpaired"] == ""  # none: an empty cell
    # The rewrite-success rates: the file's, on the whole file's rows only.
    checks = e["rewrite_checks"]
    assert float(rate["rewrite_success"]) == checks["rewrite"]["success_rate"]
    assert float(rate["rewritten_rewrite_success"]) == checks["rewritten rewrite"]["success_rate"]
    assert all(r["rewrite_success"] == "" for r in mine if r["group"])
    # A group's row is that group's estimate.
    g = groups[0]
    row = next(r for r in mine if r["group"] == g and r["estimator"] == "ATT_rewritten_rewrite")
    assert float(row["estimate"]) == e["groups"][g]["ATT_rewritten_rewrite"]
    assert {r["score"] for r in rows if r["file"] == str(oracle)} == {"oracle"}


def test_filters_keep_what_they_name(project):
    first, second, oracle = project["effects"]
    only = _csv(_results(project, "--format", "csv", "--score", "orac*", "--estimand", "ATT"))
    assert {r["file"] for r in only} == {str(oracle)}
    assert {r["estimator"] for r in only} == {
        "ATT_single_rewrite", "ATT_rewritten_rewrite", "ATT_rewritten_rewrite_placebo"
    }  # fmt: skip
    latest = _csv(_results(project, "--format", "csv", "--latest", "--no-groups"))
    assert {r["file"] for r in latest} == {str(second), str(oracle)}
    assert not any(r["group"] for r in latest) and len(latest) == 2 * len(ESTIMATORS)
    rate = _csv(_results(project, "--format", "csv", "--method", "rate", "--no-groups"))
    assert {r["method"] for r in rate} == {"rate"} and len(rate) == 3 * 3
    assert _csv(_results(project, "--format", "csv", "--full")) == []  # smoke files only
    assert _csv(_results(project, "--format", "csv", "--dataset", "imdb_*")) == []
    named = _csv(_results(project, "--format", "csv", "--no-groups", str(first)))
    assert {r["file"] for r in named} == {str(first)}


def test_markdown_and_json_hold_the_same_table(project, tmp_path):
    csv_rows = _csv(_results(project, "--format", "csv", "--no-groups"))
    md = _results(project, "--no-groups").strip().split("\n")
    header = [c.strip() for c in md[0].strip("|").split("|")]
    assert header == list(csv_rows[0]) and len(md) == 2 + len(csv_rows)
    cells = [c.strip() for c in md[2].strip("|").split("|")]
    assert cells[0] == Path(csv_rows[0]["file"]).name
    i = header.index("rewrite_success")
    assert cells[i] == f"{float(csv_rows[0]['rewrite_success']):.4g}"
    out = tmp_path / "table.json"
    assert run_rate(
        ["results", "--no-groups", "--out", str(out)], project["root"]
    ).stdout.strip() == str(out)
    data = json.loads(out.read_text())
    assert data["columns"] == header and len(data["rows"]) == len(csv_rows)
    assert data["rows"][0]["estimate"] == float(csv_rows[0]["estimate"])
    assert data["rows"][0]["stderr_unpaired"] is None


def test_bad_input_is_one_line(project, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    out = run_rate(["results", str(bad)], project["root"], check=False)
    assert out.returncode == 2 and f"{bad}: not an effect file" in out.stderr
    out = run_rate(["results", "--estimand", "ATX"], project["root"], check=False)
    assert out.returncode == 2 and "unknown estimand 'ATX'; use one of ATE, ATT, ATU" in out.stderr
    out = run_rate(["results", "--out", str(tmp_path / "t.txt")], project["root"], check=False)
    assert out.returncode == 2 and "--format" in out.stderr


def test_out_never_writes_over_an_effect_file_or_an_input(project, tmp_path):
    """Issue 45, item 1: ``rate results --out FILE`` overwrote the effect file it read (rc 0;
    the next ``rate results`` failed on the whole folder)."""
    effect = project["effects"][0]
    before = effect.read_bytes()
    out = run_rate(["results", "--out", str(effect)], project["root"], check=False)
    assert out.returncode == 2, out.stderr
    assert f"would write over {effect}, a file that the treatment_effects stage published" in (
        out.stderr
    )
    assert len(out.stderr.strip().splitlines()) == 1
    mine = tmp_path / "mine.json"
    mine.write_bytes(before)
    out = run_rate(["results", str(mine), "--out", str(mine)], project["root"], check=False)
    assert out.returncode == 2 and f"{mine}, which this command reads" in out.stderr
    record = effect.with_name(effect.name + ".meta.json")
    out = run_rate(["results", "--out", str(record)], project["root"], check=False)
    assert out.returncode == 2 and "published" in out.stderr
    assert effect.read_bytes() == before and mine.read_bytes() == before
    assert "ATE" in _results(project, "--format", "csv")  # the folder still reads


def test_the_run_record_names_every_file_the_four_stages_wrote(project):
    root = project["root"]
    records = [
        p
        for p in sorted((root / "results").glob("results_*_smoke_test.json"))
        if "plots" in read_json(p)["stages"]
    ]
    assert len(records) == 1  # the plot run's (another test writes one without plots)
    record = read_json(records[0])
    # Every file the run left (but the record itself) is named, and every name is a file.
    assert set(record["files"]) == project["after_run"] - {str(records[0])}
    stages = record["stages"]
    assert list(stages) == ["create_dataset", "score_dataset", "treatment_effects", "plots"]
    assert len(stages["score_dataset"]) == 2  # the RM, then the oracle added
    dataset = stages["create_dataset"][0]
    assert dataset["inputs"][0].endswith("tinyrlhf_dune_pa.yaml")
    first_scoring, oracle = stages["score_dataset"]
    assert first_scoring["inputs"] == [dataset["outputs"][0]]
    assert oracle["inputs"] == [first_scoring["outputs"][0]]
    effects = stages["treatment_effects"][0]
    assert effects["inputs"] == [oracle["outputs"][0]]
    assert effects["outputs"][0] == str(project["effects"][0])
    plots = stages["plots"][0]
    assert plots["inputs"] == [effects["outputs"][0], oracle["outputs"][0]]
    for step in [s for steps in stages.values() for s in steps]:
        assert Path(step["log"]).parent == root / "logs"
        assert step["config"]["smoke_test"] is True
    assert oracle["config"]["scoring"]["model"] == "tinyrlhf_oracle"
    assert record["config"]["plots"]["formats"] == ["png"]
    assert record["versions"]["rate"] and record["versions"]["numpy"]


def test_a_record_for_a_run_that_ended_at_its_effects(project):
    """`rate results --record`: the runs behind the chosen effect files, without plots."""
    root = project["root"]
    _, second, _ = project["effects"]
    out = _results(project, "--record", "--latest", "--score", "tinyrlhf_rm")
    record = read_json(Path(out.strip()))
    assert Path(out.strip()).parent == root / "results"
    assert record["effects_files"] == [str(second)]
    assert list(record["stages"]) == ["create_dataset", "score_dataset", "treatment_effects"]
    assert record["stages"]["treatment_effects"][0]["outputs"][0] == str(second)
    assert str(second) in record["files"] and f"{second}.meta.json" in record["files"]
    assert all(Path(f).is_file() for f in record["files"])
    assert record["smoke_test"] is True and record["config"]["effects"]["score"] == "tinyrlhf_rm"


def test_the_api_on_the_scored_file_gives_the_stages_numbers(project):
    """rate.load_scored -> rate.compute_effects: what treatment_effects wrote, to the bit."""
    import rate

    e = read_json(project["effects"][0])
    df = rate.load_scored(e["input"]["file"], reward_key="tinyrlhf_rm")
    mine = rate.compute_effects(df, n_bootstrap=200, seed=0, level=0.95)
    for est in ESTIMATORS:
        assert (
            mine[est.name] == e[est.name] and mine[f"{est.name}_stderr"] == e[f"{est.name}_stderr"]
        )
    intervals = mine["intervals"]
    assert (
        intervals["normal"]["ATE_rewritten_rewrite"]
        == e["intervals"]["normal"]["ATE_rewritten_rewrite"]
    )
    assert (
        list(intervals["bootstrap"]["ATT_rewritten_rewrite"])
        == (e["intervals"]["bootstrap"]["ATT_rewritten_rewrite"])
    )
    assert mine["truth"]["ATE"] == e["truth"]["ATE"]  # the perfect rewrite's column
