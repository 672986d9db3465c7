import logging
import os
from pathlib import Path

import pytest

from rate.settings import RedactSecretsFilter, load_env, project_dir, setup_logging

FAKE_KEY = "sk-test-1234567890abcdef"


@pytest.fixture
def restore_root_logger():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def test_redaction_hides_key_in_captured_log_line(
    tmp_path, monkeypatch, capsys, restore_root_logger
):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefgh")
    log_file = tmp_path / "logs" / "run.log"
    setup_logging("INFO", log_file=log_file)
    # A child logger: its records reach the root's handlers, whose filter must still apply.
    log = logging.getLogger("rate.test.child")
    log.info("calling the API with key %s and token %s", FAKE_KEY, "hf_abcdefgh")

    err = capsys.readouterr().err
    text = log_file.read_text()
    for out in (err, text):
        assert FAKE_KEY not in out and "hf_abcdefgh" not in out
        assert "INFO rate.test.child: calling the API with key *** and token ***" in out


def test_redaction_covers_exception_text(monkeypatch):
    monkeypatch.setenv("MY_SECRET", "hunter2-secret")
    try:
        raise ValueError("bad credential hunter2-secret")
    except ValueError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "failed", None, exc_info=__import__("sys").exc_info()
        )
    RedactSecretsFilter().filter(record)
    assert "hunter2-secret" not in record.exc_text
    assert "bad credential ***" in record.exc_text


def test_short_and_unrelated_values_are_not_redacted(monkeypatch):
    monkeypatch.setenv("SOME_KEY", "1")
    monkeypatch.setenv("NOT_A_SECRET_NAME", "visible-value")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "1 and visible-value", None, None)
    RedactSecretsFilter().filter(record)
    assert record.getMessage() == "1 and visible-value"


def test_setup_logging_twice_does_not_duplicate_handlers(restore_root_logger):
    root = logging.getLogger()
    before = len(root.handlers)
    setup_logging("DEBUG")
    setup_logging("WARNING")
    assert len(root.handlers) == before + 1
    assert root.level == logging.WARNING


def test_load_env_does_not_override_existing(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("RATE_TEST_EXISTING=from_dotenv\nRATE_TEST_NEW=from_dotenv\n")
    monkeypatch.setenv("RATE_TEST_EXISTING", "from_shell")
    monkeypatch.delenv("RATE_TEST_NEW", raising=False)
    assert load_env(tmp_path) == tmp_path / ".env"
    try:
        assert os.environ["RATE_TEST_EXISTING"] == "from_shell"
        assert os.environ["RATE_TEST_NEW"] == "from_dotenv"
    finally:
        os.environ.pop("RATE_TEST_NEW", None)


def test_load_env_without_file_returns_none(tmp_path):
    assert load_env(tmp_path) is None


def test_project_dir_default_and_override(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROJECT_DIR", raising=False)
    assert project_dir() == tmp_path / "project_data"
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "data"))
    assert project_dir() == tmp_path / "data"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PROJECT_DIR", "~/d")
    assert project_dir() == Path(tmp_path) / "d"
