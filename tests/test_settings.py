import errno
import logging
import os
from pathlib import Path

import pytest

from rate import settings
from rate.rewrite.options import OpenAIChatOptions
from rate.schema import from_dict
from rate.settings import (
    LogFileHandler,
    RedactSecretsFilter,
    load_env,
    load_settings,
    project_dir,
    redact,
    redact_record,
    setup_logging,
)

FAKE_KEY = "sk-test-1234567890abcdef"


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


def test_a_variable_a_template_names_is_a_secret_whatever_its_name(monkeypatch):
    """api_key_env: LLM_CREDENTIALS does not end in _KEY: main echoed its value (item 3)."""
    monkeypatch.setenv("LLM_CREDENTIALS", "canary-4f9a-credential")
    from_dict(
        OpenAIChatOptions, {"model": "m", "api_key_env": "LLM_CREDENTIALS"}, "t.yaml", "rewriter"
    )
    assert redact("server said: bad key canary-4f9a-credential") == "server said: bad key ***"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Authorization: Bearer abc.def-123", "Authorization: ***"),
        # main: 'got Authorization: ***'m', temperature' (the message's words redacted too)
        (
            "got Authorization: Bearer k-1. Check the options (model 'm')",
            "got Authorization: *** Check the options (model 'm')",
        ),
        ("Authorization: tok-9 was refused", "Authorization: *** was refused"),
        ('{"authorization": "Basic dXNlcjpwdw=="}', '{"authorization": "***"}'),
        ("sent bearer sk-live-XYZ to the host", "sent bearer *** to the host"),
        ("http://user:pw@host:8000/v1 failed", "http://***@host:8000/v1 failed"),
        ("see https://host/path?x=a@b", "see https://host/path?x=a@b"),
        # issue 45, item 3: a key in the query string was printed and logged
        ("POST https://h/v1?api-key=sk-1&x=2 failed", "POST https://h/v1?api-key=***&x=2 failed"),
        ("https://h/b?sv=1&SIG=abc%2F&se=2", "https://h/b?sv=1&SIG=***&se=2"),
        ('"https://h/x?access_token=t-9"', '"https://h/x?access_token=***"'),
        ("https://h/cb#id_token=ey.J", "https://h/cb#id_token=***"),
        ("https://h/p?monkey=1&keys=2&token_type=x", "https://h/p?monkey=1&keys=2&token_type=x"),
    ],
)
def test_credentials_in_headers_and_urls_are_redacted(text, want):
    assert redact(text) == want


def test_redact_record_reaches_every_string():
    record = {"a": ["http://u:p@h/v1", {"b": "Bearer tok-123"}], "n": 3, "t": True}
    assert redact_record(record) == {
        "a": ["http://***@h/v1", {"b": "Bearer ***"}],
        "n": 3,
        "t": True,
    }


def test_settings_come_from_the_checkout_then_the_current_folder(tmp_path, monkeypatch):
    """The README says .env at the checkout; main read the current folder's only."""
    checkout, here = tmp_path / "checkout", tmp_path / "here"
    for d in (checkout, here):
        d.mkdir()
    (checkout / "pyproject.toml").write_text("")
    (checkout / ".env").write_text("RATE_T_A=checkout\nRATE_T_B=checkout\nRATE_T_C=checkout\n")
    (here / ".env").write_text("RATE_T_B=here\n")
    monkeypatch.setattr(settings, "_CHECKOUT", checkout)
    monkeypatch.chdir(here)
    monkeypatch.setenv("RATE_T_C", "shell")
    for name in ("RATE_T_A", "RATE_T_B"):
        monkeypatch.delenv(name, raising=False)
    try:
        assert load_settings() == [checkout / ".env", here / ".env"]
        assert [os.environ[f"RATE_T_{x}"] for x in "ABC"] == ["checkout", "here", "shell"]
    finally:
        for name in ("RATE_T_A", "RATE_T_B"):
            os.environ.pop(name, None)


def test_a_log_file_that_cannot_be_written_says_so_once(tmp_path, capsys, restore_root_logger):
    setup_logging("INFO", log_file=tmp_path / "run.log")
    handler = next(h for h in logging.getLogger().handlers if isinstance(h, LogFileHandler))

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

    handler.stream = Full()
    for i in range(5):
        logging.getLogger("rate.test").info("line %d", i)
    err = capsys.readouterr().err
    assert "--- Logging error ---" not in err and "Traceback" not in err
    assert err.count("rate: warning: cannot write the log file") == 1
    assert "No space left on device" in err and "line 4" in err


def test_quiet_stages_keep_their_log_file_whole(tmp_path, capsys):
    import logging

    from rate.settings import setup_logging

    log_file = tmp_path / "stage.log"
    setup_logging("INFO", log_file, stderr_level="WARNING")
    logging.getLogger("rate.test").info("an info line")
    logging.getLogger("rate.test").warning("a warning line")
    err = capsys.readouterr().err
    assert "a warning line" in err and "an info line" not in err
    text = log_file.read_text()
    assert "an info line" in text and "a warning line" in text
    setup_logging("INFO")  # back to the default for the other tests
