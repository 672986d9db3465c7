"""`rate audit-demo`: the release story on the built tiny world, each step against the truth.

audit (which features the reward model pays for beyond expert quality) -> a reward wrapper
removing them -> corrected RL (kl 0.1, 800 steps) -> certification of the new policy from the
reference's gold labels alone -> assessment of every run (ship or not). Each analysis step sees
only what an analyst sees; this demo then prints it beside the truth (the planted shortcuts, the
true quality), which only a demo and the acceptance harnesses may read. Every step's output is
kept under PROJECT_DIR/audit_demo and reused by a rerun.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from rate.errors import BusyError
from rate.fs import ensure_dir
from rate.io import atomic_write_json, read_json
from rate.provenance import check_made_from, folder_lock, made_from
from rate.settings import project_dir
from tinyworld.audit.run import load_inputs, run_audit
from tinyworld.audit.settings import AuditSettings
from tinyworld.audit.wrapper import tokens_without_positions, write_wrapper
from tinyworld.audit_truth import check_audit
from tinyworld.build import ensure_world
from tinyworld.certify.assess import assess_world
from tinyworld.certify.assess import markdown as assessment_table
from tinyworld.certify.certificate import CertifySettings
from tinyworld.data import build_digest
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config
from tinyworld.studies.release import check_assessment

log = logging.getLogger(__name__)


def run_audit_demo(
    world: Path | None, small: bool, out: Path | None, steps: int | None, per_family: int
) -> int:
    """The story, printed step by step; -> exit status."""
    world = ensure_world(
        world or project_dir() / "tinyrlhf" / ("world_small" if small else "world"), small
    )
    out = ensure_dir(out or project_dir() / "audit_demo")
    busy = lambda pid: BusyError(  # noqa: E731
        f"{out}: another audit demo (pid {pid}) is running in this folder; wait for it to "
        "finish (a rerun then reuses its steps), or choose another --out"
    )
    # Its own lock name: the assessment inside takes the folder's plain lock.
    with folder_lock(out, busy, name=".demo.lock"):
        # The audit and the corrected run are reused by name: never those of another build
        # of the world or another number of steps.
        record = made_from(world_build=build_digest(world), steps=steps)
        check_made_from(out, record, "an audit demo's audit and corrected run")
        return _tell(world, out, steps, per_family)


def _tell(world: Path, out: Path, steps: int | None, per_family: int) -> int:
    print("1. Audit: which features does the reward model pay for beyond expert quality?")
    audit_path = out / "audit.json"
    if audit_path.is_file():
        audit = read_json(audit_path)
        if old := tokens_without_positions(audit):
            log.warning(
                "%s is from an older rate that measured no positions: the wrapper corrects %s "
                "by one excess for all positions; delete %s to audit and train again",
                audit_path, ", ".join(old), out,
            )  # fmt: skip
    else:
        audit = run_audit(load_inputs(world), AuditSettings())
        atomic_write_json(audit_path, audit)
    check = check_audit(audit, world)
    flagged = [f"{r['family']} `{r['feature']}`" for r in audit["candidates"] if r["flagged"]]
    print(f"   flagged: {', '.join(flagged) or 'nothing'}")
    print(
        f"   truth: {len(check['planted'])} planted, {len(check['missed'])} missed, "
        f"{len(check['false_flags'])} false flags; AUC {check['auc']['intervention']:.3f}"
    )

    print("2. Correction: a reward wrapper removing each flagged feature's excess")
    wrapper = out / "wrapper.py"
    table = write_wrapper(audit, wrapper, str(audit_path))
    for line in correction_lines(table):
        print(line)

    print("3. Corrected RL (kl 0.1, the world's default recipe)")
    run = out / "corrected-run"
    config = load_rl_config(world / "configs" / "default.json")
    config = dataclasses.replace(
        config, reward_wrapper=str(wrapper.resolve()), **({"steps": steps} if steps else {})
    )
    if not (run / "checkpoint").is_dir():
        train_rl(config, world, run, overwrite=True)
    print(f"   {run}/checkpoint ({config.steps} steps)")

    print("4-5. Certification from gold alone, and the assessment of every run:")
    settings = CertifySettings(fresh_per_family=min(500, per_family))
    # Written to out/assessment.json and .md; a rerun reuses the certificates of unchanged runs.
    assessment = assess_world(
        world, audit, wrapper, {"corrected": run / "checkpoint"}, settings, out=out
    )
    print(assessment_table(assessment), end="")

    print("6. Against the truth (true quality on the balanced mix, the oracle's rule: gain "
          ">= 0.03 and no family below the reference by more than 0.03):")  # fmt: skip
    truth = check_assessment(world, assessment, per_family)
    print(f"   reference: {truth['reference']:.3f}")
    for row, mine in zip(truth["runs"], assessment["runs"], strict=True):
        print(
            f"   {row['run']}: true {row['true_quality']:.3f} (gain {row['gain']:+.3f}, worst "
            f"family {row['worst_family_gain']:+.3f}); certified "
            f"{mine['balanced_dr']['estimate']:.3f}; {'ship' if row['ship'] else row['decision']}"
            f" / oracle says {'ship' if row['oracle_ship'] else 'no'}"
        )
    print(
        f"   the assessment agrees with the oracle's rule on {truth['agree']} of "
        f"{len(truth['runs'])} ({truth['false_ships']} false ship)"
    )
    return 0


def correction_lines(table: dict) -> list[str]:
    """One line per family of a wrapper's corrections: per occurrence (by position), and per
    cell."""
    lines = []
    for fam, parts in table.items():
        items = [f"{k} {-v:+.3f}" for k, v in {**parts["tokens"], **parts["pairs"]}.items()]
        for token, at in parts.get("positions", {}).items():
            items.append(f"{token} {-max(at):+.3f} to {-min(at):+.3f} by position")
        for pair, cells in parts.get("complexes", {}).items():
            top = max(cells, key=cells.get)
            items.append(f"{pair} per cell ({len(cells)} cells, up to -{cells[top]:.3f} at {top})")
        lines.append(f"   {fam}: {', '.join(items)}")
    return lines
