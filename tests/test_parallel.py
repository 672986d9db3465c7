"""rate.parallel: single-threaded jobs in worker processes that stop with their parent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rate.errors import RateError
from rate.parallel import default_jobs, run_jobs


def square_and_threads(x: int) -> tuple[int, int, int]:
    import torch

    return x * x, torch.get_num_threads(), os.getpid()


def fail_or_sleep(kind: str, path: str) -> int:
    """('fail', _) raises after a moment; ('sleep', pidfile) writes its pid and sleeps."""
    if kind == "fail":
        time.sleep(1.0)  # the sleeper has started by now
        raise RateError("run 'broken': reward_wrapper nope.py does not exist")
    Path(path).write_text(str(os.getpid()))
    time.sleep(120)
    return 0


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_results_arrive_as_each_job_finishes():
    """A progress bar over the jobs moves when one finishes, not when all have."""
    order = [i for i, _ in run_jobs(nap, [(6.0,), (0.0,)], jobs=2)]
    assert order == [1, 0]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child that its parent has not reaped yet is a zombie: gone for our purpose.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def wait_gone(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_task_runs_once_on_one_thread(jobs):
    results = dict(run_jobs(square_and_threads, [(1,), (2,), (3,), (4,), (5,)], jobs))
    assert {i: r[0] for i, r in results.items()} == {0: 1, 1: 4, 2: 9, 3: 16, 4: 25}
    assert {r[1] for r in results.values()} == {1}  # one torch thread, in a worker or here
    pids = {r[2] for r in results.values()}
    if jobs == 1:
        assert pids == {os.getpid()}
    else:
        assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_the_in_process_path_restores_the_thread_count():
    import torch

    before = torch.get_num_threads()
    list(run_jobs(square_and_threads, [(1,), (2,)], jobs=1))
    assert torch.get_num_threads() == before


def test_a_failing_job_raises_its_error_and_stops_the_others(tmp_path):
    pidfile = tmp_path / "sleeper.pid"
    with pytest.raises(RateError, match="run 'broken'"):
        list(run_jobs(fail_or_sleep, [("sleep", str(pidfile)), ("fail", "")], jobs=2))
    sleeper = int(pidfile.read_text())
    assert wait_gone(sleeper), "the other job's worker was left running after the error"


def test_workers_die_with_their_parent(tmp_path):
    """A build killed with SIGKILL must not leave its RL runs training."""
    pidfile = tmp_path / "sleeper.pid"
    script = textwrap.dedent(
        f"""
        from tests.test_parallel import fail_or_sleep
        from rate.parallel import run_jobs
        list(run_jobs(fail_or_sleep, [("sleep", {str(pidfile)!r}), ("sleep", {str(pidfile) + "2"!r})], 2))
        """
    )
    root = Path(__file__).resolve().parents[1]
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=root)
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pidfile.exists(), "the worker never started"
        time.sleep(0.2)  # the pid is written before the file is complete only in theory
        worker = int(pidfile.read_text())
        parent.kill()
        parent.wait()
        assert wait_gone(worker), "a worker outlived its killed parent"
    finally:
        parent.kill()


def test_default_jobs_is_bounded_by_tasks_and_cpus():
    assert default_jobs(1) == 1
    assert 1 <= default_jobs(100) <= (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        list(run_jobs(square_and_threads, [(1,)], jobs=0))


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_jobs_flag_is_one_usage_line(value, capsys):
    import argparse

    from rate.parallel import add_jobs_argument

    parser = argparse.ArgumentParser(prog="rate tinyrlhf build")
    add_jobs_argument(parser, "RL runs trained")
    with pytest.raises(SystemExit):
        parser.parse_args(["--jobs", value])
    err = capsys.readouterr().err.strip().splitlines()
    said = "expected a whole number, got 'two'" if value == "two" else "must be >= 1"
    assert err[-1].startswith(f"rate tinyrlhf build: error: argument --jobs: {said}")
    assert parser.parse_args(["--jobs", "3"]).jobs == 3
