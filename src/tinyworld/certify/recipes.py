"""`rate world recipe-sweep`: choose an RL recipe, and certify the choice on gold held out from
everything that chose it.

RL over a grid of kl_coef x steps (one run per kl_coef, checkpoints every ``save_every`` steps).
Two ways to choose (:func:`recipe_sweep`): without reading a label (the default; the whole gold
set then certifies the choice), or by certification on a selection half of the gold set (the
other half certifies the choice).

The checkpoints that gain most are those that moved furthest, just inside the edge of what the
gold set can certify; a coarse grid of kl_coef can step over that edge. ``refine`` adds runs
there: the geometric midpoint between the kl_coef of the current choice and the next smaller
one tried, as many times as asked. It reads what chose the checkpoints anyway (the screen, or
the selection half), so the choice stays held out from the gold that certifies it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rate.errors import BusyError, ConfigError
from rate.filesets import write_set
from rate.io import json_safe, read_json
from rate.parallel import run_jobs
from rate.progress import progress
from rate.provenance import check_made_from, folder_lock, keep, made_from, read_kept
from tinyworld.certify.certificate import CertifySettings
from tinyworld.certify.certify import Certifier, certifier_digest, load_gold
from tinyworld.certify.estimators import abstains, ess
from tinyworld.data import LabelledSet, build_digest
from tinyworld.models import load_policy
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config
from tinyworld.vocab import FAMILIES

log = logging.getLogger(__name__)

# Where a sweep keeps each checkpoint's screen and its final certificate for a rerun (keyed on
# the code too: results kept by other code are computed anew).
SCREENED = "screened"


def split_gold(families: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the selection and report halves, each half of every family."""
    rng = np.random.default_rng([seed, 0x5E1E])
    select, report = [], []
    for f in range(len(FAMILIES)):
        rows = rng.permutation(np.flatnonzero(families == f))
        select.extend(rows[: len(rows) // 2])
        report.extend(rows[len(rows) // 2 :])
    return np.sort(select), np.sort(report)


def checkpoints_of(run: Path) -> dict[int, Path]:
    """Step -> checkpoint directory of a finished run (its step_* checkpoints and the last)."""
    out = {
        int(p.name.removeprefix("step_")): p for p in sorted((run / "checkpoints").glob("step_*"))
    }
    final = read_json(run / "checkpoint" / "config.json").get("step")
    out[int(final) if final else max(out, default=0) + 1] = run / "checkpoint"
    return out


SELECTIONS = ("label-free", "split")
QUALIFIES = {"label-free": "certifiable", "split": "ship"}  # a candidate's decision that counts


def refined_kl(candidates: list[dict], selection: str) -> float | None:
    """The kl_coef to try next: the geometric midpoint (3 significant digits) between the
    kl_coef of the current choice (:func:`choose`) and the next smaller one tried, where the
    checkpoints that gain more than the choice stop qualifying; the plain midpoint when that
    one is 0. When nothing smaller was tried: half the choice's kl_coef if the choice is its
    run's last checkpoint (the run stays inside the floors to its end, so the edge lies
    below), else the midpoint to the next larger one tried (the run leaves the floors after
    the choice; a little more penalty keeps a run inside them for longer). None when nothing
    qualifies, the choice's run leaves the floors and no larger kl_coef was tried, or the
    midpoint was tried already.

    Why the choice's kl_coef and not the smallest with any qualifying checkpoint: a run whose
    first checkpoint qualifies and whose later ones drift past the floors has that smallest
    kl_coef, yet the better checkpoints lie above it (with 6,400 gold rows per family, kl 0.03
    qualified at step 200 only, and the choice was kl 0.05 at step 1,200; nothing between them
    was tried). Why above when nothing was tried below: with 25,600 rows per family and RL
    seed 1, the variant world's grid chose kl 0.03 at step 400 (true 0.533) and stopped
    there; the sweeps of seed 0 found 0.548-0.551 at kl 0.032-0.0341
    (experiments/release/README.md)."""
    chosen, _ = choose(candidates, selection)
    if chosen is None:
        return None
    edge = chosen["kl_coef"]
    tried = {c["kl_coef"] for c in candidates}
    below = [k for k in tried if k < edge]
    above = [k for k in tried if k > edge]
    last_step = max(c["step"] for c in candidates if c["kl_coef"] == edge)
    if below:
        nearest = max(below)
    elif chosen["step"] < last_step:
        if not above:
            return None  # one kl_coef, left after the choice: no side to refine toward
        nearest = min(above)
    else:
        nearest = 0.0
    mid = (edge * nearest) ** 0.5 if nearest > 0 else edge / 2
    mid = float(f"{mid:.3g}")
    return None if mid in tried or not min(nearest, edge) < mid < max(nearest, edge) else mid


def label_free_screen(
    world: Path,
    policy_dir: Path,
    wrapper: Path | None,
    settings: CertifySettings,
    gold: LabelledSet | None = None,
) -> dict:
    """:func:`screen` of the checkpoint at ``policy_dir`` against ``gold`` (default: the
    world's gold set)."""
    gold = gold if gold is not None else load_gold(world)
    return screen(Certifier.load(world, wrapper, gold), policy_dir, settings)


def screen(certifier: Certifier, policy_dir: Path, settings: CertifySettings) -> dict:
    """What can be known of a checkpoint before any gold label is read: whether the weights of
    the certifier's gold responses could support a certificate (ESS and KL per family, by the
    certification's abstention rule) and the corrected reward of its fresh samples on the
    balanced mix. The labels are never looked at."""
    inputs = certifier.inputs(load_policy(Path(policy_dir)), settings)
    reasons, ess_values = [], []
    for fam, x in inputs.items():  # x.y (the labels) is not read
        value = ess(x.log_w)
        ess_values.append(value)
        why = abstains(value, len(x.log_w), float(x.log_w_kl.mean()), settings.ess_min,
                       settings.support_min)  # fmt: skip
        if why:
            reasons.append(f"{fam}: {why}")
    reward = float(np.mean([x.s_fresh.mean() for x in inputs.values()]))
    return {
        "decision": "abstain" if reasons else "certifiable",
        "reasons": reasons,
        "corrected_reward": round(reward, 6),
        "min_ess": round(min(ess_values), 2),
    }


def recipe_sweep(
    world: Path,
    out: Path,
    kl_coefs: list[float],
    steps: int,
    save_every: int,
    wrapper: Path | None,
    seed: int = 0,
    settings: CertifySettings | None = None,
    selection: str = "label-free",
    jobs: int | None = None,
    refine: int = 0,
    gold_path: Path | None = None,
) -> dict:
    """Train (or reuse) one run per kl_coef under ``out/`` (``jobs`` at a time), screen or
    certify every checkpoint, choose one and certify it on gold that nothing that chose it has
    seen.

    ``label-free``: the choice is the highest corrected reward on fresh samples among the
    checkpoints whose weights could support a certificate, which reads no label, so the whole
    gold set certifies it. ``split``: every checkpoint is certified on a selection half of the
    gold set, the best lower bound among those passing the guardrails wins, and the other half
    certifies it (each half has half the ESS, which the tiny world's 100 labels per family
    cannot spare: nothing passed on a half in the default world's sweep).

    ``refine``: at most that many more runs, each at :func:`refined_kl` of what was screened:
    below the current choice.
    ``gold_path``: the gold labels (default: the world's gold set); a larger set of labelled
    reference samples moves the edge of what can be certified.
    """
    if selection not in SELECTIONS:
        raise ConfigError(f"--selection: one of {', '.join(SELECTIONS)}, got {selection!r}")
    world, out = Path(world), Path(out)
    busy = lambda pid: BusyError(  # noqa: E731
        f"{out}: another sweep (pid {pid}) is running in this folder; wait for it to finish "
        "(a rerun then resumes from its runs), or choose another --out"
    )
    # Loaded once, before the folder is claimed: a bad gold file stops the sweep with nothing
    # written, and every screen reads the same set without parsing it again.
    gold = load_gold(world, gold_path)
    with folder_lock(out, busy):
        # The runs are reused by name: never those trained from another build of the world,
        # another wrapper or another seed.
        runs_made_from = made_from(
            world_build=build_digest(world),
            wrapper=wrapper if wrapper is None else Path(wrapper),
            seed=seed,
            save_every=save_every,
        )
        check_made_from(out, runs_made_from, "a sweep's runs")
        settings = settings or CertifySettings()
        # One certifier for every screen and the final certificate: the gold set's own passes
        # (the reference's log-probabilities, the corrected reward) run once, not per checkpoint.
        certifier = Certifier.load(world, wrapper, gold)
        if selection == "split":
            select, report_rows = split_gold(gold.families.numpy(), seed)
            selector, reporter = certifier.subset(select), certifier.subset(report_rows)
        else:
            select, report_rows = None, np.arange(len(gold.labels))
            selector, reporter = None, certifier
        # The runs train first, ``jobs`` at a time, each on one thread (rate.parallel).
        tasks = [(world, out, kl, steps, save_every, wrapper, seed) for kl in kl_coefs]
        runs = dict(run_jobs(train_once, tasks, jobs))

        # Each checkpoint's screen is kept under out/screened with a digest of its inputs,
        # so that a rerun (after a kill, or to refine further) screens only what is new.
        certifier_key = certifier_digest(world, wrapper, gold_path)

        def kept_or(
            kind: str, kl: float, step: int, path: Path, compute: Callable[[], dict]
        ) -> dict:
            made = made_from(
                code=__name__, settings=dataclasses.asdict(settings), checkpoint=path,
                screen=[kind, selection, seed], certifier=certifier_key,
            )  # fmt: skip
            where = out / SCREENED / f"{kind}-{run_name(kl, steps)}-{step}.json"
            value = read_kept(where, made)
            if value is None:
                value = compute()
                keep(where, made, value)
            return value

        def screened(path: Path) -> dict:
            if selector is None:
                return screen(certifier, path, settings)
            cert = selector.certify(path, settings)
            b = cert["balanced"]
            return {
                "decision": cert["verdict"]["decision"],
                "reasons": cert["verdict"]["reasons"],
                "dr": b["dr"],
                "dr_gain": b["dr_gain"],
                "min_ess": b["min_ess"],
            }

        def screen_run(kl: float, run: Path) -> list[dict]:
            rows = []
            checkpoints = checkpoints_of(run)
            what = "screening" if selector is None else "certifying"
            for step, path in progress(checkpoints.items(), f"{what} {run.name}", len(checkpoints)):
                row = {"kl_coef": kl, "step": step, "checkpoint": str(path)}
                row.update(kept_or("screen", kl, step, path, lambda path=path: screened(path)))
                rows.append(row)
            return rows

        candidates = [row for i, kl in enumerate(kl_coefs) for row in screen_run(kl, runs[i])]
        refined = []
        for _ in range(refine):
            kl = refined_kl(candidates, selection)
            if kl is None:
                break
            log.info("sweep: refining at kl_coef %g, by the edge of what can be certified", kl)
            refined.append(kl)
            task = (world, out, kl, steps, save_every, wrapper, seed)
            candidates += screen_run(kl, dict(run_jobs(train_once, [task], 1))[0])
        candidates.sort(key=lambda c: (-c["kl_coef"], c["step"]))
        chosen, uncertified = choose(candidates, selection)
        result = {
            "world": str(world),
            "kl_coefs": kl_coefs,
            "refined": refined,
            "steps": steps,
            "save_every": save_every,
            "seed": seed,
            "wrapper": str(wrapper) if wrapper else None,
            "selection": selection,
            "gold": str(gold_path) if gold_path else None,
            "gold_split": {
                "selection": 0 if select is None else len(select),
                "report": len(report_rows),
            },  # fmt: skip
            "candidates": candidates,
            "chosen": chosen,
            "best_uncertified": None if chosen else uncertified,
        }
        if chosen is not None:

            def report() -> dict:
                held_out = reporter.certify(Path(chosen["checkpoint"]), settings)
                return {
                    "balanced": held_out["balanced"],
                    "verdict": held_out["verdict"],
                    "per_family": {
                        f: {"dr": r["dr"], "dr_gain": r["dr_gain"], "ess": r["ess"]}
                        for f, r in held_out["per_family"].items()
                    },
                }

            result["held_out"] = kept_or(
                "report", chosen["kl_coef"], chosen["step"], Path(chosen["checkpoint"]), report
            )
        # Both inside the lock: a sweep started as this one ends never pairs its .md with
        # this .json.
        write_set(
            out / "sweep.json",
            json_safe(result),
            {out / "sweep.md": markdown(result).encode("utf-8")},
        )
        return result


def run_name(kl: float, steps: int) -> str:
    """The folder of the sweep's run at ``kl``."""
    return f"kl{kl:g}-s{steps}"


def train_once(
    world: Path, out: Path, kl: float, steps: int, save_every: int, wrapper: Path | None, seed: int
) -> Path:
    """The sweep's run at ``kl``, trained unless it is finished."""
    run = out / run_name(kl, steps)
    if not (run / "checkpoint").is_dir():
        base = load_rl_config(world / "configs" / "default.json")
        config = dataclasses.replace(
            base,
            kl_coef=kl,
            steps=steps,
            save_every=save_every,
            seed=seed,
            reward_wrapper=str(Path(wrapper).resolve()) if wrapper else None,
        )
        log.info("sweep: training %s", run.name)
        train_rl(config, world, run, overwrite=True)
    return run


def choose(candidates: list[dict], selection: str) -> tuple[dict | None, dict | None]:
    """(the choice, or None; the best candidate when none qualifies, which is not certified)."""
    qualifies = QUALIFIES[selection]
    if selection == "label-free":
        rank = best = lambda c: c["corrected_reward"]  # noqa: E731
    else:
        rank = lambda c: c["dr"]["low"]  # noqa: E731
        best = lambda c: c["dr"]["estimate"]  # noqa: E731
    passing = [c for c in candidates if c["decision"] == qualifies]
    if passing:
        return max(passing, key=rank), None
    # When no checkpoint qualifies, the best one is still worth a look, but it is not a
    # certified choice: the weights could not back it.
    return None, max(candidates, key=best) if candidates else None


def markdown(result: dict) -> str:
    label_free = result.get("selection", "split") == "label-free"
    if label_free:
        lines = [
            "| kl_coef | step | screen (no label read) | corrected reward, fresh samples | "
            "min ESS |",
            "|---|---|---|---|---|",
        ]
    else:
        lines = [
            "| kl_coef | step | decision (selection half) | balanced DR [95%] | min ESS |",
            "|---|---|---|---|---|",
        ]
    for c in result["candidates"]:
        mark = " ← chosen" if result["chosen"] == c else ""
        if label_free:
            value = f"{c['corrected_reward']:.3f}"
        else:
            d = c["dr"]
            value = f"{d['estimate']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"
        lines.append(
            f"| {c['kl_coef']:g} | {c['step']} | {c['decision']}{mark} | {value} | "
            f"{c['min_ess']:.1f} |"
        )
    if result.get("refined"):
        kls = ", ".join(f"{k:g}" for k in result["refined"])
        lines += ["", f"Runs added at the edge of what can be certified (--refine): kl_coef {kls}."]
    if result["chosen"] is None:
        what = (
            "could support a certificate"
            if label_free
            else "passed the guardrails on the selection half"
        )
        lines += ["", f"No checkpoint {what}: nothing chosen."]
        best = result.get("best_uncertified")
        if best:
            value = (
                f"corrected reward {best['corrected_reward']:.3f}"
                if label_free
                else f"{best['dr']['estimate']:.3f}"
            )
            lines.append(
                f"The highest, not certified: kl_coef {best['kl_coef']:g}, step "
                f"{best['step']} ({value}; min ESS {best['min_ess']:.1f}). "
                "More gold labels in the families that abstain would let it be certified."
            )
    else:
        h = result["held_out"]["balanced"]
        where = "On the whole gold set" if label_free else "On the held-out half"
        rows = result["gold_split"]["report"]
        where += f" ({rows} rows{'; no label chose it' if label_free else ''})"
        lines += [
            "",
            f"Chosen: kl_coef {result['chosen']['kl_coef']:g}, step {result['chosen']['step']}. "
            f"{where}: balanced quality {h['dr']['estimate']:.3f} "
            f"[{h['dr']['low']:.3f}, {h['dr']['high']:.3f}], gain {h['dr_gain']['estimate']:+.3f}, "
            f"verdict {result['held_out']['verdict']['decision']}.",
        ]
    return "\n".join(lines) + "\n"
