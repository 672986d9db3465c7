"""create_dataset with the Batch API backend named in a dataset template, end to end against
the local Files/Batches server: faults on the way still give the dataset of a clean run, a
rerun of a finished run pays for nothing, and the dry run writes requests and a cost estimate
without an API call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rate.catalog import load_config
from rate.io import read_json
from rate.pipeline import create_dataset
from rate.store import Layout
from tests.datasets.test_hub_templates import N, files, obedient
from tests.fakes.batch_server import FakeBatchServer
from tests.helpers import ROOT, run_rate

KEY = "sk-test-BATCH-secret-42"
CANARIES = (KEY,)  # the secret canary checks every stream and file (tests/faults/canary.py)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeBatchServer(model=obedient, expected_key=KEY) as srv:
        yield srv
    assert not srv.errors


PLACEBO = "{original_completion}\n\n[Rewrite this review, keeping its sentiment as it is.]"


def batch_template(tmp_path: Path, server: FakeBatchServer, placebo: bool = False) -> None:
    """imdb_sentiment on local files, rewritten through the Batch API at the local server
    (with ``placebo``, its placebo pass on)."""
    data = yaml.safe_load((ROOT / "dataset_templates" / "imdb_sentiment.yaml").read_text())
    if placebo:
        data["placebo_prompt"] = PLACEBO
    data["source"] = {k: v for k, v in data["source"].items() if k != "path"} | {
        "data_files": [str(files(tmp_path)["imdb"])]
    }
    data["rewriter"] = {
        "backend": "openai_batch",
        "model": "gpt-4o-2024-08-06",
        "temperature": 0.7,
        "base_url": server.base_url,
        "poll_initial_s": 0.001,
        "poll_max_s": 0.005,
        "retry_base_s": 0.001,
        "max_requests_per_file": 5,  # several files and batches per pass
    }
    (tmp_path / "dataset_templates").mkdir(exist_ok=True)
    (tmp_path / "dataset_templates" / "imdb_sentiment.yaml").write_text(yaml.safe_dump(data))


def run(tmp_path: Path, project: Path, monkeypatch, *extra: str) -> Path:
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    monkeypatch.setenv("PROJECT_DIR", str(project))
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [
            "rewrites.dataset_name=imdb_sentiment",
            "smoke_test=true",
            f"rewrites.smoke_n_examples={N}",
            *extra,
        ],
    )
    return create_dataset(config, Layout(project))


def rows(path: Path) -> list[dict]:
    return [{k: v for k, v in row.items()} for row in read_json(path).values()]


def test_faults_still_give_the_clean_dataset_and_a_rerun_pays_nothing(
    tmp_path, server, monkeypatch
):
    batch_template(tmp_path, server)
    clean = run(tmp_path, tmp_path / "clean", monkeypatch)
    clean_paid = sum(server.paid.values())
    assert clean_paid == 2 * N  # two passes, each line paid once
    # A second project from scratch, with an expired batch, failing lines and API hiccups.
    server.plan_batches({"outcome": "expired", "finished": 2})
    first_key = next(iter(server.paid))  # a custom_id of pass 1 (same ids in the new run)
    server.fail_lines({first_key: ["server_error"]})
    server.add_faults({"status": 429, "retry_after": 0}, {"status": 500}, path="/v1/batches")
    before = dict(server.paid)
    faulty = run(tmp_path, tmp_path / "faulty", monkeypatch)
    paid = {k: v - before.get(k, 0) for k, v in server.paid.items()}
    assert rows(faulty) == rows(clean)
    for row in read_json(faulty).values():
        assert row["completions"]["rewrite"] == row["completions"]["original"] + " Rewritten."
    # The cache is per project (data/batch_api), so the new project pays for every line, and
    # for each exactly once: expired lines, failed lines and API faults cost nothing more.
    assert sorted(paid.values()) == [1] * (2 * N) and set(paid) == set(before)
    # A rerun of a finished run: not one API call.
    calls = server.api_calls()
    again = run(tmp_path, tmp_path / "faulty", monkeypatch)
    assert server.api_calls() == calls
    assert rows(again) == rows(faulty)
    meta = read_json(again.with_name(again.name + ".meta.json"))
    assert meta["rewriter"]["backend"] == "openai_batch"
    for path in (tmp_path / "faulty").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


def test_a_placebo_pass_turned_on_later_pays_only_for_itself_and_reruns_free(
    tmp_path, server, monkeypatch
):
    batch_template(tmp_path, server)
    project = tmp_path / "p"
    two = run(tmp_path, project, monkeypatch)
    assert sum(server.paid.values()) == 2 * N
    assert not any("placebo rewrite" in r["completions"] for r in rows(two))
    batch_template(tmp_path, server, placebo=True)
    three = run(tmp_path, project, monkeypatch)
    # The two passes come from the cache; the placebo pass is bought once, line by line.
    assert sum(server.paid.values()) == 3 * N and sorted(set(server.paid.values())) == [1]
    for before, after in zip(rows(two), rows(three), strict=True):
        c = after["completions"]
        assert {k: v for k, v in c.items() if k != "placebo rewrite"} == before["completions"]
        assert c["placebo rewrite"] == c["rewrite"] + " Rewritten."
        # Checked against the rewrite's target W (this fake changes no sentiment at all).
        assert after["checks"]["placebo rewrite"] == after["checks"]["rewrite"]
    calls = server.api_calls()
    assert rows(run(tmp_path, project, monkeypatch)) == rows(three)
    assert server.api_calls() == calls  # a finished run's rerun: no call


def test_dry_run_writes_requests_and_an_estimate_without_calling(tmp_path, server):
    batch_template(tmp_path, server)
    project = tmp_path / "p"
    out = run_rate(
        [
            "create_dataset",
            "--config",
            str(ROOT / "experiments" / "config.yaml"),
            "--set=rewrites.dataset_name=imdb_sentiment",
            "--set=smoke_test=true",
            f"--set=rewrites.smoke_n_examples={N}",
            "--dry-run",
        ],
        project,
        RATE_TEMPLATE_PATH=str(tmp_path),
        OPENAI_API_KEY=KEY,
    )
    assert server.api_calls() == 0
    estimate = json.loads(Path(out.stdout.strip()).read_text())
    first = estimate["first_pass"]
    assert first["requests"] == N and first["files"] == 2  # 8 requests, 5 per file
    assert first["input_tokens"] > 0 and first["cost_usd"] > 0
    assert estimate["both_passes"]["cost_usd"] == pytest.approx(2 * first["cost_usd"])
    # gpt-4o at list price 2.5 / 10 USD per million tokens, half price in batches.
    expected = (first["input_tokens"] * 2.5 + first["output_tokens_estimate"] * 10) / 1e6 / 2
    assert first["cost_usd"] == pytest.approx(expected, abs=1e-6)  # rounded to 1e-6 USD
    for path in first["paths"]:
        lines = Path(path).read_text().splitlines()
        assert all(json.loads(x)["url"] == "/v1/chat/completions" for x in lines)
    assert (
        not list((project / "data" / "rewrites").glob("*.json"))
        if (project / "data" / "rewrites").exists()
        else True
    )
    assert "dry run:" in out.stderr and KEY not in out.stderr


def test_dry_run_needs_a_paid_backend(tmp_path, monkeypatch):
    from rate.errors import ConfigError

    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [
            "rewrites.dataset_name=drugreview_sentiment",
            "smoke_test=true",
            "rewrites.dry_run=true",
            "effects.group_by=null",  # the default config's is the tiny world's policy
        ],
    )
    with pytest.raises(ConfigError, match="sends no paid requests.*openai_batch"):
        create_dataset(config, Layout(tmp_path / "p"))
