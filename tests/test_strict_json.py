"""Every JSON that rate or the world writes is strict (RFC 8259): no NaN, no Infinity.

One writer holds the rule (:func:`rate.io.json_text`); the scan below keeps every other
``json.dumps``/``json.dump`` in the sources either strict (``allow_nan=False``) or a digest's
input, which is hashed and never written.
"""

from __future__ import annotations

import ast
import json
import logging
import math
from pathlib import Path

import numpy as np
import pytest

from rate.io import atomic_write_json, json_text, read_jsonl, write_jsonl
from rate.results.table import to_json

SOURCES = Path(__file__).resolve().parents[1] / "src"
HASHERS = {"sha256", "sha1", "md5", "blake2b", "blake2s"}


def _strict(call: ast.Call) -> bool:
    return any(
        k.arg == "allow_nan" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in call.keywords
    )


def _is_json_dump(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"dumps", "dump"}
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "json"
    )


def _hashed(parents: list[ast.AST]) -> bool:
    """Whether a call sits inside a hash function's call (a digest input, never written)."""
    return any(
        isinstance(p, ast.Call)
        and (
            (isinstance(p.func, ast.Attribute) and p.func.attr in HASHERS)
            or (isinstance(p.func, ast.Name) and p.func.id in HASHERS)
        )
        for p in parents
    )


def _loose_dumps(tree: ast.AST) -> list[int]:
    found: list[int] = []

    def walk(node: ast.AST, parents: list[ast.AST]) -> None:
        if _is_json_dump(node) and not _strict(node) and not _hashed(parents):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            walk(child, [*parents, node])

    walk(tree, [])
    return found


def test_every_json_written_in_the_sources_is_strict():
    loose = []
    for path in sorted(SOURCES.rglob("*.py")):
        if path == SOURCES / "rate" / "io.py":  # json_text itself
            continue
        for line in _loose_dumps(ast.parse(path.read_text(), str(path))):
            loose.append(f"{path.relative_to(SOURCES)}:{line}")
    assert not loose, (
        "json.dumps/json.dump without allow_nan=False (use rate.io.json_text, which writes "
        f"non-finite numbers as null): {loose}"
    )


def test_the_scan_finds_a_loose_dump():
    tree = ast.parse(
        "import json, hashlib\n"
        "a = json.dumps(x)\n"
        "b = json.dumps(x, allow_nan=False)\n"
        "c = hashlib.sha256(json.dumps(x).encode())\n"
    )
    assert _loose_dumps(tree) == [2]


def test_json_text_writes_non_finite_numbers_as_null_and_says_so_for_infinities(caplog):
    obj = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": np.float64("inf"), "d": "x"}
    with caplog.at_level(logging.WARNING, logger="rate.io"):
        text = json_text(obj)
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5], "c": None, "d": "x"}
    assert "NaN" not in text and "Infinity" not in text
    assert "3 infinite value(s) written as null" in caplog.text


def test_files_written_as_json_or_jsonl_are_strict(tmp_path):
    atomic_write_json(tmp_path / "a.json", {"x": math.inf})
    write_jsonl(tmp_path / "b.jsonl", [{"y": math.nan}, {"y": 2.0}])
    assert "Infinity" not in (tmp_path / "a.json").read_text()
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": None}
    assert read_jsonl(tmp_path / "b.jsonl") == [{"y": None}, {"y": 2.0}]


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_results_table_as_json_has_no_infinity(bad):
    """Issue 45, item 9: ``rate results --format json`` wrote ``Infinity``."""
    text = to_json([{"file": "f", "ate": bad}])
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
