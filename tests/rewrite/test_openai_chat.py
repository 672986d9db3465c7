"""The OpenAI-compatible chat rewriter against a real local HTTP server, through the real SDK:
order under concurrency, the retry policy, errors that say what to do, and the key kept secret.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from rate.errors import ConfigError, RateError
from rate.rewrite.base import RewriteRequest
from rate.rewrite.openai_chat import (
    PLACEHOLDER_KEY,
    ChatAPIError,
    OpenAIChatRewriter,
    build_openai_chat_rewriter,
)
from rate.rewrite.options import OpenAIChatOptions
from rate.schema import from_dict
from rate.seeding import stable_seed
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer

KEY = "sk-test-SECRET-123"  # recognisable, so a leak anywhere is easy to find
CANARIES = (
    KEY,
    "sk-wrong-SECRET-456",
)  # the secret canary checks every stream and file (tests/faults/canary.py)
WHERE = "dataset_templates/example.yaml"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return KEY


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.errors, f"the fake server itself failed: {srv.errors}"


def make(base_url: str, seed: int = 0, **overrides) -> OpenAIChatRewriter:
    """A rewriter for ``base_url`` with fast retries (the tests never wait long)."""
    data = {
        "model": "fake-model",
        "base_url": base_url,
        "retry_base_s": 0.001,
        "max_retries": 3,
        "timeout_s": 5.0,
        **overrides,
    }
    options = from_dict(OpenAIChatOptions, data, WHERE, "rewriter")
    return build_openai_chat_rewriter(options, template=None, seed=seed)


def requests(n: int) -> list[RewriteRequest]:
    return [
        RewriteRequest(f"ex{i}/rewrite", f"text {i}", i % 2 == 0, f"please rewrite item{i} now")
        for i in range(n)
    ]


def expected(reqs: list[RewriteRequest]) -> list[str]:
    return [FakeOpenAIServer.reply_to(r.instruction) for r in reqs]


def closed_port() -> int:
    """A local port that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- outputs and concurrency ---------------------------------------------------------------------


def test_outputs_are_the_model_replies_in_request_order_with_concurrent_requests(server):
    server.delay_s = 0.05  # long enough that requests overlap on the server
    reqs = requests(40)
    out = make(server.base_url, concurrency=8).rewrite(reqs)
    assert out == expected(reqs)
    assert out[3] == "now item3 rewrite please"  # the transform itself, written out once
    assert server.counts[CHAT_PATH] == 40
    assert 1 < server.max_in_flight <= 8


def test_concurrency_one_sends_one_request_at_a_time(server):
    server.delay_s = 0.01
    reqs = requests(5)
    assert make(server.base_url, concurrency=1).rewrite(reqs) == expected(reqs)
    assert server.max_in_flight == 1


def test_a_request_is_not_in_flight_once_its_reply_is_written(monkeypatch):
    """The fake's count must not race the client: a handler thread that is slow to run again
    after writing its reply (as under load) must not make one-at-a-time requests look like two.
    """
    write = FakeOpenAIServer._send

    def write_then_stall(h, reply):
        write(h, reply)
        time.sleep(0.05)  # the client reads the reply and sends its next request meanwhile

    monkeypatch.setattr(FakeOpenAIServer, "_send", staticmethod(write_then_stall))
    with FakeOpenAIServer() as srv:
        reqs = requests(3)
        assert make(srv.base_url, concurrency=1).rewrite(reqs) == expected(reqs)
    assert srv.max_in_flight == 1


def test_no_requests_makes_no_calls(server):
    assert make(server.base_url).rewrite([]) == []
    assert server.counts[CHAT_PATH] == 0


def test_request_parameters_reach_the_server(server):
    rw = make(
        server.base_url,
        seed=7,
        system="You rewrite texts.",
        temperature=0.25,
        max_tokens=77,
        top_p=0.9,
    )
    reqs = requests(2)
    rw.rewrite(reqs)
    bodies = {r.body["messages"][-1]["content"]: r.body for r in server.requests_to(CHAT_PATH)}
    for req in reqs:
        body = bodies[req.instruction]
        assert body["model"] == "fake-model"
        assert body["messages"] == [
            {"role": "system", "content": "You rewrite texts."},
            {"role": "user", "content": req.instruction},
        ]
        assert body["temperature"] == 0.25
        assert body["max_tokens"] == 77
        assert body["top_p"] == 0.9
        assert body["seed"] == stable_seed("openai_chat", 7, req.key) % 2**31
    assert len({b["seed"] for b in bodies.values()}) == 2  # one seed per request key


