"""The canary itself: a secret in a captured stream, in a file of the test's tmp_path or of a
fixture's folder is found; a clean test is not flagged."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.faults import canary

pytestmark = pytest.mark.faults
SECRET = "sk-canary-selftest-31"


def test_the_canary_finds_a_secret_in_a_stream_a_file_and_a_fixture_folder(tmp_path):
    nested, fixture = tmp_path / "p" / "logs", tmp_path / "fixture"
    nested.mkdir(parents=True)
    fixture.mkdir()
    clean = SimpleNamespace(sections=[("Captured stderr call", "all *** here")])
    item = SimpleNamespace(
        funcargs={"tmp_path": tmp_path, "project": SimpleNamespace(root=fixture)}
    )
    assert canary.leaks((SECRET,), clean, item) == []

    (nested / "run.log").write_text(f"Authorization: Bearer {SECRET}")
    (fixture / "out.json").write_bytes(SECRET.encode())
    leaky = SimpleNamespace(sections=[("Captured log call", f"key {SECRET}")])
    found = canary.leaks((SECRET,), leaky, item)
    assert found[0] == "Captured log call: sk-can..."
    assert sorted(found[1:]) == sorted(
        [f"{nested / 'run.log'}: sk-can...", f"{fixture / 'out.json'}: sk-can..."]
    )


def test_the_tests_own_input_is_not_a_leak(tmp_path):
    (tmp_path / "dataset_templates").mkdir()
    (tmp_path / "dataset_templates" / "chatty.yaml").write_text(f"base_url: http://u:{SECRET}@h")
    item = SimpleNamespace(funcargs={"tmp_path": tmp_path})
    report = SimpleNamespace(sections=[])
    assert canary.leaks((SECRET,), report, item, ("dataset_templates/chatty.yaml",)) == []
    assert len(canary.leaks((SECRET,), report, item)) == 1
