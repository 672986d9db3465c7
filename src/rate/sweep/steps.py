"""A sweep's steps, their markers, and running them here, redoing nothing finished.

Steps: ``rewrite:<dataset>`` (create_dataset, shared by the dataset's cells), then per cell
``score:<dataset>:<scorer>`` and ``effects:<dataset>:<scorer>``, and last ``report``. Each
runs the ordinary stage (:mod:`rate.pipeline`) with the cell's config and, when it ends,
writes its marker ``PROJECT_DIR/sweeps/<name>/steps/<kind>/<dataset>[/<scorer>].json``
atomically: the files it read and wrote, and a hash of the config keys it read.

A step is done when its marker is there, every output it names exists, its inputs are the
outputs its upstream step's marker names now, and its config hash is unchanged; a done step is
skipped (and the log says so). A step killed midway left no marker and is run again; the
stages themselves resume (scoring from its last saved chunk) and never publish half a file.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from rate.config import Config
from rate.errors import DataFileError, RateError
from rate.fs import write_error
from rate.io import atomic_write_json, read_json
from rate.pipeline import create_dataset, score_dataset, treatment_effects
from rate.provenance import MadeFrom, changed, made_from
from rate.store import SMOKE_SUFFIX, Layout
from rate.sweep.grid import STEP_CODE, Cell, Sweep, fingerprint, step_made_from
from rate.sweep.report import write_report

log = logging.getLogger(__name__)

# The stage whose SLURM resources each kind of step asks for.
STAGE_OF = {
    "rewrite": "create_dataset",
    "score": "score_dataset",
    "effects": "treatment_effects",
    "report": "plots",
}


@dataclass(frozen=True)
class Step:
    """One unit of work: its id, kind, the cell (or dataset) it is for, and what it follows."""

    id: str
    kind: str  # rewrite, score, effects or report
    dataset: str | None = None
    cell: Cell | None = None
    after: tuple[str, ...] = ()


def plan(sweep: Sweep) -> list[Step]:
    """Every step of the sweep, each after the steps it reads from."""
    steps: list[Step] = []
    effects = []
    for dataset in sweep.grid.datasets:
        rewrite = f"rewrite:{dataset}"
        steps.append(Step(rewrite, "rewrite", dataset))
        for cell in (c for c in sweep.cells if c.dataset == dataset):
            score = f"score:{dataset}:{cell.scorer}"
            steps.append(Step(score, "score", dataset, cell, (rewrite,)))
            steps.append(
                Step(f"effects:{dataset}:{cell.scorer}", "effects", dataset, cell, (score,))
            )
            effects.append(steps[-1].id)
    steps.append(Step("report", "report", after=tuple(effects)))
    return steps


@dataclass
class State:
    """Where a sweep keeps its markers and report."""

    sweep: Sweep
    layout: Layout
    steps: dict[str, Step] = field(init=False)

    def __post_init__(self) -> None:
        self.steps = {s.id: s for s in plan(self.sweep)}

    @property
    def folder(self) -> Path:
        """``sweeps/<name>``, or ``sweeps/<name>_smoke_test`` for the grid at smoke size (its
        own markers and report, as smoke outputs have their own names)."""
        suffix = SMOKE_SUFFIX if self.sweep.grid.smoke else ""
        return self.layout.root / "sweeps" / f"{self.sweep.name}{suffix}"

    @property
    def report_dir(self) -> Path:
        return self.folder / "report"

    def marker_path(self, step: Step) -> Path:
        parts = step.id.split(":")
        return self.folder / "steps" / parts[0] / Path(*parts[1:-1] or ["."]) / f"{parts[-1]}.json"

    def marker(self, step: Step) -> dict | None:
        path = self.marker_path(step)
        if not path.is_file():
            return None
        try:
            data = read_json(path)
        except DataFileError:
            return None  # unreadable: the step is redone, which rewrites it
        return data if isinstance(data, dict) else None

    def outputs(self, step_id: str) -> list[str] | None:
        """The files a done step's marker names (None when it has none)."""
        marker = self.marker(self.steps[step_id])
        return None if marker is None else list(marker.get("outputs", []))

    def inputs(self, step: Step) -> list[str] | None:
        """What ``step`` reads: its upstream steps' outputs (None while one has no marker)."""
        if step.kind == "report":  # the report is of the cells that are done
            return [p for up in self.done_cells(step) for p in self.outputs(up) or []]
        found: list[str] = []
        for up in step.after:
            outs = self.outputs(up)
            if outs is None:
                return None
            found += outs
        return found

    def done_cells(self, report: Step) -> list[str]:
        """The effects steps (of ``report.after``) that are done."""
        return [u for u in report.after if self.why_not_done(self.steps[u]) is None]

    def config_for(self, step: Step):
        """The cell config of a cell step, its input files pinned."""
        assert step.cell is not None, step
        ins = self.inputs(step) or []
        if step.kind == "score":
            return self.sweep.config(step.cell, dataset_file=Path(ins[0]) if ins else None)
        return self.sweep.config(step.cell, scored_file=Path(ins[0]) if ins else None)

    def _config(self, step: Step) -> Config:
        if step.kind == "rewrite":
            cell = next(c for c in self.sweep.cells if c.dataset == step.dataset)
            return self.sweep.config(cell)
        return self.config_for(step)

    def fingerprint(self, step: Step) -> str:
        return "" if step.kind == "report" else fingerprint(self._config(step), step.kind)

    def made_from(self, step: Step) -> MadeFrom:
        """What ``step`` is made from besides its config and upstream files
        (:func:`step_made_from`)."""
        if step.kind == "report":
            return made_from(code=STEP_CODE["report"])
        return step_made_from(self._config(step), step.kind)

    def why_not_done(self, step: Step) -> str | None:
        """None when ``step`` is done; else why it is to be run."""
        marker = self.marker(step)
        if marker is None:
            return "not run yet"
        missing = [p for p in marker.get("outputs", []) if not Path(p).exists()]
        if missing:
            return f"its output {missing[0]} is missing"
        if marker.get("inputs") != self.inputs(step):
            return "its inputs changed"
        if marker.get("config") != self.fingerprint(step):
            return "its config keys changed"
        before, now = marker.get("made_from"), self.made_from(step)
        if before != now:
            if not isinstance(before, dict):
                return "its marker does not say what it was made from (an older rate wrote it)"
            return f"what it is made from changed: {', '.join(changed(before, now))}"
        return None

    def run(self, step: Step) -> list[str]:
        """Run ``step`` (its upstream steps done) and write its marker; -> its outputs."""
        ins = self.inputs(step)
        if ins is None:
            waiting = [u for u in step.after if self.outputs(u) is None]
            raise RateError(
                f"sweep {self.sweep.name}: step {step.id} reads the output of "
                f"{', '.join(waiting)}, which has not finished; run that step first (or the "
                "whole sweep)"
            )
        made_from_now = self.made_from(step)  # before the work: an edit meanwhile redoes it
        t0 = time.perf_counter()
        if step.kind == "rewrite":
            cell = next(c for c in self.sweep.cells if c.dataset == step.dataset)
            outputs = [create_dataset(self.sweep.config(cell), self.layout)]
        elif step.kind == "score":
            outputs = [score_dataset(self.config_for(step), self.layout)]
        elif step.kind == "effects":
            outputs = [treatment_effects(self.config_for(step), self.layout)]
        else:
            done = self.done_cells(step)
            cells = [self.steps[u].cell for u in done]
            missing = [self.steps[u].cell.label for u in step.after if u not in done]
            effect_files = [Path(self.outputs(u)[0]) for u in done]
            formats = self.sweep.config(self.sweep.cells[0]).plots.formats
            outputs = write_report(
                self.sweep, list(zip(cells, effect_files, strict=True)), missing,
                self.report_dir, formats,
            )  # fmt: skip
        seconds = time.perf_counter() - t0
        atomic_write_json(
            self.marker_path(step),
            {
                "step": step.id,
                "inputs": ins,
                "outputs": [str(p) for p in outputs],
                "config": self.fingerprint(step),
                "made_from": made_from_now,
                "finished": dt.datetime.now().isoformat(timespec="seconds"),
                "seconds": round(seconds, 3),
            },
        )
        log.info("sweep %s: step %s finished in %.1f s", self.sweep.name, step.id, seconds)
        return [str(p) for p in outputs]

    def run_if_needed(self, step: Step) -> bool:
        """Run ``step`` unless it is done; -> whether it ran."""
        why = self.why_not_done(step)
        if why is None:
            log.info(
                "sweep %s: step %s done already (%s); skipped",
                self.sweep.name, step.id, ", ".join(self.outputs(step.id) or []),
            )  # fmt: skip
            return False
        log.info("sweep %s: step %s: running (%s)", self.sweep.name, step.id, why)
        self.run(step)
        return True


