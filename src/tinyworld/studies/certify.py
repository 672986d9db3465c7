"""Certification coverage (an acceptance harness: it reads the truth; the certification never
does): many fresh gold sets drawn from the oracle, each certified for every policy, against
each policy's true quality.

Per cell (a policy's family, or its balanced mix): how often our DR interval covers the truth
where it does not abstain, how often it abstains where the true KL to the reference exceeds 5,
and the analyst's plain SNIPS interval (never abstaining) beside it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

from rate.code_digest import code_digest
from rate.errors import BusyError, RateError
from rate.fs import write_error
from rate.io import (
    atomic_write_bytes,
    atomic_write_json,
    json_safe,
    json_text,
    jsonl_writer,
    link_new,
    read_json,
    write_temp,
)
from rate.progress import progress
from rate.provenance import content_digest, folder_lock
from rate.store import git_commit
from tinyworld.certify.certificate import CertifySettings, certify_inputs
from tinyworld.certify.certify import Certifier
from tinyworld.data import LabelledSet, labelled_rows, pool_from_records
from tinyworld.evaluate import TRUTH_FILE, evaluate_policy, load_oracle
from tinyworld.labels import expert_labels
from tinyworld.models import load_policy, load_reward_model
from tinyworld.prompts import balanced, make_prompts
from tinyworld.rl_config import load_reward_wrapper
from tinyworld.sampling import sample
from tinyworld.vocab import FAMILIES

log = logging.getLogger(__name__)

# The gold sets' seeds. The certification's ESS floor and interval were chosen on the sets of
# seeds 10,000-10,059; the study measures on others.
FIRST_SEED = 20_000
FAR_KL = 5.0  # cells this far from the reference must abstain
COVERAGE_GOAL = (0.93, 0.97)
ABSTAIN_GOAL = 0.95
SETS_FILE = "sets.jsonl"  # every gold set's certificates, appended as the study goes


def true_values(world: Path, policy_dir: Path, per_family: int, cache: Path) -> dict:
    """A policy's true quality and KL per family and balanced (cached with what it was made
    of, the folders' contents too, so that a name reused for another policy folder, or a
    policy or world rebuilt in place, is evaluated anew)."""
    made_of = {
        "world": str(world),
        "policy": str(policy_dir),
        "samples_per_family": per_family,
        "code": code_digest(__name__),
        "contents": content_digest(
            paths=[policy_dir, Path(world) / "policy", Path(world) / TRUTH_FILE]
        ),
    }
    if cache.is_file():
        cached = read_json(cache)
        if cached.get("made_of") == made_of:
            return cached
    oracle, _ = load_oracle(world)
    report = evaluate_policy(
        load_policy(policy_dir), oracle, None, load_policy(world / "policy"), per_family
    )
    out = {
        "made_of": made_of,
        "per_family": {
            f: {"quality": r["true_quality"], "kl": r["kl"]}
            for f, r in report["per_family"].items()
        },
        "balanced": {"quality": report["balanced"]["true_quality"]},
    }
    atomic_write_json(cache, out)
    return out


def write_fresh_gold(world: Path, per_family: int, seed: int, out: Path) -> int:
    """Write a fresh gold set (:func:`fresh_gold`) to ``out`` as the world's gold file is
    written, claiming the name (an existing file is never replaced). -> its rows.

    A harness: the oracle labels it, as an expert would label more reference samples when a
    certificate abstains and says how many it needs (:func:`tinyworld.certify.certificate.plan_gold`)."""
    out = Path(out)
    if out.exists():
        raise RateError(f"{out}: exists; choose another --out (a gold set is never replaced)")
    gold = fresh_gold(world, per_family, seed)
    rows = labelled_rows(gold, gold.responses, gold.labels)
    tmp = write_temp(out.parent, out.name, jsonl_writer(rows))
    try:
        if not link_new(tmp, out):
            raise RateError(f"{out}: written meanwhile by another run; choose another --out")
    finally:
        tmp.unlink(missing_ok=True)
    return len(rows)


def fresh_gold(world: Path, per_family: int, seed: int) -> LabelledSet:
    """A gold set as the world's own was made: reference samples labelled by experts."""
    oracle, config = load_oracle(world)
    reference = load_policy(world / "policy")
    gen = torch.Generator().manual_seed(seed)
    prompts = pool_from_records(make_prompts(balanced(per_family), "gold", gen))
    responses = sample(reference, prompts.tokens, 1.0, gen).responses
    labels = expert_labels(oracle, prompts.tokens, responses, config.labels.expert_noise, gen)
    return LabelledSet(
        prompts.records, prompts.tokens, prompts.families, responses=responses, labels=labels
    )


