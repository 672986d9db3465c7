"""create_dataset through `rate` with an openai_chat template at the local server: a key held
in a variable of any name, and credentials inside base_url, reach no stream, log or file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import english_template
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers import run_rate

CANARY = "canary-5b0c-LLM-credential"  # held in LLM_CREDENTIALS: no _KEY, _TOKEN or _SECRET
URL_CANARY = "canary-pw-77e1"
QUERY_CANARY = "canary-query-3f9a"  # a key in base_url's query string (?api-key=...)
CANARIES = (CANARY, URL_CANARY, QUERY_CANARY)  # checked after every test (tests/faults/canary.py)
CANARY_INPUTS = ("dataset_templates/chatty.yaml",)  # the URL canary is in its base_url


def leaks(canary: str, project: Path, *texts: str) -> list[str]:
    """Where ``canary`` appears: the given texts (streams), and every file under ``project``
    (data, records, logs, caches)."""
    found = [f"stream {i}" for i, text in enumerate(texts) if canary in text]
    for path in project.rglob("*"):
        if path.is_file() and canary.encode() in path.read_bytes():
            found.append(str(path))
    return found


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.errors


def chat_template(root: Path, base_url: str) -> None:
    english_template(
        root,
        "chatty",
        n=4,
        rewriter={
            "backend": "openai_chat",
            "model": "fake-model",
            "base_url": base_url,
            "api_key_env": "LLM_CREDENTIALS",
            "max_retries": 0,
            "retry_base_s": 0.001,
        },
    )


def create(root: Path, project: Path, **env: str):
    return run_rate(
        [
            "create_dataset",
            "--config",
            "experiments/smoke.yaml",
            "--set",
            "rewrites.dataset_name=chatty",
            "--set",
            "rewrites.smoke_n_examples=4",
        ],
        project,
        check=False,
        RATE_TEMPLATE_PATH=str(root),
        **env,
    )


def test_a_server_error_echoing_the_key_is_redacted_everywhere(tmp_path, server):
    """main: the key of LLM_CREDENTIALS, echoed by the server, went to stderr verbatim."""
    chat_template(tmp_path, server.base_url)
    server.add_faults(
        {"status": 400, "message": f"bad key {CANARY}; got Authorization: Bearer {CANARY}"}
    )
    out = create(tmp_path, tmp_path / "p", LLM_CREDENTIALS=CANARY)
    assert out.returncode == 2, out.stderr
    assert "HTTP 400" in out.stderr and "bad key ***" in out.stderr
    assert leaks(CANARY, tmp_path / "p", out.stdout, out.stderr) == []
    assert any(r.bearer_is(CANARY) for r in server.requests)  # the key was sent, and only there


def test_credentials_in_base_url_are_not_recorded(tmp_path, server):
    """main wrote http://user:key@host/v1 raw into the rewrites' .meta.json."""
    host = server.base_url.split("://", 1)[1]
    chat_template(tmp_path, f"http://user:{URL_CANARY}@{host}")
    out = create(tmp_path, tmp_path / "p", LLM_CREDENTIALS=CANARY)
    assert out.returncode == 0, out.stderr
    (meta,) = (tmp_path / "p" / "data" / "rewrites").glob("*.meta.json")
    assert "http://***@127.0.0.1" in meta.read_text()
    for canary in (URL_CANARY, CANARY):
        assert leaks(canary, tmp_path / "p", out.stdout, out.stderr) == []


@pytest.mark.parametrize("param", ["api-key", "token", "sig"])
def test_a_key_in_base_urls_query_reaches_no_stream_log_or_file(tmp_path, server, param):
    """Issue 45, item 3: ``...?api-key=sk-...`` was printed in the error line, in the stage's
    log and in httpx's own INFO line; only ``user:pass@`` was redacted."""
    chat_template(tmp_path, f"{server.base_url}?{param}={QUERY_CANARY}")
    server.add_faults({"status": 400, "message": "refused"})
    out = create(tmp_path, tmp_path / "p", LLM_CREDENTIALS=CANARY)
    assert out.returncode == 2, out.stderr
    assert f"{param}=***" in out.stderr + "".join(
        p.read_text() for p in (tmp_path / "p").rglob("*.log")
    )
    assert leaks(QUERY_CANARY, tmp_path / "p", out.stdout, out.stderr) == []


def test_validate_warns_about_a_key_in_base_url(tmp_path):
    chat_template(tmp_path, f"http://127.0.0.1:9/v1?api-key={QUERY_CANARY}")
    out = run_rate(["validate"], tmp_path / "p", check=False, RATE_TEMPLATE_PATH=str(tmp_path))
    text = out.stdout + out.stderr
    assert "chatty" in text and "base_url" in text and "credential" in text, text
    assert QUERY_CANARY not in text
