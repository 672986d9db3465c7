"""A sweep as SLURM jobs: one job per step that is not done, chained by afterok (a cell's
scoring after its dataset's rewrite, its effects after its scoring), the report after every
cell. Each job runs ``rate sweep <grid copy> --step ID --config <resolved config>``, reading
the copies in the submission's folder, so a grid or config edited while jobs wait changes
nothing."""

from __future__ import annotations

import logging

import yaml

from rate.io import atomic_write_text
from rate.slurm.jobs import Submitted
from rate.slurm.submit import Submission
from rate.sweep.steps import STAGE_OF, State, pending

log = logging.getLogger(__name__)


def submit_sweep(state: State) -> tuple[Submission, dict[str, Submitted]] | None:
    """Submit the steps still to be run; -> the submission and {step id: its job}, or None
    when every step is done."""
    todo = pending(state)
    if not todo:
        return None
    sweep = state.sweep
    sub = Submission(sweep.base, sweep.set_overrides(), state.layout, f"sweep_{sweep.name}")
    grid_copy = sub.folder / "grid.yaml"
    header = (
        f"# The grid of this submission, copied from {sweep.path} (base config: config.yaml).\n"
    )
    body = yaml.safe_dump(sweep.grid_record(), sort_keys=False, allow_unicode=True)
    atomic_write_text(grid_copy, header + body)
    jobs: dict[str, Submitted] = {}
    for step in state.steps.values():
        if step.id not in todo:
            log.info("sweep %s: step %s done already; not submitted", sweep.name, step.id)
            continue
        after = [jobs[u] for u in step.after if u in jobs]
        jobs[step.id] = sub.submit(
            STAGE_OF[step.kind],
            ["sweep", str(grid_copy), "--step", step.id],
            [("afterok", after)],
            script_name=step.id.replace(":", "__"),
        )
    return sub, jobs