def test_without_system_top_p_or_a_cap_none_is_sent(server):
    """No length cap by default, as the reference sends none."""
    make(server.base_url).rewrite(requests(1))
    (received,) = server.requests_to(CHAT_PATH)
    assert [m["role"] for m in received.body["messages"]] == ["user"]
    assert "top_p" not in received.body
    assert "max_tokens" not in received.body and "max_completion_tokens" not in received.body
    assert received.body["temperature"] == 0.7 and "seed" in received.body


def test_max_completion_tokens_and_no_seed(server):
    make(server.base_url, max_completion_tokens=64, send_seed=False).rewrite(requests(1))
    (received,) = server.requests_to(CHAT_PATH)
    assert received.body["max_completion_tokens"] == 64
    assert "max_tokens" not in received.body and "seed" not in received.body


def test_seeds_are_fixed_by_run_seed_and_key():
    req = requests(1)[0]
    a, b, c = (make("http://127.0.0.1:9/v1", seed=s) for s in (1, 1, 2))
    assert a.request_seed(req) == b.request_seed(req) != c.request_seed(req)
    assert 0 <= a.request_seed(req) < 2**31


# -- retries -------------------------------------------------------------------------------------


def test_429_then_success_honours_a_long_retry_after(server, caplog):
    server.add_faults({"status": 429, "retry_after": 0.3})
    reqs = requests(1)
    t0 = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="rate.rewrite.openai_chat"):
        assert make(server.base_url, retry_base_s=0.001).rewrite(reqs) == expected(reqs)
    assert time.perf_counter() - t0 >= 0.3  # waited as told, not the 1 ms back-off
    assert server.counts[CHAT_PATH] == 2
    (record,) = caplog.records
    assert "HTTP 429" in record.message and "in 0.30 s" in record.message
    assert "ex0/rewrite" in record.message


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 429, "retry_after": 0},
        {"status": 503, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"},  # a date in the past
    ],
    ids=["429-seconds", "503-http-date"],
)
def test_retry_after_zero_does_not_wait_for_the_back_off(server, fault):
    server.add_faults(fault)
    reqs = requests(1)
    t0 = time.perf_counter()
    # The back-off alone would wait at least 10 s (margins are wide: CI machines are loaded).
    assert make(server.base_url, retry_base_s=20.0).rewrite(reqs) == expected(reqs)
    assert time.perf_counter() - t0 < 5.0
    assert server.counts[CHAT_PATH] == 2


@pytest.mark.parametrize(
    "fault",
    [{"status": 500}, {"status": 503}, {"drop": True}],
    ids=["500", "503", "dropped-connection"],
)
def test_transient_failure_then_success(server, caplog, fault):
    server.add_faults(fault)
    reqs = requests(3)
    with caplog.at_level(logging.WARNING, logger="rate.rewrite.openai_chat"):
        assert make(server.base_url, concurrency=1).rewrite(reqs) == expected(reqs)
    assert server.counts[CHAT_PATH] == 4  # three requests, one of them twice
    (record,) = caplog.records
    assert "retry 1 of 3" in record.message


def test_timeout_then_success(server):
    server.add_faults({"delay_s": 8.0})
    reqs = requests(1)
    t0 = time.perf_counter()
    assert make(server.base_url, timeout_s=0.3).rewrite(reqs) == expected(reqs)
    assert time.perf_counter() - t0 < 5.0  # did not wait for the slow reply
    assert server.counts[CHAT_PATH] == 2


def test_retries_exhausted_fails_with_the_status_and_what_to_do(server):
    server.add_faults({"status": 500}, {"status": 500}, {"status": 500})
    with pytest.raises(ChatAPIError) as info:
        make(server.base_url, max_retries=2).rewrite(requests(1))
    message = str(info.value)
    assert "ex0/rewrite" in message and "HTTP 500 after 3 attempts" in message
    assert "rewriter.concurrency" in message
    assert info.value.status == 500 and isinstance(info.value, RateError)
    assert server.counts[CHAT_PATH] == 3