def coverage_study(
    world: Path,
    policies: dict[str, Path],
    out: Path,
    wrapper: Path | None,
    sets: int = 200,
    gold_per_family: int = 100,
    truth_per_family: int = 4000,
    settings: CertifySettings | None = None,
    first_seed: int = FIRST_SEED,
) -> dict:
    """Certify every policy on ``sets`` fresh gold sets; tally coverage and abstention.

    Each gold set's certificates are appended to ``out/sets.jsonl`` as soon as they are made,
    so a study that is stopped resumes from the sets it finished."""
    world, out = Path(world), Path(out)
    with folder_lock(
        out,
        lambda pid: BusyError(
            f"{out}: another coverage study (pid {pid}) is running in this folder; wait for it "
            "to finish (a rerun then resumes from its runs), or choose another --out"
        ),
    ):
        settings = settings or CertifySettings(fresh_per_family=300, replicates=1000)
        start = time.perf_counter()
        loaded = {name: load_policy(p) for name, p in policies.items()}  # fail fast
        header = {
            "world": str(world),
            "wrapper": str(wrapper) if wrapper else None,
            "policies": {name: str(p) for name, p in policies.items()},
            "gold_per_family": gold_per_family,
            "settings": vars(settings),
            # The code that certifies, not the commit: a rerun after a documentation commit
            # resumes; one after a change to the code (committed or not) is another study.
            "code": code_digest(__name__),
            # The contents too: a world rebuilt or a run retrained in the same folder is
            # another study, whose sets must not mix with these.
            "contents": content_digest(
                paths=[
                    world / "policy",
                    world / "reward_model",
                    world / TRUTH_FILE,
                    wrapper,
                    *policies.values(),
                ]
            ),  # fmt: skip
        }
        journal = SetsJournal(out / SETS_FILE, header)
        done = {r["seed"]: r for r in journal.load()}
        truth = {
            name: true_values(world, p, truth_per_family, out / "truth" / f"{name}.json")
            for name, p in policies.items()
        }
        todo = [first_seed + s for s in range(sets) if first_seed + s not in done]
        if done:
            log.info(
                "%s: %d of %d gold sets done before; resuming", journal.path, sets - len(todo), sets
            )
        if todo:
            reference = load_policy(world / "policy")
            rm = load_reward_model(world / "reward_model")
            transform = load_reward_wrapper(wrapper) if wrapper else None
            with journal:
                for seed in progress(todo, desc="gold sets", total=len(todo)):
                    gold = fresh_gold(world, gold_per_family, seed)
                    # The gold set's own passes run once for all the policies.
                    certifier = Certifier(gold, reference, rm, transform, str(wrapper or ""))
                    record = {"seed": seed, "policies": {}}
                    for name, policy in loaded.items():
                        run = CertifySettings(**{**vars(settings), "seed": seed - first_seed})
                        report = certify_inputs(certifier.inputs(policy, run), run)
                        record["policies"][name] = certificate_cells(report)
                    journal.append(record)
                    done[seed] = record
        records = [done[first_seed + s] for s in range(sets)]
        cells = tally(records, truth)
        return {
            "world": str(world),
            "wrapper": str(wrapper) if wrapper else None,
            "sets": sets,
            "first_seed": first_seed,
            "gold_per_family": gold_per_family,
            "settings": vars(settings),
            "cells": cells,
            "summary": summarise(cells),
            "seconds": round(time.perf_counter() - start, 1),
            "commit": git_commit(),
            "code": header["code"],
        }


