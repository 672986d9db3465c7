"""Two runs that need the same world at once build it once (issue 45: two demos started
together on an empty PROJECT_DIR both built the world, and the loser said "already exists;
remove it", advice that would destroy the winner's work)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENSURE = """
import dataclasses, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO)
from tinyworld.build import ensure_world
from tinyworld.worldconfig import load_world_config
config = dataclasses.replace(load_world_config(small=True), runs=[])
ensure_world(Path(sys.argv[1]), config=config)
"""


def test_two_runs_needing_one_world_build_it_once(tmp_path):
    world = tmp_path / "tinyrlhf" / "world"
    env = {**os.environ, "RATE_PROGRESS": "0", "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", ENSURE, str(world)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    outs = [r.communicate(timeout=600) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], [o[1][-2000:] for o in outs]
    logs = [o[1] for o in outs]
    assert sum("building the tiny RLHF world" in text for text in logs) == 1, logs
    assert sum("reusing the world" in text for text in logs) == 1, logs
    assert (world / "world_info.json").is_file()
    assert not [p.name for p in world.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_second_build_of_one_folder_is_refused_while_the_first_runs(tmp_path):
    from rate.errors import BusyError
    from tinyworld.build import build_lock

    world = tmp_path / "w"
    with build_lock(world):
        try:
            with build_lock(world):
                raise AssertionError("two builds held one world's lock")
        except BusyError as err:
            assert f"another run (pid {os.getpid()}) is building this world" in str(err)
