"""What the fault suite and the scenario matrix share: a project of English reviews that the
four stages run on without the tiny world (rules_en rewrites, VADER scores), real `rate`
processes (started together, killed, stopped), the invariants a project must keep after any
fault, and a tally of what was done."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.factories import SMOKE, english_template
from tests.helpers import ROOT

SHIM = Path(__file__).resolve().parent / "shim"
_STAMPS = re.compile(r"\d{8}_\d{6}(-\d+)?")
FIXED_STAMP = "20260101_120000"
# What the suite did, for the closing summary (tests/conftest.py prints it).
COUNTS: Counter[str] = Counter()

STAGES = ("create_dataset", "score_dataset", "treatment_effects", "plot")
# The folder each stage writes its outputs to, and their extension ("" for plot folders).
OUTPUTS = {
    "create_dataset": ("data/rewrites", ".json"),
    "score_dataset": ("data/scored", ".jsonl"),
    "treatment_effects": ("effects", ".json"),
    "plot": ("plots", ""),
}


def mini_sets(n: int = 40) -> list[str]:
    """--set overrides: dataset 'mini' of ``n`` examples, VADER scores, quick effects."""
    sets = [
        "rewrites.dataset_name=mini",
        f"rewrites.smoke_n_examples={n}",
        "scoring.model=vader",
        "scoring.dataset_name=mini",
        "scoring.chunk_size=4",
        "effects.dataset_name=mini",
        "effects.reward_key=vader",
        "effects.score=vader",
        "effects.group_by=null",
        "effects.n_bootstrap=50",
    ]
    return [x for s in sets for x in ("--set", s)]


@dataclass
class Project:
    """A PROJECT_DIR and the template folder its create_dataset reads."""

    root: Path
    templates: Path
    n: int = 40

    @classmethod
    def make(cls, where: Path, n: int = 40) -> Project:
        templates = where / "templates"
        english_template(templates, "mini", n=n)
        root = where / "project"
        root.mkdir(parents=True, exist_ok=True)
        return cls(root, templates, n)

    def env(self, **extra: str) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [str(SHIM), os.environ.get("PYTHONPATH", "")]))
        return {
            **os.environ,
            "PROJECT_DIR": str(self.root),
            "RATE_TEMPLATE_PATH": str(self.templates),
            "RATE_PROGRESS": "0",
            "PYTHONPATH": path,
            **extra,
        }

    def args(self, stage: str, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "rate.cli",
            stage,
            "--config",
            str(SMOKE),
            *mini_sets(self.n),
            *extra,
        ]

    def start(self, stage: str, *extra: str, **env: str) -> subprocess.Popen:
        COUNTS["runs"] += 1
        return subprocess.Popen(
            self.args(stage, *extra),
            env=self.env(**env),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(
        self, stage: str, *extra: str, timeout: float = 900, **env: str
    ) -> subprocess.CompletedProcess:
        proc = self.start(stage, *extra, **env)
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def outputs(self, stage: str) -> list[Path]:
        """The stage's visible outputs (data files, or plot folders), oldest name first."""
        folder, ext = OUTPUTS[stage]
        d = self.root / folder
        if not d.is_dir():
            return []
        found = []
        for p in sorted(d.iterdir()):
            if p.name.startswith(".") or p.name.endswith(".meta.json") or p.name == "synthetic":
                continue
            if (ext and p.is_file() and p.name.endswith(ext)) or (not ext and p.is_dir()):
                found.append(p)
        return found


def run_together(project: Project, runs: list[tuple[str, list[str]]], **env: str) -> list:
    """Start every (stage, extra args) at once and wait for all; -> completed processes."""
    COUNTS["concurrent_groups"] += 1
    COUNTS["concurrent_runs"] += len(runs)
    procs = [project.start(stage, *extra, **env) for stage, extra in runs]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    """SIGKILL ``proc`` after ``seconds`` unless it ended; -> whether it was killed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            proc.communicate()
            return False
        time.sleep(0.01)
    proc.kill()
    proc.communicate()
    COUNTS["kills"] += 1
    return True


def problems(project: Project) -> list[str]:
    """What a later stage could take for a finished result but is not one: a data file without
    its record, a record that names another file, a data file that does not parse, a plots
    folder left half-filled. Empty when the project is sound."""
    found = []
    for stage in ("create_dataset", "score_dataset", "treatment_effects"):
        for path in project.outputs(stage):
            meta = path.with_name(path.name + ".meta.json")
            if not meta.is_file():
                found.append(f"{path}: no record")
                continue
            try:
                record = json.loads(meta.read_text())
                if path.suffix == ".jsonl":
                    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
                    assert rows and len(rows) == record["n_examples"], "row count"
                else:
                    data = json.loads(path.read_text())
                    if stage == "create_dataset":
                        assert len(data) == record["n_examples"], "example count"
            except (ValueError, KeyError, AssertionError) as err:
                found.append(f"{path}: {err}")
                continue
            if record.get("file") != path.name:
                found.append(f"{path}: its record names {record.get('file')}")
    for folder in project.outputs("plot"):
        names = {p.name for p in folder.iterdir()}
        if not {"effects_summary.md", "effects_normalized.png"} <= names:
            found.append(f"{folder}: a half-filled plots folder ({sorted(names)})")
    return found


def content(path: Path, project: Project) -> object:
    """An output's content, comparable across projects: the project's root and the name of
    the stage's input replaced; a plots folder as its file names and tables."""
    if path.is_dir():
        return {
            p.name: (_STAMPS.sub("<STAMP>", p.read_text()) if p.suffix == ".md" else None)
            for p in sorted(path.iterdir())
        }
    text = _STAMPS.sub("<STAMP>", path.read_text().replace(str(project.root), "<PROJECT>"))
    if path.suffix == ".jsonl":
        return [json.loads(x) for x in text.splitlines() if x.strip()]
    data = json.loads(text)
    if isinstance(data, dict):
        data.pop("dataset_filename", None)
        if isinstance(data.get("input"), dict):
            data["input"].pop("file", None)
    return data
