"""Ground truth is kept apart: only labelling, building and evaluation may touch it.

The trainers, the dev evaluation and any analysis code must learn from data alone, so neither
the oracle nor the labelling module (which knows the shortcuts) may be imported by them,
directly or through another module; and only the labelling module reads the shortcut tables.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import rate
import tinyworld

# Both packages: the RATE core, and the world (whose truth this guards) with its analysis.
PACKAGES = [Path(rate.__file__).parent, Path(tinyworld.__file__).parent]
SRC = Path(tinyworld.__file__).parent
TRUTH_MODULES = {
    "tinyworld.oracle",
    "tinyworld.labels",
    "tinyworld.evaluate",
    "tinyworld.shortcuts",
    "tinyworld.audit_truth",
    "tinyworld.random_world",  # draws a random world's shortcut table: the truth, from a seed
}
# Modules allowed to import the truth: labelling, the world builder, evaluation and the
# commands that call evaluation.
ALLOWED = {
    "tinyworld.oracle",
    "tinyworld.labels",
    "tinyworld.evaluate",
    "tinyworld.shortcuts",  # truth evaluation: what the RM learned of the planted shortcuts
    "tinyworld.audit_truth",  # checks an audit's flags against the planted shortcuts
    "tinyworld.random_world",
    "tinyworld.build",
    "tinyworld.cli",
    "tinyworld.demo",
    "tinyworld.audit_demo",  # the release story, printed beside the truth
    "benchmarks.world",  # times the truth evaluation
    "tinyworld.scorers",  # the oracle scorer: true quality as a scoring template
    "tinyworld.studies.audit",  # the audit's acceptance study: its flags against the planted truth
    "tinyworld.studies.release",  # the release study: RL runs judged by their true quality
    "tinyworld.studies.certify",  # certification coverage: intervals against the true quality
    "tinyworld.studies.tilt",  # the tilt forecast's acceptance study: against the oracle's pi_beta
    "tinyworld.studies.frontier",  # the best true quality that gold labels can still certify
}
MUST_STAY_BLIND = [
    "tinyworld.rl",
    "tinyworld.rl_config",
    "tinyworld.sft",
    "tinyworld.rm_train",
    "tinyworld.best_of_n",
    "tinyworld.dev_eval",
    "tinyworld.sampling",
    "tinyworld.reports",
    # The RATE pipeline learns the truth only from the scores of the perfect rewrite.
    "tinyworld.rewriter",
    "rate.rewrite.stage",
    "rate.datasets.sources",
    "rate.effects.stage",
    "rate.effects.estimators",
    "rate.effects.bootstrap",
    # The audit is analysis: it sees what an analyst sees, never the planted shortcuts.
    *(f"tinyworld.audit.{m.stem}" for m in (SRC / "audit").glob("*.py") if m.stem != "__init__"),
    # Certification, assessment and the recipe sweep see the gold labels, never the truth.
    *(
        f"tinyworld.certify.{m.stem}"
        for m in (SRC / "certify").glob("*.py")
        if m.stem != "__init__"
    ),
    # The tilt forecast and the tails are analysis too: gold labels, the RM and the reference.
    *(f"tinyworld.tilt.{m.stem}" for m in (SRC / "tilt").glob("*.py") if m.stem != "__init__"),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(next(p.parent for p in PACKAGES if p in path.parents)).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def source_files() -> list[Path]:
    return [path for package in PACKAGES for path in package.rglob("*.py")]


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_only_allowed_modules_import_the_truth():
    offenders = []
    for path in source_files():
        name = module_name(path)
        if name in ALLOWED:
            continue
        if imported_modules(ast.parse(path.read_text())) & TRUTH_MODULES:
            offenders.append(name)
    assert offenders == []


def test_the_scans_cover_both_packages_and_the_analysis_modules():
    """A move of the packages must not leave these scans looking at nothing."""
    names = {module_name(p) for p in source_files()}
    assert {"rate.effects.stage", "tinyworld.rl", "tinyworld.audit.scan"} <= names
    assert {"tinyworld.audit.scan", "tinyworld.certify.assess", "tinyworld.tilt.run"} <= set(
        MUST_STAY_BLIND
    )


def test_trainers_do_not_load_the_truth_even_indirectly():
    code = "import sys\n" + "".join(f"import {m}\n" for m in MUST_STAY_BLIND)
    code += f"print(sorted(set(sys.modules) & set({sorted(TRUTH_MODULES)!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_only_labelling_and_truth_evaluation_read_the_shortcut_tables():
    readers = []
    for path in source_files():
        tree = ast.parse(path.read_text())
        attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        if attrs & {"token_bonus", "pair_premium"}:
            readers.append(module_name(path))
    # The config module defines and validates the tables; labelling uses them to make labels;
    # the truth evaluation reports how often policies write the vendor's marker syllables and
    # measures how much of each planted shortcut the reward model learned.
    assert sorted(readers) == [
        "tinyworld.audit_truth",
        "tinyworld.evaluate",
        "tinyworld.labels",
        "tinyworld.shortcuts",
        "tinyworld.worldconfig",
    ]


# Strings of the analysis code that start like a world config's file name and are not one.
NOT_A_WORLD_CONFIG = {"world_build"}  # the recipe sweep's record of the build it started from


def test_the_analysis_names_no_truth_file_and_no_world_config():
    """Analysis code must not even open the truth by path: no ``truth`` folder, no world config
    (the audit, the tilt forecast, certification, assessment and the recipe sweep;
    test_truth_deleted.py runs each with the truth deleted)."""
    folders = ("audit", "tilt", "certify")
    paths = [path for folder in folders for path in (SRC / folder).glob("*.py")]
    assert {"assess.py", "recipes.py", "certify.py", "scan.py", "forecast.py"} <= {
        p.name for p in paths
    }
    for path in [*paths, SRC / "dev_eval.py", SRC / "best_of_n.py"]:
        strings = [
            n.value
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        ]
        # Docstrings may say what is not read; a path literal may not name it.
        literals = [s for s in strings if "\n" not in s and len(s) < 80]
        named = [s for s in literals if "truth" in s or s.startswith("world_")]
        assert not [s for s in named if s not in NOT_A_WORLD_CONFIG], path.name
