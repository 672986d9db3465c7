"""The release study, side by side (an acceptance harness: it reads the truth).

In one world, RL with the reward uncorrected, with the analyst's ridge correction, with ours
(the wrapper `rate world audit` writes) and with the oracle correction (the planted shortcut table),
at two recipes and several seeds; every run is judged by its true quality on the balanced mix
(500 prompts per family), beside the reference. Runs and their evaluations are kept under
``out/``, so a rerun resumes where the last one stopped.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path

from rate.errors import BusyError
from rate.fs import ensure_dir
from rate.io import atomic_write_json, read_json
from rate.parallel import run_jobs
from rate.provenance import check_made_from, folder_lock, made_from
from tinyworld.audit.run import load_inputs, run_audit
from tinyworld.audit.settings import AuditSettings
from tinyworld.audit.wrapper import corrections, tokens_without_positions, write_corrections
from tinyworld.audit_truth import oracle_corrections
from tinyworld.data import build_digest
from tinyworld.evaluate import TRUTH_FILE, evaluate_policy, load_oracle
from tinyworld.models import load_policy, load_reward_model
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config
from tinyworld.vocab import FAMILIES

log = logging.getLogger(__name__)

# The two recipes of the issue: the world's default, and the better one its analyst never tried.
RECIPES: dict[str, dict[str, float | int]] = {
    "R1": {"kl_coef": 0.1, "steps": 800},
    "R2": {"kl_coef": 0.05, "steps": 1200},
}
CORRECTIONS = ("none", "ridge", "ours", "oracle")
# Goals of the side-by-side acceptance.
OURS_WITHIN_ORACLE = 0.02
OURS_OVER_RIDGE = 0.03
FAMILY_FLOOR = -0.03
ORACLE_MIN_GAIN = 0.03  # the oracle's rule: a release must gain this much on the balanced mix
SWEEP_WITHIN_BEST = 0.03  # the sweep's choice, in true quality, against the grid's best


def write_wrappers(world: Path, out: Path) -> dict[str, Path | None]:
    """The three reward wrappers of the study under ``out/wrappers/`` (reused when present):
    ours and the analyst's ridge from one audit of the world, the oracle's from its truth."""
    folder = out / "wrappers"
    paths: dict[str, Path | None] = {"none": None}
    paths.update({c: folder / f"{c}.py" for c in ("ridge", "ours", "oracle")})
    if all(p.is_file() for p in paths.values() if p is not None):
        audit_path = folder / "audit.json"
        if audit_path.is_file() and (old := tokens_without_positions(read_json(audit_path))):
            log.warning(
                "%s: reusing wrappers from an older rate that measured no positions (ours "
                "corrects %s by one excess for all); delete %s and the ours runs to audit again",
                folder, ", ".join(old), folder,
            )  # fmt: skip
        return paths
    ensure_dir(folder)
    audit = run_audit(load_inputs(world), AuditSettings())
    atomic_write_json(folder / "audit.json", audit)
    for method in ("ours", "ridge"):
        write_corrections(corrections(audit, method), paths[method], "the study's audit", method)
    _, config = load_oracle(world)
    write_corrections(oracle_corrections(config), paths["oracle"], "the world's truth", "oracle")
    return paths


def run_cell(
    world: Path,
    run_dir: Path,
    wrapper: Path | None,
    recipe: dict,
    seed: int,
    per_family: int,
) -> dict:
    """Train one run (unless it is finished) and evaluate it against the truth (cached in
    ``run_dir/truth_eval.json``)."""
    cached = run_dir / "truth_eval.json"
    if cached.is_file():
        return read_json(cached)
    config = load_rl_config(Path(world) / "configs" / "default.json")
    config = dataclasses.replace(
        config,
        **recipe,
        seed=seed,
        reward_wrapper=str(wrapper.resolve()) if wrapper else None,
    )
    if not (run_dir / "checkpoint").is_dir():
        train_rl(config, world, run_dir, overwrite=True)
    oracle, world_config = load_oracle(world)
    report = evaluate_policy(
        load_policy(run_dir / "checkpoint"),
        oracle,
        load_reward_model(world / "reward_model"),
        load_policy(world / "policy"),
        per_family,
    )
    atomic_write_json(cached, report)
    return report


def run_release_study(
    world: Path,
    out: Path,
    seeds: list[int],
    recipes: dict[str, dict],
    corrections_: tuple[str, ...] = CORRECTIONS,
    per_family: int = 500,
    jobs: int | None = None,
) -> dict:
    """Every cell of the grid, its summary and the goals' verdicts; ``jobs`` runs at a time
    (default: one per CPU)."""
    world, out = Path(world), Path(out)
    with folder_lock(
        out,
        lambda pid: BusyError(
            f"{out}: another release study (pid {pid}) is running in this folder; wait for it "
            "to finish (a rerun then resumes from its runs), or choose another --out"
        ),
    ):
        # The runs and their evaluations are reused by name: never those of another build of
        # the world (or of its truth) or evaluated on another number of prompts.
        record = made_from(
            world_build=build_digest(world),
            truth=world / TRUTH_FILE,
            recipes=recipes,
            per_family=per_family,
        )
        check_made_from(out, record, "a release study's runs")
        wrappers = write_wrappers(world, out)
        oracle, _ = load_oracle(world)
        ref_path = out / "reference_eval.json"
        if ref_path.is_file():
            reference = read_json(ref_path)
        else:
            ref = load_policy(world / "policy")
            reference = evaluate_policy(ref, oracle, None, None, per_family)
            atomic_write_json(ref_path, reference)
        # Seed by seed, so that a study stopped early has every cell of its first seeds; the
        # runs train ``jobs`` at a time, each on one thread (rate.parallel).
        grid = [
            (seed, recipe_name, correction)
            for seed in seeds
            for recipe_name in recipes
            for correction in corrections_
        ]
        tasks = [
            (
                world,
                out / "runs" / f"{correction}-{recipe_name}-s{seed}",
                wrappers[correction],
                recipes[recipe_name],
                seed,
                per_family,
            )
            for seed, recipe_name, correction in grid
        ]
        reports: dict[int, dict] = {}
        for i, report in run_jobs(run_cell, tasks, jobs):
            log.info("release study: %s done", tasks[i][1].name)
            reports[i] = report
        cells = []
        for i, (seed, recipe_name, correction) in enumerate(grid):
            report = reports[i]
            cells.append(
                {
                    "recipe": recipe_name,
                    "correction": correction,
                    "seed": seed,
                    "run": str(tasks[i][1].relative_to(out)),
                    "balanced": report["balanced"]["true_quality"],
                    "kl": report["balanced"].get("kl"),
                    "per_family": {f: report["per_family"][f]["true_quality"] for f in FAMILIES},
                }
            )
        return {
            "world": str(world),
            "recipes": recipes,
            "seeds": seeds,
            "reference": {
                "balanced": reference["balanced"]["true_quality"],
                "per_family": {f: reference["per_family"][f]["true_quality"] for f in FAMILIES},
            },
            "cells": cells,
            "summary": summarise(cells, reference, recipes, corrections_),
        }


def _mean_sd(values: list[float]) -> tuple[float, float]:
    m = sum(values) / len(values)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0
    return round(m, 4), round(sd, 4)


def summarise(cells: list[dict], reference: dict, recipes: dict, corrections_: tuple) -> dict:
    """Per recipe and correction: the mean and SD over seeds of the balanced true quality, the
    worst family gain over the reference, and the goals."""
    ref = {f: reference["per_family"][f]["true_quality"] for f in FAMILIES}
    out: dict = {}
    for recipe in recipes:
        rows = {}
        for correction in corrections_:
            mine = [c for c in cells if c["recipe"] == recipe and c["correction"] == correction]
            if not mine:
                continue
            mean, sd = _mean_sd([c["balanced"] for c in mine])
            worst = min(c["per_family"][f] - ref[f] for c in mine for f in FAMILIES)
            rows[correction] = {
                "balanced_mean": mean,
                "balanced_sd": sd,
                "worst_family_gain": round(worst, 4),
                "n_seeds": len(mine),
            }
        goals = {}
        if "ours" in rows and "oracle" in rows:
            gap = rows["ours"]["balanced_mean"] - rows["oracle"]["balanced_mean"]
            goals["ours_minus_oracle"] = round(gap, 4)
            goals["ours_within_oracle"] = abs(gap) <= OURS_WITHIN_ORACLE
        if "ours" in rows and "ridge" in rows:
            gain = rows["ours"]["balanced_mean"] - rows["ridge"]["balanced_mean"]
            goals["ours_minus_ridge"] = round(gain, 4)
            goals["ours_over_ridge"] = gain >= OURS_OVER_RIDGE
        if "ours" in rows:
            goals["ours_no_family_below_reference"] = (
                rows["ours"]["worst_family_gain"] >= FAMILY_FLOOR
            )
        out[recipe] = {"rows": rows, "goals": goals}
    return out


def markdown(study: dict) -> str:
    """The side-by-side table of one world."""
    lines = [
        f"Reference: balanced true quality {study['reference']['balanced']:.3f}. "
        f"Seeds {', '.join(map(str, study['seeds']))}.",
        "",
        "| recipe | correction | balanced true quality (mean ± SD) | worst family gain |",
        "|---|---|---|---|",
    ]
    for recipe, block in study["summary"].items():
        r = study["recipes"][recipe]
        for correction, row in block["rows"].items():
            lines.append(
                f"| {recipe} (kl {r['kl_coef']}, {r['steps']} steps) | {correction} | "
                f"{row['balanced_mean']:.3f} ± {row['balanced_sd']:.3f} | "
                f"{row['worst_family_gain']:+.3f} |"
            )
    lines.append("")
    for recipe, block in study["summary"].items():
        goals = ", ".join(f"{k} {v}" for k, v in block["goals"].items())
        lines.append(f"- {recipe}: {goals}")
    return "\n".join(lines) + "\n"


def check_sweep(world: Path, sweep: dict, per_family: int = 500) -> dict:
    """The recipe sweep's choice against the truth: every candidate checkpoint's true balanced
    quality (and worst family gain over the reference), the best of them, and the chosen one."""
    world = Path(world)
    oracle, _ = load_oracle(world)
    reference = evaluate_policy(load_policy(world / "policy"), oracle, None, None, per_family)
    ref = {f: reference["per_family"][f]["true_quality"] for f in FAMILIES}
    rows = []
    for c in sweep["candidates"]:
        report = evaluate_policy(load_policy(Path(c["checkpoint"])), oracle, None, None, per_family)
        rows.append(
            {
                "kl_coef": c["kl_coef"],
                "step": c["step"],
                "decision": c["decision"],
                "certified": c["dr"]["estimate"] if "dr" in c else None,
                "corrected_reward": c.get("corrected_reward"),
                "true_quality": report["balanced"]["true_quality"],
                "worst_family_gain": round(
                    min(report["per_family"][f]["true_quality"] - ref[f] for f in FAMILIES), 4
                ),
            }
        )
    best = max(rows, key=lambda r: r["true_quality"])
    chosen = sweep.get("chosen")
    mine = (
        next(r for r in rows if (r["kl_coef"], r["step"]) == (chosen["kl_coef"], chosen["step"]))
        if chosen
        else None
    )
    return {
        "reference": reference["balanced"]["true_quality"],
        "candidates": rows,
        "best": best,
        "chosen": mine,
        "chosen_within_best": (
            best["true_quality"] - mine["true_quality"] <= SWEEP_WITHIN_BEST if mine else False
        ),
    }


def oracle_verdict(policy: Path, oracle, reference: dict, per_family: int = 500) -> dict:
    """The oracle's rule for one policy: ship when its true balanced gain over the reference is
    >= 0.03 and no family loses more than 0.03 (``reference``: evaluate_policy's report)."""
    report = evaluate_policy(load_policy(Path(policy)), oracle, None, None, per_family)
    gain = report["balanced"]["true_quality"] - reference["balanced"]["true_quality"]
    worst = min(
        report["per_family"][f]["true_quality"] - reference["per_family"][f]["true_quality"]
        for f in FAMILIES
    )
    return {
        "true_quality": report["balanced"]["true_quality"],
        "gain": round(gain, 4),
        "worst_family_gain": round(worst, 4),
        "ship": gain >= ORACLE_MIN_GAIN and worst >= FAMILY_FLOOR,
    }


def check_assessment(world: Path, assessment: dict, per_family: int = 500) -> dict:
    """Every assessed run's decision against the oracle's rule."""
    oracle, _ = load_oracle(world)
    reference = evaluate_policy(load_policy(Path(world) / "policy"), oracle, None, None, per_family)
    rows = []
    for run in assessment["runs"]:
        truth = oracle_verdict(Path(run["policy"]), oracle, reference, per_family)
        rows.append(
            {
                "run": run["run"],
                "decision": run["decision"],
                "ship": run["ship"],
                "oracle_ship": truth["ship"],
                "agrees": run["ship"] == truth["ship"],
                "false_ship": run["ship"] and not truth["ship"],
                **{k: truth[k] for k in ("true_quality", "gain", "worst_family_gain")},
            }
        )
    return {
        "reference": reference["balanced"]["true_quality"],
        "runs": rows,
        "agree": sum(r["agrees"] for r in rows),
        "false_ships": sum(r["false_ship"] for r in rows),
    }
