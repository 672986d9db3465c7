"""One helper makes every folder and gives every file its mode and group (rate.fs, rate.io):
weights included, whatever the umask (issue 45: every ``*.safetensors`` was 0600 under umask
022, and a run folder ignored GROUP_NAME under umask 077)."""

from __future__ import annotations

import ast
import grp
import os
import stat
from pathlib import Path

import pytest

from rate.fs import ensure_dir

SOURCES = Path(__file__).resolve().parents[1] / "src"
# Where folders are made and files given their mode: the helpers themselves.
HELPERS = {SOURCES / "rate" / "fs.py", SOURCES / "rate" / "io.py"}
BYPASSES = {"mkdir", "makedirs", "mkdtemp", "save_file", "save_pretrained", "savetxt"}


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def _bypasses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name in BYPASSES:
                found.append(f"{path.relative_to(SOURCES)}:{node.lineno} {name}")
    return found


def test_no_writer_makes_a_folder_or_a_file_around_the_helpers():
    found = [hit for p in sorted(SOURCES.rglob("*.py")) if p not in HELPERS for hit in _bypasses(p)]
    assert not found, f"use rate.fs.ensure_dir / rate.io writers instead: {found}"


def test_weights_get_the_umask_mode_like_the_files_beside_them(tmp_path, umask):
    from tinyworld.models import save_model
    from tinyworld.policy import Policy, PolicyConfig

    umask(0o022)
    save_model(Policy(PolicyConfig(d_model=8, n_head=2, d_ff=16, n_layer=1)), tmp_path / "p")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "p").iterdir()}
    assert modes == {"policy.safetensors": 0o644, "config.json": 0o644}


def test_weights_and_run_folders_get_group_name_under_a_strict_umask(tmp_path, umask, monkeypatch):
    from tinyworld.models import load_policy, save_model
    from tinyworld.policy import Policy, PolicyConfig

    group = grp.getgrgid(os.getgid())
    monkeypatch.setenv("GROUP_NAME", group.gr_name)
    umask(0o077)
    run = ensure_dir(tmp_path / "runs" / "r1", new=True)
    policy = Policy(PolicyConfig(d_model=8, n_head=2, d_ff=16, n_layer=1))
    save_model(policy, run / "checkpoint")
    for path in (tmp_path / "runs", run, run / "checkpoint", *(run / "checkpoint").iterdir()):
        mode = stat.S_IMODE(path.stat().st_mode)
        want = 0o750 if path.is_dir() else 0o640
        assert (mode, path.stat().st_gid) == (want, group.gr_gid), path
    assert load_policy(run / "checkpoint").config == policy.config
    with pytest.raises(FileExistsError):
        ensure_dir(run, new=True)