def certificate_cells(report: dict) -> dict:
    """What the study keeps of one certificate, per cell: abstention, ESS (the smallest
    family's for the balanced mix) and the DR and SNIPS intervals as [estimate, low, high]."""
    rows = {**report["per_family"], "balanced": report["balanced"]}
    return {
        cell: {
            "abstain": bool(row["abstain"]),
            "ess": row["ess"] if cell != "balanced" else row["min_ess"],
            "dr": [row["dr"][k] for k in ("estimate", "low", "high")],
            "snips": [row["snips"][k] for k in ("estimate", "low", "high")],
        }
        for cell, row in rows.items()
    }


def tally(records: list[dict], truth: dict[str, dict]) -> list[dict]:
    """Per cell (a policy's family or balanced mix), over the gold sets' certificates: how
    often it abstained, how often the DR and SNIPS intervals covered the true quality, how
    many DR misses lay below it, and the DR's mean and mean absolute error."""
    cells: dict[str, dict] = {}
    errors: dict[str, list[float]] = {}
    for record in records:
        for name, by_cell in record["policies"].items():
            fams = truth[name]["per_family"]
            for cell, row in by_cell.items():
                balanced_ = cell == "balanced"
                true_q = truth[name]["balanced"]["quality"] if balanced_ else fams[cell]["quality"]
                kl = max(fams[f]["kl"] for f in FAMILIES) if balanced_ else fams[cell]["kl"]
                key = f"{name}/{cell}"
                c = cells.setdefault(
                    key,
                    {"policy": name, "cell": cell, "true_quality": true_q, "true_kl": kl,
                     "sets": 0, "abstained": 0, "dr_covered": 0, "dr_missed_low": 0,
                     "snips_covered": 0},
                )  # fmt: skip
                c["sets"] += 1
                c["snips_covered"] += covers(row["snips"], true_q)
                if row["abstain"]:
                    c["abstained"] += 1
                    continue
                estimate, _, high = row["dr"]
                c["dr_covered"] += covers(row["dr"], true_q)
                # A miss below the truth understates the gain: it can hold a good policy
                # back, never ship a bad one.
                c["dr_missed_low"] += high is not None and high < true_q
                if estimate is not None:
                    errors.setdefault(key, []).append(estimate - true_q)
    for key, c in cells.items():
        e = np.asarray(errors.get(key, []))
        c["dr_mean_error"] = round(float(e.mean()), 4) if e.size else None
        c["dr_mean_abs_error"] = round(float(np.abs(e).mean()), 4) if e.size else None
    return list(cells.values())


def covers(interval: list, value: float) -> bool:
    """Whether [estimate, low, high] holds ``value``; an interval that could not be computed
    (null ends) never does."""
    _, low, high = interval
    return low is not None and high is not None and low <= value <= high


