"""`rate tinyrlhf sweep`: choose an RL recipe by certification, with gold held out.

RL over a grid of kl_coef x steps (one run per kl_coef, checkpoints every ``save_every`` steps),
every checkpoint certified on the *selection* half of the gold set, the winner chosen by the
certified lower bound of its balanced quality among the checkpoints that pass the guardrails,
and the winner alone certified again on the *report* half, which nothing that chose it has seen.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np

from rate.certify.certify import CertifySettings, certify_policy, load_gold
from rate.errors import BusyError
from rate.io import atomic_write_json, folder_lock, read_json
from rate.tinyrlhf.rl import load_rl_config, train_rl
from rate.tinyrlhf.vocab import FAMILIES

log = logging.getLogger(__name__)


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


def recipe_sweep(
    world: Path,
    out: Path,
    kl_coefs: list[float],
    steps: int,
    save_every: int,
    wrapper: Path | None,
    seed: int = 0,
    settings: CertifySettings | None = None,
) -> dict:
    """Train (or reuse) one run per kl_coef under ``out/``, certify every checkpoint, choose."""
    world, out = Path(world), Path(out)
    with folder_lock(
        out,
        lambda pid: BusyError(
            f"{out}: another sweep (pid {pid}) is running in this folder; wait for it "
            "to finish (a rerun then resumes from its runs), or choose another --out"
        ),
    ):
        settings = settings or CertifySettings()
        gold = load_gold(world)
        select, report_rows = split_gold(gold.families.numpy(), seed)
        base = load_rl_config(world / "configs" / "default.json")
        candidates = []
        for kl in kl_coefs:
            run = out / f"kl{kl:g}-s{steps}"
            if not (run / "checkpoint").is_dir():
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
            for step, path in checkpoints_of(run).items():
                cert = certify_policy(world, path, wrapper, settings=settings, gold_rows=select)
                b = cert["balanced"]
                candidates.append(
                    {
                        "kl_coef": kl,
                        "step": step,
                        "checkpoint": str(path),
                        "decision": cert["verdict"]["decision"],
                        "reasons": cert["verdict"]["reasons"],
                        "dr": b["dr"],
                        "dr_gain": b["dr_gain"],
                        "min_ess": b["min_ess"],
                    }
                )
        passing = [c for c in candidates if c["decision"] == "ship"]
        chosen = max(passing, key=lambda c: c["dr"]["low"]) if passing else None
        # When the selection half supports none, the best estimate is still worth a look, but it
        # is not a certified choice: the weights could not back it.
        uncertified = max(candidates, key=lambda c: c["dr"]["estimate"]) if candidates else None
        result = {
            "world": str(world),
            "kl_coefs": kl_coefs,
            "steps": steps,
            "save_every": save_every,
            "seed": seed,
            "wrapper": str(wrapper) if wrapper else None,
            "gold_split": {"selection": len(select), "report": len(report_rows)},
            "candidates": candidates,
            "chosen": chosen,
            "best_uncertified": None if chosen else uncertified,
        }
        if chosen is not None:
            held_out = certify_policy(
                world, Path(chosen["checkpoint"]), wrapper, settings=settings, gold_rows=report_rows
            )
            result["held_out"] = {
                "balanced": held_out["balanced"],
                "verdict": held_out["verdict"],
                "per_family": {
                    f: {"dr": r["dr"], "dr_gain": r["dr_gain"], "ess": r["ess"]}
                    for f, r in held_out["per_family"].items()
                },
            }
        atomic_write_json(out / "sweep.json", result)
        return result


def markdown(result: dict) -> str:
    lines = [
        "| kl_coef | step | decision (selection half) | balanced DR [95%] | min ESS |",
        "|---|---|---|---|---|",
    ]
    for c in result["candidates"]:
        mark = " ← chosen" if result["chosen"] == c else ""
        d = c["dr"]
        lines.append(
            f"| {c['kl_coef']:g} | {c['step']} | {c['decision']}{mark} | {d['estimate']:.3f} "
            f"[{d['low']:.3f}, {d['high']:.3f}] | {c['min_ess']:.1f} |"
        )
    if result["chosen"] is None:
        lines += ["", "No checkpoint passed the guardrails on the selection half: nothing chosen."]
        best = result.get("best_uncertified")
        if best:
            lines.append(
                f"The highest estimate, not certified: kl_coef {best['kl_coef']:g}, step "
                f"{best['step']} ({best['dr']['estimate']:.3f}; min ESS {best['min_ess']:.1f}). "
                "More gold labels in the families that abstain would let it be certified."
            )
    else:
        h = result["held_out"]["balanced"]
        lines += [
            "",
            f"Chosen: kl_coef {result['chosen']['kl_coef']:g}, step {result['chosen']['step']}. "
            f"On the held-out half: balanced quality {h['dr']['estimate']:.3f} "
            f"[{h['dr']['low']:.3f}, {h['dr']['high']:.3f}], gain {h['dr_gain']['estimate']:+.3f}, "
            f"verdict {result['held_out']['verdict']['decision']}.",
        ]
    return "\n".join(lines) + "\n"
