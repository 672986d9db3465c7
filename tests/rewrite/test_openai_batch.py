"""The openai_batch rewriter against a real local HTTP fake of the Files and Batches API,
through the real SDK: outputs, splitting, the cache, every batch outcome and line failure,
API-call faults, crashes at each point of a run (in child processes killed for real), the dry
run, and the key kept secret. The invariants checked throughout: no row lost, no line paid
for twice, and the outputs of a run without faults.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rate.errors import ConfigError, RateError
from rate.rewrite.base import RewriteRequest
from rate.rewrite.batch.api import BatchAPIError
from rate.rewrite.batch.cache import ResponseCache
from rate.rewrite.batch.estimate import BATCH_DISCOUNT
from rate.rewrite.batch.manifest import CRASH_ENV, CRASH_EXIT_CODE, RunLockedError, run_lock
from rate.rewrite.batch.requests import batch_lines, split_lines
from rate.rewrite.batch.rewriter import OpenAIBatchRewriter, build_openai_batch_rewriter
from rate.rewrite.options import OpenAIBatchOptions
from rate.schema import from_dict
from tests.fakes.batch_server import FakeBatchServer
from tests.helpers import FAKES, ROOT

KEY = "sk-test-BATCH-SECRET-9876"  # recognisable, so a leak anywhere is easy to find
CANARIES = (KEY,)  # the secret canary checks every stream and file (tests/faults/canary.py)
WHERE = "dataset_templates/example.yaml"
REPO = ROOT


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv(CRASH_ENV, raising=False)
    return KEY


@pytest.fixture
def server():
    with FakeBatchServer(expected_key=KEY) as srv:
        yield srv
    assert not srv.errors, f"the fake server itself failed: {srv.errors}"


def options(server: FakeBatchServer, work: Path, **overrides) -> dict:
    """Options with tiny poll and retry waits, so that the tests never wait long."""
    return {
        "model": "gpt-fake",
        "base_url": server.base_url,
        "work_dir": str(work),
        "poll_initial_s": 0.001,
        "poll_max_s": 0.005,
        "retry_base_s": 0.001,
        "max_api_retries": 3,
        "timeout_s": 5.0,
        **overrides,
    }


def make(server: FakeBatchServer, work: Path, **overrides) -> OpenAIBatchRewriter:
    opts = from_dict(OpenAIBatchOptions, options(server, work, **overrides), WHERE, "rewriter")
    opts.validate(WHERE)
    return build_openai_batch_rewriter(opts, template=None, seed=0)


def requests(n: int, start: int = 0, suffix: str = "rewrite") -> list[RewriteRequest]:
    return [
        RewriteRequest(
            f"ex{i}/{suffix}", f"text number {i}", i % 2 == 0, f"please rewrite item{i} now"
        )
        for i in range(start, start + n)
    ]


def expected(reqs: list[RewriteRequest]) -> list[str]:
    return [FakeBatchServer.reply_to(r.instruction) for r in reqs]


def cids(rw: OpenAIBatchRewriter, reqs: list[RewriteRequest]) -> list[str]:
    """The custom_id of each request."""
    lines, keys = batch_lines(rw.options, reqs)
    by_key = {line.cache_key: line.custom_id for line in lines}
    return [by_key[k] for k in keys]


def uploaded_ids(server: FakeBatchServer, upload_index: int) -> list[str]:
    """The custom_ids in the n-th uploaded request file."""
    data = server.files[server.uploads[upload_index]]["data"]
    return [json.loads(line)["custom_id"] for line in data.splitlines()]


def assert_invariants(server: FakeBatchServer, reqs: list[RewriteRequest], out: list[str]) -> None:
    """No row lost, nothing paid twice, the outputs of a run without faults."""
    assert out == expected(reqs)
    assert server.twice_paid() == {}


# -- the happy path, the request files, the manifest ---------------------------------------------


def test_outputs_in_request_order_and_everything_recorded(server, tmp_path):
    reqs = requests(5)
    rw = make(
        server, tmp_path, system="You rewrite texts.", temperature=0.3, max_tokens=55, top_p=0.8
    )
    out = rw.rewrite(reqs)
    assert out == expected(reqs)
    assert out[3] == "now item3 rewrite please"
    assert len(server.uploads) == 1 and len(server.created) == 1
    assert dict(server.paid) == {c: 1 for c in cids(rw, reqs)}

    # The uploaded file: one line per request, in the Batch API's format.
    rows = [json.loads(x) for x in server.files[server.uploads[0]]["data"].splitlines()]
    assert [r["custom_id"] for r in rows] == cids(rw, reqs)
    assert rows[0]["method"] == "POST" and rows[0]["url"] == "/v1/chat/completions"
    assert rows[0]["body"] == {
        "model": "gpt-fake",
        "messages": [
            {"role": "system", "content": "You rewrite texts."},
            {"role": "user", "content": "please rewrite item0 now"},
        ],
        "temperature": 0.3,
        "max_tokens": 55,
        "top_p": 0.8,
    }
    batch = server.batches[server.created[0]]
    assert batch["metadata"]["rate_file"] == "r00-f000"
    assert batch["metadata"]["rate_run"] == rw.last_run.parent.name

    manifest = json.loads(rw.last_run.read_text())
    assert {line["state"] for line in manifest["lines"].values()} == {"done"}
    (record,) = manifest["batches"].values()
    assert record["status"] == "completed" and record["collected"] is True
    assert record["request_counts"] == {"total": 5, "completed": 5, "failed": 0}
    assert record["input_file_id"] == server.uploads[0]
    (f,) = manifest["files"].values()
    assert f["state"] == "submitted" and f["file_id"] == server.uploads[0]
    assert f["custom_ids"] == cids(rw, reqs)
    # A local copy of the output file is kept beside the manifest.
    assert (rw.last_run.parent / "results" / f"{server.created[0]}.output.jsonl").exists()


def test_custom_ids_are_safe_stable_and_name_the_example_and_pass(tmp_path, server):
    reqs = [
        RewriteRequest("hh rlhf/12 ü?/rewrite", "t", True, "same prompt"),
        RewriteRequest("hh rlhf/12 ü?/rewritten_rewrite", "t", False, "other prompt"),
    ]
    first, second = cids(make(server, tmp_path), reqs), cids(make(server, tmp_path / "b"), reqs)
    assert first == second  # the same in every run
    assert len(set(first)) == 2
    for cid in first:
        assert re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", cid), cid
    assert first[0].startswith("hh_rlhf.12_") and "rewrite-" in first[0]
    assert "rewritten_rewrite" in first[1]


def test_identical_requests_are_sent_once_and_share_the_answer(server, tmp_path):
    reqs = [
        RewriteRequest("a/rewrite", "x", True, "same words here"),
        RewriteRequest("b/rewrite", "x", True, "same words here"),
        RewriteRequest("c/rewrite", "y", True, "other words"),
    ]
    out = make(server, tmp_path).rewrite(reqs)
    assert out == expected(reqs)
    assert sum(server.paid.values()) == 2


def test_no_requests_makes_no_calls(server, tmp_path):
    assert make(server, tmp_path).rewrite([]) == []
    assert server.api_calls() == 0


# -- splitting -----------------------------------------------------------------------------------


def test_files_split_by_request_count(server, tmp_path):
    reqs = requests(7)
    rw = make(server, tmp_path, max_requests_per_file=3)
    assert_invariants(server, reqs, rw.rewrite(reqs))
    assert [len(uploaded_ids(server, i)) for i in range(3)] == [3, 3, 1]
    assert sum((uploaded_ids(server, i) for i in range(3)), []) == cids(rw, reqs)
    assert len(server.created) == 3


def test_files_split_by_bytes(server, tmp_path):
    reqs = requests(6)
    rw = make(server, tmp_path)
    lines, _ = batch_lines(rw.options, reqs)
    size = len(lines[0].jsonl())
    assert all(len(line.jsonl()) == size for line in lines)  # equal-length lines by design
    limit = 2 * size + 5  # two lines fit, three do not
    rw = make(server, tmp_path, max_bytes_per_file=limit)
    assert_invariants(server, reqs, rw.rewrite(reqs))
    sizes = [len(server.files[f]["data"]) for f in server.uploads]
    assert sizes == [2 * size] * 3
    assert max(sizes) <= limit


def test_split_respects_both_limits_together():
    opts = OpenAIBatchOptions(model="m")
    lines, _ = batch_lines(opts, requests(10))
    size = len(lines[0].jsonl())
    parts = split_lines(lines, max_requests=4, max_bytes=3 * size)
    assert [len(p) for p in parts] == [3, 3, 3, 1]
    parts = split_lines(lines, max_requests=2, max_bytes=3 * size)
    assert [len(p) for p in parts] == [2, 2, 2, 2, 2]
    with pytest.raises(RateError, match=r"ex0/rewrite takes \d+ bytes.*max_bytes_per_file"):
        split_lines(lines, max_requests=4, max_bytes=size - 1)


# -- the cache -----------------------------------------------------------------------------------


def test_second_run_makes_zero_api_calls_even_without_a_key(server, tmp_path, monkeypatch):
    reqs = requests(4)
    first = make(server, tmp_path).rewrite(reqs)
    calls = server.api_calls()
    monkeypatch.delenv("OPENAI_API_KEY")
    again = make(server, tmp_path).rewrite(reqs)
    assert again == first == expected(reqs)
    assert server.api_calls() == calls  # not one request reached the server


def test_cached_lines_are_not_sent_again_when_more_are_asked(server, tmp_path):
    rw = make(server, tmp_path)
    rw.rewrite(requests(3))
    reqs = requests(5)
    assert_invariants(server, reqs, make(server, tmp_path).rewrite(reqs))
    assert uploaded_ids(server, 1) == cids(rw, reqs)[3:]  # only the two new ones


def test_cache_survives_a_torn_last_line_and_keeps_appending(tmp_path):
    cache = ResponseCache(tmp_path / "responses.jsonl")
    cache.put([{"key": "a", "text": "A"}, {"key": "b", "text": "B"}])
    with open(cache.path, "ab") as f:
        f.write(b'{"key": "c", "te')  # a crash in the middle of an append
    cache = ResponseCache(cache.path).load()
    assert {k: e["text"] for k, e in cache.entries.items()} == {"a": "A", "b": "B"}
    assert cache.put([{"key": "c", "text": "C"}, {"key": "a", "text": "other"}]) == 1
    again = ResponseCache(cache.path).load()
    assert {k: e["text"] for k, e in again.entries.items()} == {"a": "A", "b": "B", "c": "C"}


def test_cache_key_covers_model_messages_and_sampling(server, tmp_path):
    reqs = requests(2)
    make(server, tmp_path).rewrite(reqs)
    paid = sum(server.paid.values())
    make(server, tmp_path, temperature=0.1).rewrite(reqs)  # other sampling: new answers
    make(server, tmp_path, model="gpt-other").rewrite(reqs)  # other model: new answers
    make(server, tmp_path, system="Be brief.").rewrite(reqs)  # other messages: new answers
    assert sum(server.paid.values()) == paid + 6
    make(server, tmp_path, max_requests_per_file=1, poll_max_s=0.01).rewrite(reqs)
    assert sum(server.paid.values()) == paid + 6  # options that do not change the answer


# -- batch outcomes ------------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["expired", "cancelled"])
def test_expired_or_cancelled_batch_keeps_finished_lines_and_resubmits_the_rest(
    server, tmp_path, outcome
):
    reqs = requests(6)
    server.plan_batches({"outcome": outcome, "finished": 2})
    rw = make(server, tmp_path)
    assert_invariants(server, reqs, rw.rewrite(reqs))
    ids = cids(rw, reqs)
    assert len(server.created) == 2
    assert uploaded_ids(server, 1) == ids[2:]  # only the unfinished ones went again
    assert all(server.processed[c] == 1 for c in ids)
    first = json.loads(rw.last_run.read_text())["batches"][server.created[0]]
    assert first["status"] == outcome


def test_cancel_requested_from_outside_is_handled(server, tmp_path):
    """A batch someone cancels (dashboard, another tool) ends cancelled; its lines go again."""
    import openai

    reqs = requests(3)
    server.hold = True
    rw = make(server, tmp_path, max_resubmits=1)
    client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)

    def cancel_when_running() -> None:
        deadline = time.time() + 10
        while time.time() < deadline and not server.created:
            time.sleep(0.005)
        client.batches.cancel(server.created[0])
        server.hold = False

    import threading

    t = threading.Thread(target=cancel_when_running)
    t.start()
    out = rw.rewrite(reqs)
    t.join()
    assert_invariants(server, reqs, out)
    assert server.batches[server.created[0]]["status"] == "cancelled"
    assert len(server.created) == 2


def test_failed_batch_is_reported_with_the_api_reason(server, tmp_path):
    reqs = requests(3)
    reason = {"code": "invalid_model", "message": "The model gpt-fake does not exist", "line": 1}
    server.plan_batches({"outcome": "failed", "errors": [reason]})
    rw = make(server, tmp_path)
    with pytest.raises(RateError) as info:
        rw.rewrite(reqs)
    msg = str(info.value)
    assert "no rewrite for 3 of 3 requests (3 batch_failed)" in msg
    assert (
        f"batch {server.created[0]} failed: invalid_model: The model gpt-fake does not exist" in msg
    )
    assert str(rw.last_run) in msg and "running create_dataset again resumes" in msg
    assert len(server.created) == 1  # a validation failure is not retried
    assert sum(server.paid.values()) == 0
    # A rerun (the cause fixed) submits them again: a failed batch billed nothing.
    assert_invariants(server, reqs, make(server, tmp_path).rewrite(reqs))
    assert len(server.created) == 2


def test_batch_failed_on_token_limit_is_retried(server, tmp_path):
    reqs = requests(3)
    limit = {"code": "token_limit_exceeded", "message": "Enqueued token limit reached"}
    server.plan_batches({"outcome": "failed", "errors": [limit]})
    assert_invariants(server, reqs, make(server, tmp_path).rewrite(reqs))
    assert len(server.created) == 2


# -- line failures -------------------------------------------------------------------------------


def test_transient_line_failures_are_resubmitted_and_permanent_ones_reported(server, tmp_path):
    reqs = requests(6)
    rw = make(server, tmp_path)
    ids = cids(rw, reqs)
    server.fail_lines(
        {
            ids[0]: ["rate_limit_exceeded"],
            ids[1]: ["server_error", "server_error"],
            ids[2]: ["invalid_request"],
            ids[3]: ["content_filter"],
        }
    )
    with pytest.raises(RateError) as info:
        rw.rewrite(reqs)
    msg = str(info.value)
    assert "no rewrite for 2 of 6 requests" in msg
    assert "1 invalid_request" in msg and "1 content_filter" in msg
    assert "invalid_request, e.g. ex2/rewrite: Invalid value for 'temperature'" in msg
    assert "content_filter, e.g. ex3/rewrite: The prompt was flagged" in msg
    assert str(rw.last_run) in msg and "resumes" in msg
    assert [server.processed[c] for c in ids] == [2, 3, 1, 1, 1, 1]
    assert server.twice_paid() == {}
    # The finished rows are kept: a rerun pays only for the two that failed.
    calls_before = len(server.uploads)
    out = make(server, tmp_path).rewrite(reqs)
    assert_invariants(server, reqs, out)
    assert uploaded_ids(server, calls_before) == ids[2:4]


def test_transient_failures_stop_after_max_resubmits(server, tmp_path):
    reqs = requests(2)
    rw = make(server, tmp_path, max_resubmits=2)
    ids = cids(rw, reqs)
    server.fail_lines({ids[1]: ["rate_limit_exceeded"] * 10})
    with pytest.raises(RateError, match=r"no rewrite for 1 of 2 requests \(1 rate_limit\)") as info:
        rw.rewrite(reqs)
    assert "rate or token limits were hit" in str(info.value)
    assert server.processed[ids[1]] == 3  # the first submission and two more
    assert server.paid[ids[0]] == 1 and server.paid[ids[1]] == 0


def test_an_answer_without_text_is_paid_once_and_never_bought_again(server, tmp_path):
    reqs = requests(3)
    rw = make(server, tmp_path)
    ids = cids(rw, reqs)
    server.fail_lines({ids[1]: ["refusal"]})
    with pytest.raises(RateError, match=r"1 content_filter.*the model refused"):
        rw.rewrite(reqs)
    assert server.paid[ids[1]] == 1
    calls = server.api_calls()
    with pytest.raises(RateError, match="answered from the cache|cached"):
        make(server, tmp_path).rewrite(reqs)
    assert server.api_calls() == calls  # the billed refusal is not bought again
    assert server.twice_paid() == {}


# -- faults of the API calls themselves ----------------------------------------------------------


def test_api_calls_are_retried_on_429_500_and_dropped_connections(server, tmp_path, caplog):
    reqs = requests(4)
    server.add_faults({"status": 429, "retry_after": 0}, {"drop": True}, path="/v1/files")
    server.add_faults({"status": 500}, path="/v1/batches")
    # file-1 is the upload, batch-2 the batch (the server numbers every object in turn).
    server.add_faults({"drop": True}, {"status": 503}, path="/v1/batches/batch-2")
    with caplog.at_level(logging.WARNING):
        out = make(server, tmp_path).rewrite(reqs)
    assert_invariants(server, reqs, out)
    assert server.created == ["batch-2"] and len(server.uploads) == 1
    assert server.counts["/v1/files"] == 3
    # Two creates, and between them a look-up in case the failed one had made the batch.
    methods = [r.method for r in server.requests_to("/v1/batches")]
    assert methods == ["POST", "GET", "POST"]
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert any("HTTP 429" in m for m in retries) and any("connection error" in m for m in retries)
    assert any("HTTP 503" in m for m in retries)


def test_a_create_whose_reply_was_lost_is_found_not_repeated(server, tmp_path):
    """The API made the batch but the client saw a 502: the retry finds it by its metadata."""
    reqs = requests(3)
    server.add_faults({"lost_reply": True}, path="/v1/batches")
    out = make(server, tmp_path).rewrite(reqs)
    assert_invariants(server, reqs, out)
    assert len(server.created) == 1
    assert any(r.method == "GET" and r.path == "/v1/batches" for r in server.requests)


def test_api_call_that_keeps_failing_ends_with_a_clear_error(server, tmp_path):
    reqs = requests(2)
    server.add_faults(*[{"status": 500}] * 4, path="/v1/files")
    rw = make(server, tmp_path)
    with pytest.raises(BatchAPIError) as info:
        rw.rewrite(reqs)
    msg = str(info.value)
    assert "uploading r00-f000.jsonl" in msg and "HTTP 500 after 4 attempts" in msg
    assert str(rw.last_run) in msg
    # Nothing was submitted, so a rerun simply goes on.
    assert_invariants(server, reqs, make(server, tmp_path).rewrite(reqs))
    assert len(server.created) == 1


def test_a_refused_key_is_named_but_never_shown(tmp_path):
    with (
        FakeBatchServer(expected_key="sk-some-other-key") as srv,
        pytest.raises(BatchAPIError) as info,
    ):
        make(srv, tmp_path).rewrite(requests(1))
    msg = str(info.value)
    assert "HTTP 401" in msg and "OPENAI_API_KEY" in msg and KEY not in msg


def test_missing_key_without_base_url_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY")
    opts = OpenAIBatchOptions(model="gpt-fake", work_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="openai_batch rewriter needs an API key.*OPENAI_API_KEY"):
        build_openai_batch_rewriter(opts, None, 0).rewrite(requests(1))


# -- crashes and resumption ----------------------------------------------------------------------


def driver_config(
    server: FakeBatchServer, work: Path, reqs: list[RewriteRequest], tmp: Path
) -> Path:
    path = tmp / f"driver-{time.monotonic_ns()}.json"
    path.write_text(
        json.dumps(
            {
                "options": options(server, work),
                "requests": [[r.key, r.text, r.target_w, r.instruction] for r in reqs],
                "out": str(tmp / "driver-out.json"),
            }
        )
    )
    return path


def start_driver(config: Path, **env: str) -> subprocess.Popen:
    # The fakes first, then any PYTHONPATH already set (the checkout under test, if it is one).
    path = os.pathsep.join([str(FAKES), *filter(None, [os.environ.get("PYTHONPATH")])])
    full_env = {**os.environ, "PYTHONPATH": path, "RATE_PROGRESS": "0", **env}
    return subprocess.Popen(
        [sys.executable, str(FAKES / "batch_driver.py"), str(config)],
        env=full_env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out waiting for the child process"
        time.sleep(0.01)


def manifest_of(work: Path) -> dict:
    (path,) = (work / "runs").glob("*/manifest.json")
    return json.loads(path.read_text())


def test_killed_mid_poll_reattaches_to_its_batch(server, tmp_path):
    work = tmp_path / "work"
    reqs = requests(5)
    server.hold = True  # the batch stays in_progress until the child is dead
    child = start_driver(driver_config(server, work, reqs, tmp_path))
    try:
        batch_path = lambda: f"/v1/batches/{server.created[0]}" if server.created else "-"  # noqa: E731
        wait_for(lambda: server.counts[batch_path()] >= 3)  # polling a batch in progress
        wait_for(lambda: any(manifest_of(work)["batches"]) if (work / "runs").exists() else False)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert server.batches[server.created[0]]["status"] == "in_progress"
    server.hold = False
    out = make(server, work).rewrite(reqs)
    assert_invariants(server, reqs, out)
    assert len(server.created) == 1 and len(server.uploads) == 1  # re-attached, nothing new


@pytest.mark.parametrize(
    ("point", "uploads"),
    [("after_upload", 2), ("after_create", 1), ("after_download", 1)],
)
def test_exit_at_each_crash_point_resumes_without_a_second_batch(server, tmp_path, point, uploads):
    """The child exits hard at the point, before the manifest records what just happened."""
    work = tmp_path / "work"
    reqs = requests(4)
    child = start_driver(driver_config(server, work, reqs, tmp_path), **{CRASH_ENV: point})
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == CRASH_EXIT_CODE, stderr
    state = manifest_of(work)
    (f,) = state["files"].values()
    if point == "after_create":
        assert f["state"] == "creating" and not state["batches"]  # the batch is unrecorded
        assert len(server.created) == 1
    downloads = sum(n for p, n in server.counts.items() if p.endswith("/content"))
    out = make(server, work).rewrite(reqs)
    assert_invariants(server, reqs, out)
    assert len(server.created) == 1 and len(server.uploads) == uploads
    if point == "after_create":
        assert server.counts["/v1/batches"] == 2  # one create, one list to find it again
    if point == "after_download":
        # The kept local copy is used: the output file is not downloaded again.
        assert sum(n for p, n in server.counts.items() if p.endswith("/content")) == downloads


def test_a_changed_request_set_waits_for_the_abandoned_batch(server, tmp_path):
    """Killed while four lines are in flight, then run with six: the four are not bought again."""
    work = tmp_path / "work"
    server.hold = True
    child = start_driver(driver_config(server, work, requests(4), tmp_path))
    try:
        wait_for(
            lambda: bool(server.created) and server.counts[f"/v1/batches/{server.created[0]}"] >= 2
        )
        wait_for(lambda: any(manifest_of(work)["batches"]))
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    server.hold = False
    reqs = requests(6)
    rw = make(server, work)
    assert_invariants(server, reqs, rw.rewrite(reqs))
    assert len(server.created) == 2
    assert uploaded_ids(server, 1) == cids(rw, reqs)[4:]


def test_a_second_process_on_the_same_run_is_refused(server, tmp_path):
    reqs = requests(2)
    rw = make(server, tmp_path)
    lines, _ = batch_lines(rw.options, reqs)
    run_dir = tmp_path / "runs" / rw._run_id(lines)
    with run_lock(run_dir), pytest.raises(RunLockedError, match="another process .* wait for it"):
        rw.rewrite(reqs)
    assert server.api_calls() == 0


# -- the dry run ---------------------------------------------------------------------------------


def test_dry_run_writes_the_files_a_run_would_upload_and_estimates_cost(server, tmp_path):
    reqs = requests(5)
    rw = make(server, tmp_path, max_requests_per_file=2, max_tokens=3)
    rw.rewrite(reqs[:1])  # one answer cached: not planned again
    calls = server.api_calls()
    prices = {"gpt-fake": {"input_per_1m": 2.0, "output_per_1m": 8.0}}
    plan = rw.plan(reqs, prices)
    assert server.api_calls() == calls  # no API call
    assert (plan["requests"], plan["cached"], plan["to_submit"], plan["files"]) == (5, 1, 4, 2)
    assert [Path(p).exists() for p in plan["paths"]] == [True, True]
    # Tokens: "please rewrite itemN now" is 24 characters -> 6, + 4 per message + 3 per request;
    # "text number N" is 13 characters -> 4 output tokens, capped at max_tokens=3.
    assert plan["input_tokens"] == 4 * (6 + 4 + 3)
    assert plan["output_tokens_estimate"] == 4 * 3
    full = (52 * 2.0 + 12 * 8.0) / 1e6
    assert plan["cost_usd"] == pytest.approx(full * BATCH_DISCOUNT)
    assert any("characters / 4" in n for n in plan["notes"])
    assert any("50% discount" in n for n in plan["notes"])
    # The real run uploads exactly these files.
    planned = [Path(p).read_bytes() for p in plan["paths"]]
    rw.rewrite(reqs)
    uploaded = [server.files[f]["data"] for f in server.uploads[1:]]
    assert uploaded == planned


def test_dry_run_without_a_price_or_a_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    plan = make(server, tmp_path).plan(
        requests(2), {"gpt-4o": {"input_per_1m": 1, "output_per_1m": 1}}
    )
    assert plan["cost_usd"] is None
    assert any("no price for model 'gpt-fake'" in n and "gpt-4o" in n for n in plan["notes"])
    assert plan["input_tokens"] > 0 and server.api_calls() == 0


# -- secrets and options -------------------------------------------------------------------------


def test_the_key_never_leaks(server, tmp_path, caplog):
    reqs = requests(4)
    rw = make(server, tmp_path)
    ids = cids(rw, reqs)
    server.fail_lines({ids[0]: ["invalid_request"], ids[1]: ["server_error"]})
    server.add_faults({"status": 429, "retry_after": 0}, path="/v1/files")
    with caplog.at_level(logging.DEBUG), pytest.raises(RateError) as info:
        rw.rewrite(reqs)
    rw.plan(reqs, {})
    assert all(r.bearer_is(KEY) for r in server.requests)  # the key was used ...
    assert KEY not in str(info.value)  # ... and shown nowhere
    assert KEY not in caplog.text
    assert KEY not in json.dumps(rw.describe())
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 5  # manifest, request files, results, cache, dry run
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path


def test_options_errors_name_the_key():
    def check(match: str, **kw) -> None:
        with pytest.raises(ConfigError, match=match):
            OpenAIBatchOptions(**{"model": "m", **kw}).validate(WHERE)

    check(r"rewriter.model", model=" ")
    check(r"rewriter.max_requests_per_file.*50000", max_requests_per_file=50001)
    check(r"rewriter.max_bytes_per_file", max_bytes_per_file=0)
    check(r"rewriter.completion_window", completion_window="tomorrow")
    check(r"rewriter.poll_max_s", poll_initial_s=5, poll_max_s=1)
    check(r"rewriter.max_resubmits", max_resubmits=-1)
    with pytest.raises(ConfigError) as info:
        OpenAIBatchOptions(model="m", api_key_env=KEY + "-x").validate(WHERE)
    assert "rewriter.api_key_env" in str(info.value) and KEY not in str(info.value)
    default = OpenAIBatchOptions(model="m")
    assert (default.completion_window, default.max_requests_per_file) == ("24h", 50000)


def test_the_default_body_is_the_references_and_a_seed_is_sent_on_request(server, tmp_path):
    """No cap and no seed by default: {model, messages, temperature}, as the reference's
    gpt4_api.create_api_batch; send_seed adds a seed from the run seed and the content, so
    identical requests still share one line."""
    reqs = requests(2)
    rw = make(server, tmp_path / "a")
    rw.rewrite(reqs)
    rows = [json.loads(x) for x in server.files[server.uploads[-1]]["data"].splitlines()]
    assert set(rows[0]["body"]) == {"model", "messages", "temperature"}
    twin = [*reqs, RewriteRequest("other/rewrite", "t", True, reqs[0].instruction)]
    seeded = make(server, tmp_path / "b", send_seed=True, max_completion_tokens=99)
    lines, _ = batch_lines(seeded.options, twin, seed=0)
    assert len(lines) == 2  # the twin shares the first request's line
    assert {line.body["max_completion_tokens"] for line in lines} == {99}
    seeds = [line.body["seed"] for line in lines]
    assert len(set(seeds)) == 2 and all(0 <= s < 2**31 for s in seeds)
    again, _ = batch_lines(seeded.options, twin, seed=1)
    assert [line.body["seed"] for line in again] != seeds  # the run seed moves them


def test_a_line_cut_at_a_length_limit_is_told(server, tmp_path):
    reqs = requests(3)
    rw = make(server, tmp_path)
    lines, _ = batch_lines(rw.options, reqs)
    server.fail_lines({lines[1].custom_id: ["length"]})
    out = rw.rewrite(reqs)
    assert rw.stopped_at_limit(reqs) == [False, True, False]
    assert len(out[1]) < len(expected(reqs)[1])