@pytest.mark.parametrize(
    ("status", "hint"),
    [(400, "temperature"), (403, "permissions"), (404, "rewriter.base_url"), (422, "model")],
)
def test_client_errors_fail_at_once_without_retry(server, caplog, status, hint):
    server.add_faults({"status": status, "message": "nope: bad thing"})
    with caplog.at_level(logging.WARNING), pytest.raises(ChatAPIError) as info:
        make(server.base_url, concurrency=1).rewrite(requests(3))
    message = str(info.value)
    assert f"HTTP {status}" in message and "ex0/rewrite" in message
    assert "nope: bad thing" in message and hint in message
    assert info.value.status == status and info.value.key == "ex0/rewrite"
    assert server.counts[CHAT_PATH] == 1  # no retry, and the other requests were not sent
    assert not caplog.records


def test_an_unreachable_endpoint_fails_fast_naming_base_url():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    t0 = time.perf_counter()
    with pytest.raises(ChatAPIError) as info:
        make(url, max_retries=2, retry_base_s=0.01).rewrite(requests(2))
    assert time.perf_counter() - t0 < 5.0
    message = str(info.value)
    assert f"base_url {url} could not be reached" in message
    assert "rewriter.base_url" in message and "3 attempts" in message


def test_the_first_failure_for_good_stops_the_other_requests(server):
    # Three requests get a 500 and back off for 10 to 30 s; meanwhile the fourth gets a 400.
    server.add_faults(*[{"status": 500}] * 3, {"status": 400, "delay_s": 0.1})
    server.add_faults(*[{"status": 500}] * 100)
    before = set(threading.enumerate())
    t0 = time.perf_counter()
    with pytest.raises(ChatAPIError, match="HTTP 400"):
        make(server.base_url, concurrency=4, max_retries=3, retry_base_s=20.0).rewrite(requests(40))
    assert time.perf_counter() - t0 < 5.0
    time.sleep(0.3)
    # The waiting requests woke and gave up: no worker is left, no retry or new request sent.
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []
    assert server.counts[CHAT_PATH] == 4


# -- responses -----------------------------------------------------------------------------------


def test_content_none_is_an_error_naming_the_key(server):
    server.add_faults({}, {"content": None})
    with pytest.raises(ChatAPIError, match=r"no text for request ex1/rewrite") as info:
        make(server.base_url, concurrency=1).rewrite(requests(3))
    assert "NoneType" in str(info.value)


def test_a_refusal_is_reported_as_such(server):
    server.add_faults({"content": None, "refusal": "I can't help with that."})
    with pytest.raises(ChatAPIError, match=r"refused request ex0/rewrite: \"I can't help"):
        make(server.base_url).rewrite(requests(1))


def test_no_choices_is_an_error_naming_the_key(server):
    server.add_faults({"choices": []})
    with pytest.raises(ChatAPIError, match="no choices for request ex0/rewrite"):
        make(server.base_url).rewrite(requests(1))


def test_empty_content_is_returned_as_is(server):
    server.add_faults({"content": ""})
    reqs = requests(2)
    out = make(server.base_url, concurrency=1).rewrite(reqs)
    assert out == ["", expected(reqs)[1]]


def test_rewrites_cut_at_a_length_limit_are_told_and_counted(server, caplog):
    server.add_faults({"finish_reason": "length"}, {"finish_reason": "length"})
    rw = make(server.base_url, concurrency=1, max_tokens=5)
    reqs = requests(3)
    with caplog.at_level(logging.WARNING, logger="rate.rewrite.openai_chat"):
        rw.rewrite(reqs)
    assert [r.message.split(" (")[0] for r in caplog.records] == [
        "2 of 3 rewrites stopped at a length limit"
    ]
    assert "{'max_tokens': 5}" in caplog.records[0].message
    assert rw.stopped_at_limit(reqs) == [True, True, False]
    rw.rewrite(reqs)  # the flags are the latest call's
    assert rw.stopped_at_limit(reqs) == [False, False, False]


# -- the API key ---------------------------------------------------------------------------------