@dataclass
class Outcome:
    """What a local run did with each step: ran, skipped, failed or blocked."""

    status: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def run_sweep(state: State) -> Outcome:
    """Every step here, in order; a failed step blocks its cell, the others go on, and the
    report is of the cells that finished. Raises at the end if any step failed."""
    out = Outcome()
    for step in state.steps.values():
        blocked = [u for u in step.after if out.status.get(u) in ("failed", "blocked")]
        if blocked and step.kind != "report":
            out.status[step.id] = "blocked"
            continue
        if step.kind == "report" and len(blocked) == len(step.after):
            out.status[step.id] = "blocked"
            continue
        try:
            out.status[step.id] = "ran" if state.run_if_needed(step) else "skipped"
        except (RateError, OSError) as err:
            if isinstance(err, OSError):  # a full disk, a lost mount: named with its file
                err = write_error(err.filename or state.folder, err)
            log.error("sweep %s: step %s failed: %s", state.sweep.name, step.id, err)
            out.status[step.id] = "failed"
            out.errors[step.id] = str(err)
    return out


def pending(state: State) -> dict[str, str]:
    """{step id: why it is to be run} for every step not done, or after one that is not."""
    todo: dict[str, str] = {}
    for step in state.steps.values():
        ups = [u for u in step.after if u in todo]
        why = state.why_not_done(step)
        if why is None and ups:
            why = f"after {ups[0]}"
        if why is not None:
            todo[step.id] = why
    return todo