class SetsJournal:
    """The study's certificates, one JSON line per gold set after a header line naming what
    made them: appended and fsynced as each set is done, so that a stopped study resumes.
    Only newline-terminated lines count; a line cut off by a kill is dropped on load."""

    def __init__(self, path: Path, header: dict) -> None:
        self.path, self.header = path, json_safe(header)
        self._file: BinaryIO | None = None

    def load(self) -> list[dict]:
        """The sets done before (none when the file is new); a file made by another study
        (other policies, wrapper, settings or code) is an error, never mixed with this one."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        try:
            header = json.loads(lines[0])
        except ValueError:
            header = None
        if header != self.header:
            raise RateError(
                f"{self.path}: made by another coverage study (other policies, wrapper, "
                "settings, code, or a world or policy rebuilt in place); choose another "
                "--out, or delete the file to start over"
            )
        records = []
        for line in lines[1:-1]:  # the piece after the last newline is incomplete
            try:
                records.append(json.loads(line))
            except ValueError:
                raise RateError(
                    f"{self.path}:{len(records) + 2}: not a complete JSON line; delete the "
                    "file to start the study over"
                ) from None
        if lines[-1]:
            log.warning("%s: dropping a set cut off by an interrupted run", self.path)
            good = len(data) - len(lines[-1])
            try:
                os.truncate(self.path, good)
            except OSError as err:
                raise write_error(self.path, err) from None
        return records

    def __enter__(self) -> SetsJournal:
        if not self.path.is_file():
            atomic_write_bytes(self.path, (json_text(self.header) + "\n").encode())
        try:
            self._file = open(self.path, "ab")  # noqa: SIM115 (closed in __exit__)
        except OSError as err:
            raise write_error(self.path, err) from None
        return self

    def append(self, record: dict) -> None:
        try:
            self._file.write((json_text(record) + "\n").encode())
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as err:
            raise write_error(self.path, err) from None

    def __exit__(self, *exc: object) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()


def summarise(cells: list[dict]) -> dict:
    """Coverage where it answers, abstention where the policy is far, SNIPS everywhere."""
    answered = sum(c["sets"] - c["abstained"] for c in cells)
    covered = sum(c["dr_covered"] for c in cells)
    far = [c for c in cells if c["true_kl"] > FAR_KL]
    far_sets = sum(c["sets"] for c in far)
    far_abstained = sum(c["abstained"] for c in far)
    total = sum(c["sets"] for c in cells)
    near = [c for c in cells if c["true_kl"] <= FAR_KL]
    out = {
        "policies": len({c["policy"] for c in cells}),
        "dr_coverage_where_answered": round(covered / answered, 4) if answered else None,
        "answered_cells": answered,
        "abstention_where_far": round(far_abstained / far_sets, 4) if far_sets else None,
        "far_cells": far_sets,
        "abstention_where_near": round(
            sum(c["abstained"] for c in near) / max(1, sum(c["sets"] for c in near)), 4
        ),
        "snips_coverage_all": round(sum(c["snips_covered"] for c in cells) / total, 4),
        "snips_coverage_near": round(
            sum(c["snips_covered"] for c in near) / max(1, sum(c["sets"] for c in near)), 4
        ),
    }
    cov = out["dr_coverage_where_answered"]
    out["coverage_goal_met"] = cov is not None and COVERAGE_GOAL[0] <= cov <= COVERAGE_GOAL[1]
    out["abstention_goal_met"] = (
        out["abstention_where_far"] is None or out["abstention_where_far"] >= ABSTAIN_GOAL
    )
    return out


def markdown(study: dict) -> str:
    s = study["summary"]
    lines = [
        f"{study['sets']} fresh gold sets of {study['gold_per_family']} per family, "
        f"{s['policies']} policies.",
        "",
        "| | value |",
        "|---|---|",
        f"| DR 95% coverage where it answers (goal 93-97%) | {s['dr_coverage_where_answered']} "
        f"({s['answered_cells']} cells) |",
        f"| abstention where the true KL > {FAR_KL:g} (goal >= 95%) | {s['abstention_where_far']} "
        f"({s['far_cells']} cells) |",
        f"| abstention where the true KL <= {FAR_KL:g} | {s['abstention_where_near']} |",
        f"| the analyst's SNIPS coverage, all cells | {s['snips_coverage_all']} |",
        f"| the analyst's SNIPS coverage, KL <= {FAR_KL:g} | {s['snips_coverage_near']} |",
        "",
        "| policy | cell | true quality | true KL | abstained | DR covered | DR interval below "
        "the truth | SNIPS covered | DR mean error | DR mean abs error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in study["cells"]:
        answered = c["sets"] - c["abstained"]
        lines.append(
            f"| {c['policy']} | {c['cell']} | {c['true_quality']:.3f} | {c['true_kl']:.2f} | "
            f"{c['abstained']}/{c['sets']} | {c['dr_covered']}/{answered} | "
            f"{c['dr_missed_low']} | {c['snips_covered']}/{c['sets']} | "
            f"{c['dr_mean_error']} | {c['dr_mean_abs_error']} |"
        )
    return "\n".join(lines) + "\n"
