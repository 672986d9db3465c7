"""The secret canary: after every test of a module that names its secrets in ``CANARIES``
(the API tests), every captured stream and log of the test, and every file under its tmp
dirs (tmp_path, and the folders its fixtures made: a fixture's value that is a folder, or has
one as an attribute), are searched for each secret; a test that leaked one fails, whatever
it asserted itself. A module's ``CANARY_INPUTS`` names the files (by the end of their path)
that the test itself writes the secret into, its input (a template with a key in its URL).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest


def _folders(item: pytest.Item) -> set[Path]:
    """The test's tmp dirs: folders among its fixtures' values and their attributes, under the
    system's temporary folder (never the checkout)."""
    tmp = Path(tempfile.gettempdir()).resolve()
    values = list(getattr(item, "funcargs", {}).values())
    for value in list(values):
        values += [v for v in vars(value).values()] if hasattr(value, "__dict__") else []
    found = set()
    for value in values:
        if isinstance(value, Path) and value.is_dir() and value.resolve().is_relative_to(tmp):
            found.add(value.resolve())
    # A folder inside another is searched with it.
    return {p for p in found if not any(p != q and p.is_relative_to(q) for q in found)}


def leaks(
    canaries: tuple[str, ...],
    report: pytest.TestReport,
    item: pytest.Item,
    inputs: tuple[str, ...] = (),
) -> list[str]:
    """Where any of ``canaries`` appears: '<section>' for a captured stream or log, or a path
    (but the test's own ``inputs``)."""
    found = []
    for title, text in report.sections:
        found += [f"{title}: {c[:6]}..." for c in canaries if c in text]
    for root in sorted(_folders(item)):
        for path in root.rglob("*"):
            if path.as_posix().endswith(inputs or ("\0",)):
                continue
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found += [f"{path}: {c[:6]}..." for c in canaries if c.encode() in data]
    return found
