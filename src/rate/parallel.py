"""Independent torch jobs in worker processes, one thread each.

Every trainer of the tiny world runs torch on one thread (``tinyworld.rl.train_rl``:
with OpenMP's threads sleeping between kernels, a second thread made an RL step slower, not
faster), so a machine's other cores serve other runs: the RL runs of a world build, the
release study and the sweep go to a pool of single-threaded processes, one per CPU
(``BENCHMARKS.md`` times two runs at once against the two in turn). A job computes the same
numbers whichever worker runs it and however many there are, because every job runs on
one thread, in a worker or in this process (``jobs=1``).
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager, suppress
from typing import TypeVar

from rate.cli_args import count

R = TypeVar("R")

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def add_jobs_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--jobs N``: how many of a command's ``what`` run at once."""
    parser.add_argument(
        "--jobs",
        type=count(1024, "processes"),
        help=f"{what} at once, each in its own process on one thread (default: one per CPU); "
        "the results are the same whatever the number",
    )


def default_jobs(n_tasks: int) -> int:
    """As many workers as there are CPUs this process may use, and no more than tasks."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(n_tasks, cpus or 1))


@contextmanager
def single_thread() -> Iterator[None]:
    """torch on one intra-op thread for the block, then as it was."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_IN_WORKER = False


def in_worker() -> bool:
    """Whether this process is one of :func:`run_jobs`' workers, whose CPUs its siblings use."""
    return _IN_WORKER


def _init_worker() -> None:
    """A worker: one torch thread, no progress bars, and it dies with its parent (a killed
    build must not leave runs training into a folder nobody will use)."""
    global _IN_WORKER
    _IN_WORKER = True
    os.environ["RATE_PROGRESS"] = "0"
    if sys.platform.startswith("linux"):  # elsewhere the pool's own shutdown still applies
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    import torch

    torch.set_num_threads(1)


def run_jobs(
    fn: Callable[..., R], tasks: Sequence[tuple], jobs: int | None = None
) -> Iterator[tuple[int, R]]:
    """Yield ``(index, fn(*task))`` for every task (a tuple of arguments) as each finishes,
    ``jobs`` at a time (default: :func:`default_jobs`). ``fn`` must be a module-level function
    and its arguments and results picklable. The first job to raise stops the rest and its
    error is raised here.
    """
    jobs = default_jobs(len(tasks)) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if jobs == 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            with single_thread():
                result = fn(*task)
            yield i, result
        return
    # spawn, not fork: a child forked from a process whose OpenMP pool has run can hang.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker)
    finished = False
    try:
        futures = {pool.submit(fn, *task): i for i, task in enumerate(tasks)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield futures[future], future.result()  # raises the job's own error
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:  # an error, or the caller stopped early: the running jobs are not waited for
            _terminate(pool)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's workers now (a job can run for minutes)."""
    if hasattr(pool, "terminate_workers"):  # Python >= 3.14
        pool.terminate_workers()
        return
    # Before 3.14 there is no API; shutdown() forgets the processes, so take them first.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10)


__all__ = ["add_jobs_argument", "default_jobs", "in_worker", "run_jobs", "single_thread"]
