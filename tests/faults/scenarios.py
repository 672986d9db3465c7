"""What the scenarios of the failure matrix (tests/faults/matrix.py) are made of: the
registry, running `rate` in this process with its streams captured, and the verdicts."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rate import cli
from tests.factories import SMOKE, STAMP, english_template, put
from tests.faults.harness import mini_sets

VERDICTS = ("ok", "defect", "data-loss", "leak", "unclear", "skipped")


@dataclass
class Result:
    rc: int
    out: str
    err: str

    @property
    def last(self) -> str:
        lines = [x for x in self.err.strip().splitlines() if x.strip()]
        return lines[-1] if lines else ""


@dataclass
class Scenario:
    category: str
    what: str
    expected: str
    check: Callable[[Path], tuple[str, str]]  # (verdict, observed)


SCENARIOS: list[Scenario] = []


def scenario(category: str, what: str, expected: str):
    """Register ``check(tmp) -> (verdict, observed)`` as a scenario."""

    def add(check):
        SCENARIOS.append(Scenario(category, what, expected, check))
        return check

    return add


@contextlib.contextmanager
def environment(cwd: Path | None = None, **env: str | None):
    """os.environ and the working folder changed for one in-process run."""
    saved = {k: os.environ.get(k) for k in env}
    old_cwd = Path.cwd()
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_cli(argv: list[str], cwd: Path | None = None, **env: str | None) -> Result:
    """`rate ARGV` in this process, its streams captured; the logging it set up removed."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    before = list(root.handlers)
    with (
        environment(cwd, RATE_PROGRESS="0", **env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            rc = cli.main(argv)
        except SystemExit as exit_:  # argparse
            rc = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException:  # never happens through main(): a bug of the matrix
            rc = 99
            err.write(traceback.format_exc())
    for handler in list(root.handlers):
        if handler not in before:
            root.removeHandler(handler)
            handler.close()
    return Result(rc, out.getvalue(), err.getvalue())


def error(res: Result, *fragments: str) -> tuple[str, str]:
    """The verdict on a run that must fail with one clear line holding ``fragments``."""
    if res.rc == 0:
        return "defect", "succeeded (rc 0)"
    if "Traceback" in res.err:
        return "unclear", "a traceback: " + res.err.strip().splitlines()[-1][:160]
    if not res.last.startswith("rate: error: "):
        return "unclear", f"rc {res.rc}, last line {res.last[:160]!r}"
    missing = [f for f in fragments if f not in res.last]
    if missing:
        return "unclear", f"message lacks {missing}: {res.last[:200]}"
    if len(res.last) > 1500:
        return "unclear", f"a {len(res.last)}-character line"
    return "ok", res.last[13:][:150] + ("..." if len(res.last) > 163 else "")


def passed(condition: bool, observed: str, verdict_if_not: str = "defect") -> tuple[str, str]:
    return ("ok" if condition else verdict_if_not), observed


# -- a project of dataset 'mini' for the in-process scenarios ------------------------------

EFFECTS = f"mini_scored_{STAMP}_smoke_test.jsonl"


def project(tmp: Path, rewrites: object | None = None, scored: list | None = None) -> Path:
    """A project with the mini template, and a rewrites and/or a scored file of dataset mini."""
    english_template(tmp / "templates", "mini", n=12)
    root = tmp / "p"
    root.mkdir(exist_ok=True)
    if rewrites is not None:
        put(root / "data" / "rewrites" / f"mini_{STAMP}_smoke_test.json", rewrites)
    if scored is not None:
        put(root / "data" / "scored" / EFFECTS, scored)
    return root


def rate(tmp: Path, stage: str, *sets: str, config: Path = SMOKE, **env) -> Result:
    args = [
        stage,
        "--config",
        str(config),
        *mini_sets(12),
        *(x for s in sets for x in ("--set", s)),
    ]
    env = {"PROJECT_DIR": str(tmp / "p"), "RATE_TEMPLATE_PATH": str(tmp / "templates"), **env}
    return run_cli(args, **env)


def outside(tmp: Path) -> list[Path]:
    """Files written outside the project and its templates (a path escaped)."""
    return [
        p
        for p in tmp.rglob("*")
        if p.is_file()
        and not p.is_relative_to(tmp / "p")
        and not p.is_relative_to(tmp / "templates")
    ]