def test_the_key_reaches_the_server_but_no_log_error_or_description(monkeypatch, caplog):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("RATE_TEST_LLM_KEY", KEY)
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    with FakeOpenAIServer(expected_key=KEY) as srv:
        srv.add_faults({"status": 429, "retry_after": 0}, {"drop": True})
        rw = make(srv.base_url, api_key_env="RATE_TEST_LLM_KEY", concurrency=1)
        reqs = requests(2)
        assert rw.rewrite(reqs) == expected(reqs)
        assert srv.counts[CHAT_PATH] == 4
        assert all(r.had_bearer and r.bearer_is(KEY) for r in srv.requests)
        assert not srv.requests[0].bearer_is("sk-other")

        # A key the server refuses: 401, no retry, the variable named, the key not shown.
        monkeypatch.setenv("RATE_TEST_LLM_KEY", "sk-wrong-SECRET-456")
        with pytest.raises(ChatAPIError) as info:
            make(srv.base_url, api_key_env="RATE_TEST_LLM_KEY").rewrite(requests(1))
        assert srv.counts[CHAT_PATH] == 5
    message = str(info.value)
    assert "HTTP 401" in message and "RATE_TEST_LLM_KEY" in message
    assert "refused the API key" in message
    assert any("retry" in r.message for r in caplog.records)  # the logs were captured
    everything = caplog.text + message + repr(rw.describe()) + repr(rw.options) + repr(rw)
    assert "SECRET" not in everything and "sk-" not in everything


def test_a_local_server_needs_no_key(monkeypatch, server):
    monkeypatch.delenv("OPENAI_API_KEY")
    reqs = requests(1)
    assert make(server.base_url).rewrite(reqs) == expected(reqs)
    assert server.requests[0].bearer_is(PLACEHOLDER_KEY)


def test_a_missing_key_without_base_url_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set.*rewriter.base_url"):
        make("")


def test_describe_names_the_endpoint_and_sampling_not_the_key(server):
    rw = make(server.base_url, seed=3, system="sys", top_p=0.5, concurrency=2)
    assert rw.describe() == {
        "backend": "openai_chat",
        "model": "fake-model",
        "base_url": server.base_url,
        "temperature": 0.7,
        "max_tokens": None,
        "max_completion_tokens": None,
        "top_p": 0.5,
        "send_seed": True,
        "system": "sys",
        "concurrency": 2,
        "seed": 3,
    }


def test_credentials_in_base_url_are_not_described():
    rw = make("http://user:hunter2@127.0.0.1:9/v1")
    assert rw.describe()["base_url"] == "http://127.0.0.1:9/v1"


# -- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"concurrency": 0}, "rewriter.concurrency"),
        ({"temperature": -0.1}, "rewriter.temperature"),
        ({"max_tokens": 0}, "rewriter.max_tokens"),
        ({"max_completion_tokens": 0}, "rewriter.max_completion_tokens"),
        ({"max_tokens": 9, "max_completion_tokens": 9}, "rewriter.max_completion_tokens"),
        ({"top_p": 0.0}, "rewriter.top_p"),
        ({"max_retries": -1}, "rewriter.max_retries"),
        ({"timeout_s": 0}, "rewriter.timeout_s"),
        ({"base_url": "127.0.0.1:8000/v1"}, "rewriter.base_url"),
        ({"model": " "}, "rewriter.model"),
    ],
)
def test_bad_options_are_rejected_naming_the_file_and_key(override, key):
    with pytest.raises(ConfigError, match=f"{WHERE}: key '{key}'"):
        from_dict(OpenAIChatOptions, {"model": "m", **override}, WHERE, "rewriter")


def test_a_key_pasted_into_api_key_env_is_rejected_without_echoing_it():
    with pytest.raises(ConfigError) as info:
        from_dict(OpenAIChatOptions, {"model": "m", "api_key_env": KEY}, WHERE, "rewriter")
    assert "rewriter.api_key_env" in str(info.value) and "SECRET" not in str(info.value)


def test_model_is_required():
    with pytest.raises(ConfigError, match="missing required key 'rewriter.model'"):
        from_dict(OpenAIChatOptions, {}, WHERE, "rewriter")


def test_an_endpoint_that_never_answered_gets_few_retries():
    """Offline or a wrong base_url: three quick attempts, not the full back-off schedule."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ChatAPIError, match="3 attempts"):
        make(url, max_retries=6, retry_base_s=0.01).rewrite(requests(1))
