"""The full worlds the slow tests read, built in child processes beside the tests.

A world's build is mostly one thread (SFT and the reward model train on one; its RL runs take
two), and most tests leave the second core idle, so the session starts each build the
collected tests need as soon as it starts, and a test waits only for what is not done yet.
The builds go one after the other in the order the tests need them: the default world first
(tests/studies), then the variant and the noshortcuts worlds side by side (tests/tinyrlhf).
A world is the same whichever process builds it: every stage is seeded and one-threaded.

RATE_TEST_WORLD (the default), RATE_TEST_WORLD_VARIANT and RATE_TEST_WORLD_NOSHORTCUTS may name
worlds already built instead; each must have been built from the current packaged config.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from rate.schema import to_dict
from tinyworld.evaluate import load_oracle
from tinyworld.worldconfig import load_world_config

# The child's program: the packaged config by name, with only the RL runs named (all if None).
# A thread kills the child's process group once the tests' process is gone (killed before its
# teardown could stop the build), so that no build outlives the session.
_BUILD = """
import dataclasses, json, os, signal, sys, threading, time
from pathlib import Path

def watch(parent=os.getppid()):
    while os.getppid() == parent:
        time.sleep(1.0)
    os.killpg(0, signal.SIGKILL)

threading.Thread(target=watch, daemon=True).start()
from tinyworld.build import build_world
from tinyworld.worldconfig import load_world_config

config = load_world_config(name=sys.argv[1])
runs = json.loads(sys.argv[3])
if runs is not None:
    config = dataclasses.replace(config, runs=[r for r in config.runs if r.name in runs])
build_world(config, Path(sys.argv[2]))
"""


def env_name(name: str) -> str:
    """The variable that may name an already built world of this config."""
    return "RATE_TEST_WORLD" if name == "default" else f"RATE_TEST_WORLD_{name.upper()}"


def given_world(name: str) -> Path | None:
    """The built world the environment names for this config (checked against the packaged
    config), or None."""
    given = os.environ.get(env_name(name))
    if not given:
        return None
    _, built_from = load_oracle(Path(given))
    assert to_dict(built_from) == to_dict(load_world_config(name=name)), (
        f"{given} was built from another config than the packaged {name!r}"
    )
    return Path(given)


class BackgroundBuild:
    """One world built by a child process, started once ``after`` (other builds) are done.

    ``runs``: the RL runs to train (None: the config's all). The validity checks need only
    the reward model, and each run is half a minute of CI."""

    def __init__(
        self,
        name: str,
        out: Path,
        runs: Sequence[str] | None = None,
        after: Sequence[BackgroundBuild] = (),
    ) -> None:
        self.name, self.out = name, out
        self.log_path = out.parent / "build.log"
        self._args = [sys.executable, "-c", _BUILD, name, str(out), json.dumps(runs)]
        self._after = list(after)
        self._proc: subprocess.Popen | None = None
        self._stopped = False
        self._lock = threading.Lock()  # a stop and a start never cross: nothing outlives stop()
        self._starter = threading.Thread(target=self._start, name=f"build {name}", daemon=True)
        self._starter.start()

    def _start(self) -> None:
        for other in self._after:
            other._finished()
        with self._lock:
            if self._stopped:
                return
            self.out.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "w") as log_file:
                # Its own process group: stopping the build stops the RL workers it spawned.
                self._proc = subprocess.Popen(
                    self._args,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "RATE_PROGRESS": "0"},
                    start_new_session=True,
                )

    def _finished(self) -> None:
        self._starter.join()
        if self._proc is not None:
            self._proc.wait()

    def wait(self) -> Path:
        """The built world, once its build is done; a failed build fails the test that waits."""
        self._finished()
        assert self._proc is not None, f"the {self.name} world's build was stopped"
        assert self._proc.returncode == 0, (
            f"the {self.name} world's build failed:\n{self.log_path.read_text()[-3000:]}"
        )
        return self.out

    def stop(self) -> None:
        """Stop the build if it still runs (no test waited for it), or never start it. A build
        waiting for others starts nothing once stopped; stop those too, or it waits on."""
        with self._lock:
            self._stopped = True
            if self._proc is not None and self._proc.poll() is None:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
