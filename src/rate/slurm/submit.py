"""Submitting stages: one job per stage, sharded scoring as an array plus a merge job.

Every submission gets a folder ``PROJECT_DIR/slurm/<name>_<stamp>/`` holding the resolved
config (``config.yaml``, what every job of the submission reads, so editing the experiment
config while jobs wait in the queue changes nothing), one sbatch script per job, and
``jobs.json`` (job ids, scripts and logs).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path

import yaml

from rate.catalog import load_config
from rate.config import Config
from rate.fs import ensure_dir
from rate.io import atomic_write_json, atomic_write_text
from rate.schema import to_dict
from rate.score.shards import missing_shards
from rate.score.stage import ScoringInput, scoring_input
from rate.slurm.jobs import Submitted, dependency_arg, require, sbatch
from rate.slurm.resources import STAGE_COMMANDS, partition_for, resources_for
from rate.slurm.script import JobScript, render
from rate.store import Layout, timestamp

log = logging.getLogger(__name__)

PIPELINE = ("create_dataset", "score_dataset", "treatment_effects")


class Submission:
    """The jobs of one `rate submit` or `rate pipeline`, sharing one config and folder."""

    def __init__(self, config_path: Path, overrides: list[str], layout: Layout, name: str) -> None:
        self.config: Config = load_config(config_path, overrides)
        self.partition = partition_for(self.config.slurm)
        require("sbatch", self.partition)  # before anything is written
        self.layout = layout
        self.source = " ".join([str(config_path), *(f"--set {o}" for o in overrides)])
        self.folder = _new_folder(layout.root / "slurm", name)
        self.jobs: list[Submitted] = []
        self.config_file = self.folder / "config.yaml"
        self._write_config()

    def _write_config(self) -> None:
        header = f"# The config of this submission, resolved from {self.source}.\n"
        body = yaml.safe_dump(to_dict(self.config), sort_keys=False, allow_unicode=True)
        atomic_write_text(self.config_file, header + body)

    def pin_scoring_input(self) -> ScoringInput:
        """Read the input that scoring's 'latest' names now and fix the config to that file.

        The shards and the merge then all read the same file, whatever is written meanwhile;
        an input that is missing or already scored is an error before anything is queued.
        """
        inp = scoring_input(self.config, self.layout)
        scoring = dataclasses.replace(self.config.scoring, dataset_filename=str(inp.source))
        self.config = dataclasses.replace(self.config, scoring=scoring)
        self._write_config()
        return inp

    def submit(
        self,
        stage: str,
        rate_args: list[str],
        after: list[tuple[str, list[Submitted]]] = (),
        array: list[int] | None = None,
        raw_tail: str = "",
        script_name: str | None = None,
    ) -> Submitted:
        """Write ``stage``'s script (``<script_name or stage>.sbatch``) and sbatch it after the
        jobs in ``after``."""
        job = JobScript(
            stage=stage,
            rate_args=[*rate_args, "--config", str(self.config_file)],
            resources=resources_for(self.config.slurm, stage),
            partition=self.partition,
            logs=self.layout.logs,
            workdir=Path.cwd(),
            project_dir=self.layout.root,
            python=sys.executable,
            array=",".join(map(str, array)) if array is not None else None,
            raw_tail=raw_tail,
            comments=[f"config: {self.source}"],
        )
        script = self.folder / f"{script_name or stage}.sbatch"
        atomic_write_text(script, render(job))
        script.chmod(0o755)
        ensure_dir(self.layout.logs)  # sbatch does not create it
        dependency = dependency_arg((kind, [j.job_id for j in jobs]) for kind, jobs in after)
        job_id = sbatch(script, self.partition, dependency)
        submitted = Submitted(stage, job_id, script, self.layout.logs, array)
        self.jobs.append(submitted)
        atomic_write_json(self.folder / "jobs.json", [j.record() for j in self.jobs])
        log.info("submitted %s as job %s (%s)", stage, job_id, dependency or "no dependency")
        return submitted

    def stage(self, stage: str, after: list[Submitted] = ()) -> list[Submitted]:
        """Submit one stage after ``after`` (afterok); -> its jobs (scoring may make two)."""
        deps = [("afterok", list(after))]
        if stage != "score_dataset":
            return [self.submit(stage, [STAGE_COMMANDS[stage]], deps)]
        # Submitted alone, scoring reads a file that exists now. After create_dataset,
        # 'latest' must wait for the file that job writes.
        inp = None if after else self.pin_scoring_input()
        n = self.config.slurm.shards
        if n == 1:
            return [self.submit("score_dataset", ["score_dataset"], deps)]
        return self._sharded(n, inp, deps)

    def _sharded(
        self, n: int, inp: ScoringInput | None, deps: list[tuple[str, list[Submitted]]]
    ) -> list[Submitted]:
        # A rerun after a failed shard: the shards already scored are not submitted again.
        todo = missing_shards(self.config, self.layout, n, inp) if inp else list(range(n))
        jobs = []
        merge_deps = list(deps)
        if todo:
            if len(todo) < n:
                log.info("shards already scored: %s", sorted(set(range(n)) - set(todo)))
            shards = self.submit(
                "score_dataset",
                ["score_dataset"],
                deps,
                array=todo,
                raw_tail=f'--shard "${{SLURM_ARRAY_TASK_ID}}/{n}"',
            )
            jobs.append(shards)
            # afterany: the merge runs even when a shard failed, and says which one and why.
            merge_deps.append(("afterany", [shards]))
            merge_args = ["merge_scores", "--shards", str(n), "--array-job", shards.job_id]
        else:
            log.info("all %d shards are scored already; submitting only the merge", n)
            merge_args = ["merge_scores", "--shards", str(n)]
        jobs.append(self.submit("merge_scores", merge_args, merge_deps))
        return jobs


def _new_folder(parent: Path, name: str) -> Path:
    """``parent/<name>_<stamp>``, numbered when two submissions share a second."""
    stamp = timestamp()
    ensure_dir(parent)
    folder, seq = parent / f"{name}_{stamp}", 1
    while True:
        try:
            ensure_dir(folder, new=True)  # exclusive: two submissions of one second get two folders
            break
        except FileExistsError:
            seq += 1
            folder = parent / f"{name}_{stamp}-{seq}"
    return folder


def submit_stage(config_path: Path, overrides: list[str], stage: str) -> Submission:
    """`rate submit <stage>`: one stage's job(s)."""
    sub = Submission(config_path, overrides, Layout.from_env(), stage)
    sub.stage(stage)
    return sub


def submit_pipeline(config_path: Path, overrides: list[str]) -> Submission:
    """`rate pipeline`: create_dataset, score_dataset, treatment_effects, chained by afterok."""
    sub = Submission(config_path, overrides, Layout.from_env(), "pipeline")
    after: list[Submitted] = []
    for stage in PIPELINE:
        after = sub.stage(stage, after)[-1:]
    return sub
