"""The code digest that keys kept results: which modules count, and which edits change it."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from rate import code_digest as cd


def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "rate"
    for name, source in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return pkg


def test_the_closure_follows_every_import_of_the_package_and_no_other(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": (
                "import os\n"
                "from rate.b import f\n"
                "from . import c\n"
                "def g():\n"
                "    from rate.sub.d import h  # inside a function: it counts too\n"
                "    return h\n"
            ),
            "b.py": "import rate.e as e\ndef f():\n    return e\n",
            "c.py": "X = 1\n",
            "e.py": "from .c import X\n",
            "sub/__init__.py": "",
            "sub/d.py": "from .. import c\nfrom ..c import X\n",
            "unused.py": "Y = 2\n",
        },
    )
    found = cd.closure(("rate.a",), pkg)
    assert sorted(found) == [
        "rate",
        "rate.a",
        "rate.b",
        "rate.c",
        "rate.e",
        "rate.sub",
        "rate.sub.d",
    ]
    with pytest.raises(ValueError, match="rate.nope: no such module"):
        cd.closure(("rate.nope",), pkg)
    # A module run as a script is __main__, not the package itself.
    with pytest.raises(ValueError, match="__main__: no such module"):
        cd.closure(("__main__",), pkg)


def test_docstrings_comments_and_layout_do_not_count_and_code_does():
    base = ast.parse(
        '"""Module."""\nclass A:\n    """A."""\n    def f(self):\n        """F."""\n        return 1\n'
    )
    same = ast.parse(
        '"""Another module docstring."""\n\n# a comment\nclass A:\n    """Other."""\n\n'
        "    def f(self):  # why\n        return (\n            1\n        )\n"
    )
    other = ast.parse('"""Module."""\nclass A:\n    def f(self):\n        return 2\n')
    assert cd.normalised(base) == cd.normalised(same)
    assert cd.normalised(base) != cd.normalised(other)
    # A string that is not the first statement is code, not a docstring.
    assert cd.normalised(ast.parse("x = 1\n'kept'\n")) != cd.normalised(ast.parse("x = 1\n"))


def test_an_edit_deep_in_the_real_code_changes_the_assessments_digest(tmp_path):
    # A copy of the package: the estimators are imported by the certifier, which the
    # assessment imports; none of them imports the plots.
    roots = cd.package_roots(("tinyworld.certify.assess",))
    copies = {name: tmp_path / name for name in roots}
    for name, folder in roots.items():
        shutil.copytree(folder, copies[name], ignore=shutil.ignore_patterns("__pycache__"))
    copy = copies["tinyworld"]

    def digest() -> str:
        return cd.digest_of(("tinyworld.certify.assess",), copies)

    found = cd.closure(("tinyworld.certify.assess",), copies)
    assert {
        "tinyworld.certify.estimators",
        "tinyworld.certify.certify",
        "tinyworld.sampling",
    } <= set(found)
    assert not any(name.startswith("rate.plots") for name in found)
    before = digest()
    estimators = copy / "certify" / "estimators.py"
    source = estimators.read_text()
    estimators.write_text(source + "\n# a comment at the end\n")
    assert digest() == before
    (copies["rate"] / "plots" / "figures.py").write_text("BROKEN = True\n")  # not in it
    assert digest() == before
    estimators.write_text(source + "\nEXTRA = 1\n")
    assert digest() != before


def test_the_digest_names_the_numerical_packages_versions(monkeypatch):
    real = cd.digest_of(("tinyworld.certify.assess",))
    assert real == cd.code_digest("tinyworld.certify.assess")  # the cached one is the same
    monkeypatch.setattr(cd, "_version", lambda package: "0.0" if package == "torch" else None)
    assert cd.digest_of(("tinyworld.certify.assess",)) != real
