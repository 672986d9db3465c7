"""The results record on hand-made files: the chain of records followed back, names claimed
exclusively, secrets redacted."""

from __future__ import annotations

import json
from pathlib import Path

from rate import store
from rate.io import read_json
from rate.results.record import run_record, write_run_record


def _output(path: Path, stage: str, **meta) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    record = {"stage": stage, "file": path.name, "created": "2026-01-01T12:00:00", **meta}
    store.meta_path(path).write_text(json.dumps(record))
    return path


def test_the_chain_is_followed_back_and_a_file_from_elsewhere_is_named_not_followed(tmp_path):
    template = tmp_path / "dataset_templates" / "toy.yaml"
    dataset = _output(tmp_path / "d.json", "create_dataset", template={"path": str(template)})
    foreign = tmp_path / "elsewhere.jsonl"  # no record: not a stage's output
    foreign.write_text("")
    scored = _output(tmp_path / "s.jsonl", "score_dataset", input=str(dataset), log="/l/2.log")
    effects = _output(
        tmp_path / "e.json", "treatment_effects", input=[str(scored), str(foreign)], config={}
    )
    record = run_record([effects], {"smoke_test": False}, tmp_path)
    stages = record["stages"]
    assert list(stages) == ["create_dataset", "score_dataset", "treatment_effects"]
    assert stages["create_dataset"][0]["inputs"] == [str(template)]
    assert stages["treatment_effects"][0]["inputs"] == [str(scored), str(foreign)]
    assert record["files"] == sorted(
        [*(str(p) for p in (dataset, scored, effects)), "/l/2.log"]
        + [str(store.meta_path(p)) for p in (dataset, scored, effects)]
    )
    assert record["config"] == {"smoke_test": False}


def test_records_of_one_second_get_names_of_their_own_and_no_secret(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "timestamp", lambda now=None: "20260101_120000")
    monkeypatch.setenv("TOY_API_KEY", "sk-canary-record-77")
    config = {"smoke_test": True, "base_url": "http://u:sk-canary-record-77@host"}
    effects = _output(tmp_path / "e.json", "treatment_effects", config=config)
    first = write_run_record(tmp_path / "results", run_record([effects], config, tmp_path))
    second = write_run_record(tmp_path / "results", run_record([effects], config, tmp_path))
    assert (first.name, second.name) == (
        "results_20260101_120000_smoke_test.json",
        "results_20260101_120000-2_smoke_test.json",
    )
    for path in (first, second):
        assert "sk-canary-record-77" not in path.read_text()
        assert read_json(path)["stages"]["treatment_effects"][0]["outputs"][0] == str(effects)
