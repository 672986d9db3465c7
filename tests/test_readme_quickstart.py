"""The README's "Five minutes with your own data", run verbatim: its data, template and config
written where its text says, its commands run as a new user would type them, in a folder of
their own. A change that breaks the quickstart fails here, not in a reader's terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
NAMED = re.compile(r"`([\w./-]+\.(?:jsonl|yaml))`")


def quickstart() -> tuple[dict[str, str], str]:
    """-> the files the quickstart writes (its name for each, from the text before the block)
    and its shell commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = text.split("[start:quickstart]", 1)[1].split("[end:quickstart]", 1)[0]
    files, commands, start = {}, "", 0
    for block in BLOCK.finditer(text):
        lang, body = block.groups()
        if lang == "bash":
            commands += body
        else:
            names = NAMED.findall(text[start : block.start()])
            assert names, f"the README's {lang} block at {block.start()} names no file before it"
            files[names[-1]] = body
        start = block.end()
    return files, commands


@pytest.mark.timeout(600)
def test_the_readme_quickstart_runs_verbatim_and_reaches_plots(tmp_path):
    files, commands = quickstart()
    assert set(files) == {"reviews.jsonl", "dataset_templates/hotel_sentiment.yaml", "hotel.yaml"}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    env = {k: v for k, v in os.environ.items() if k not in ("PROJECT_DIR", "RATE_CONFIG")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the venv's `rate`
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plots = tmp_path / "rate_data" / "plots"
    assert list(plots.rglob("*.png")), f"no figure under {plots}: {sorted(plots.rglob('*'))}"
    assert "hotel_sentiment" in done.stdout  # `rate results` lists the effect file
