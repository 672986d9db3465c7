"""The registries: every kind builds what it names, and the layers stay apart."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import rate
from rate.datasets.registry import PERTURBATIONS, RULES, SOURCES
from rate.registry import Kind, Part
from rate.rewrite.backends import REWRITERS
from rate.score.backends import SCORERS

SRC = Path(rate.__file__).parent
REGISTRIES = {
    "sources": SOURCES,
    "rules": RULES,
    "perturbations": PERTURBATIONS,
    "rewriters": REWRITERS,
    "scorers": SCORERS,
}


@pytest.mark.parametrize("registry", sorted(REGISTRIES))
def test_every_kind_names_a_factory_that_exists(registry):
    for name, kind in REGISTRIES[registry].items():
        assert isinstance(kind, Kind), name
        assert dataclasses.is_dataclass(kind.options) and issubclass(kind.options, Part), name
        assert callable(kind.resolve()), f"{registry}.{name}: {kind.factory}"
        assert kind.help, name


def test_a_misspelt_factory_is_a_clear_import_error():
    with pytest.raises(AttributeError):
        Kind(Part, "rate.score.vader:NoSuchScorer").resolve()


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_parser_and_the_registries_never_import_each_other():
    registries = {
        "rate.datasets.registry",
        "rate.rewrite.backends",
        "rate.score.backends",
        "rate.catalog",
    }
    assert imports_of(SRC / "registry.py") & {*registries, "rate.templates"} == set()
    assert imports_of(SRC / "templates.py") & registries == set()


def test_options_modules_stay_light():
    """Parsing a template imports no model or API library: those load with the live object."""
    heavy = {"transformers", "openai", "datasets", "torch.nn"}
    for path in SRC.rglob("options.py"):
        assert {m.split(".")[0] for m in imports_of(path)} & heavy == set(), path
