"""The tiny RLHF world's figures: world builds, RL speed, development and truth evaluation."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from pathlib import Path

from benchmarks.rl import DEVICES, run_contender
from benchmarks.timing import cpu_description, timed
from rate.parallel import default_jobs, run_jobs
from tinyworld.build import build_world
from tinyworld.data import load_labelled, load_prompts
from tinyworld.dev_eval import dev_evaluate
from tinyworld.evaluate import evaluate_policy, load_oracle
from tinyworld.models import load_policy, load_reward_model
from tinyworld.rl import train_rl
from tinyworld.rl_config import RLConfig, load_rl_config
from tinyworld.worldconfig import load_world_config


def bench_world(tmp: Path, full: Path | None, reused: Path | None = None) -> dict:
    """Time the --small build, and the full build into ``full``; with a ``reused`` world
    instead, report the stage times its build recorded in world_info.json."""

    # The CPU, since the ratios depend on it (BLAS kernels differ by CPU vendor and model).
    results = {"cpu": cpu_description()}
    secs, info = timed(lambda: build_world(load_world_config(small=True), tmp / "small"))
    results["small_build_s"] = secs
    if full:
        secs, info = timed(lambda: build_world(load_world_config(), full))
        results["full_build_s"] = secs
        results["full_build_stages"] = info["timings"]
        results["full_build_jobs"] = info.get("rl_jobs")
    elif reused is not None and (reused / "world_info.json").is_file():
        recorded = json.loads((reused / "world_info.json").read_text())
        results["reused_build_stages"] = recorded["timings"]
        results["reused_build_jobs"] = recorded.get("rl_jobs")
    return results


# The OpenMP settings the RL comparison runs under. rate's own: OpenMP threads sleep as soon
# as a kernel ends (rate sets OMP_WAIT_POLICY=PASSIVE unless told otherwise); torch's own when
# nothing is set: they spin 300,000 rounds first (libgomp's GOMP_SPINCOUNT default, given
# explicitly, since rate would otherwise set PASSIVE), which a second thread needs at these
# sizes and which costs dearly when the cores are shared.
OMP_SETTINGS = {
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "spin": {"GOMP_SPINCOUNT": "300000"},
}


def bench_rl(world: Path, tmp: Path, compare_steps: int, rounds: int) -> dict:
    """The default run's time, then the published trainer (the anchor) on one and on two
    threads, the plain loop and ours for ``compare_steps`` steps each, every one in a fresh
    process, interleaved over ``rounds`` rounds, under each of :data:`OMP_SETTINGS`."""

    config = load_rl_config(world / "configs" / "default.json", ["log_every=1000"])
    full_s, _ = timed(lambda: train_rl(config, world, tmp / "rl_default"))
    contenders = {  # name: (trainer, threads); ours runs torch on one thread whatever it is given
        "anchor_1t": ("anchor", 1),
        "anchor_2t": ("anchor", 2),
        "plain": ("plain", 1),
        "ours": ("ours", 1),
    }
    out = {
        "default_run_s": full_s,
        "default_steps": config.steps,
        "compare_steps": compare_steps,
        "compare_rounds": rounds,
    }
    for setting, env in OMP_SETTINGS.items():
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(rounds):  # interleaved, so that drift in the machine hits all alike
            for name, (trainer, threads) in contenders.items():
                seconds[name].append(run_contender(trainer, world, compare_steps, threads, env))
        result: dict = {"load_average": os.getloadavg()[0]}  # shared machines: how busy
        for name, secs in seconds.items():  # the best round: the least disturbed
            result[f"{name}_steps_per_s"] = compare_steps / min(secs)
            result[f"{name}_round_s"] = secs
        # Per round, the published trainer at its faster thread count against ours; the median.
        anchor_best = [
            min(a, b) for a, b in zip(seconds["anchor_1t"], seconds["anchor_2t"], strict=True)
        ]
        for other, secs in (("anchor", anchor_best), ("plain", seconds["plain"])):
            ratios = [a / b for a, b in zip(secs, seconds["ours"], strict=True)]
            result[f"ours_vs_{other}"] = statistics.median(ratios)
        out[f"rl_{setting}"] = result
    out["rl_devices"] = bench_devices(world, compare_steps, rounds)
    # Runs long enough that the workers' start (a few seconds each) is not what is measured.
    pair = dataclasses.replace(
        load_rl_config(world / "configs" / "default.json"), steps=300, log_every=300
    )
    out.update(bench_run_throughput(pair, world, tmp, rounds=2))
    return out


def bench_devices(world: Path, steps: int, rounds: int) -> dict:
    """What each of the loop's speed devices buys on its own: ours, and ours with that one
    device off, interleaved over ``rounds`` rounds in fresh processes (rate's OpenMP setting);
    per device the median over rounds of (seconds without it) / (seconds with all)."""
    names = ["ours", *(f"without_{d}" for d in DEVICES)]
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            seconds[name].append(run_contender(name, world, steps, 1, OMP_SETTINGS["passive"]))
    return {
        "load_average": os.getloadavg()[0],
        "round_s": seconds,
        "buys": {
            d: statistics.median(
                a / b for a, b in zip(seconds[f"without_{d}"], seconds["ours"], strict=True)
            )
            for d in DEVICES
        },
    }


def bench_run_throughput(config: RLConfig, world: Path, tmp: Path, rounds: int) -> dict:
    """Wall time of two runs (seeds 1, 2) in turn against the same two at once in workers
    (rate.parallel, as the world build and the studies run theirs), every run on one thread;
    interleaved rounds, the median ratio."""
    jobs = default_jobs(2)
    tasks = [
        (dataclasses.replace(config, seed=seed), world, tmp / f"rl_pair{seed}", True)
        for seed in (1, 2)
    ]
    in_turn, at_once = [], []
    for _ in range(rounds):
        secs, _ = timed(lambda: [train_rl(*task) for task in tasks])
        in_turn.append(secs)
        secs, _ = timed(lambda: list(run_jobs(train_rl, tasks, jobs)))
        at_once.append(secs)
    return {
        "pair_in_turn_s": in_turn,
        "pair_at_once_s": at_once,
        "pair_jobs": jobs,
        "pair_steps": config.steps,
        "pair_speedup": statistics.median(a / b for a, b in zip(in_turn, at_once, strict=True)),
    }


def rl_speed_rows(r: dict) -> list[str]:
    """The RL comparison's rows of the world table, one per OpenMP setting."""
    rows = []
    for setting in OMP_SETTINGS:
        x = r.get(f"rl_{setting}")
        if x is None:  # figures recorded before the comparison ran in fresh processes
            continue
        rows.append(
            f"| RL steps/s, OpenMP {setting} (load {x['load_average']:.1f}; "
            f"{r['compare_steps']} steps, {r['compare_rounds']} interleaved rounds): published "
            f"trainer on 1 / 2 threads, plain loop, ours | {x['anchor_1t_steps_per_s']:.1f} / "
            f"{x['anchor_2t_steps_per_s']:.1f}, {x['plain_steps_per_s']:.1f}, "
            f"{x['ours_steps_per_s']:.1f} (ours {x['ours_vs_anchor']:.2f}x the published "
            f"trainer at its faster thread count, {x['ours_vs_plain']:.2f}x the plain loop) "
            "| 2x the published on 400 steps, whole process (experiments/rl_speed) |"
        )
    devices = r.get("rl_devices")
    if devices is not None:
        bought = ", ".join(f"{d} {x:.2f}x" for d, x in devices["buys"].items())
        rows.append(
            f"| what each speed device of the RL loop buys on its own (load "
            f"{devices['load_average']:.1f}; {r['compare_steps']} steps, OpenMP passive): ours "
            f"with it off / ours | {bought} | each >= 1.15x |"
        )
    return rows


def bench_eval(world: Path) -> dict:

    policy = load_policy(world / "runs" / "default-s800" / "checkpoint")
    ref, rm = load_policy(world / "policy"), load_reward_model(world / "reward_model")
    dev, gold = (
        load_prompts(world / "data" / "prompts_dev.jsonl"),
        load_labelled(world / "data" / "gold_calib.jsonl"),
    )
    dev_s, _ = timed(lambda: dev_evaluate(policy, ref, rm, dev, gold))
    oracle, _ = load_oracle(world)
    truth_s, _ = timed(lambda: evaluate_policy(policy, oracle, rm, ref, 500))
    return {"dev_eval_s": dev_s, "dev_prompts": len(dev), "truth_eval_s": truth_s}


def render_world(r: dict, date: str | None) -> list[str]:
    lines = [
        "## Tiny RLHF world (issues: foundation, faster RL)",
        "",
        f"Measured {date}" + (f" on {r['cpu']}." if r.get("cpu") else "."),
        "",
        "| what | measured | goal |",
        "|---|---|---|",
    ]

    def stages(st: dict, jobs: int | None) -> str:
        if jobs and jobs > 1 and "rl_training_s" in st:  # the runs overlap: their times sum more
            rl = f", {jobs} at a time; the runs' own times sum to {st['rl_training_s']:.0f} s"
        elif "rl_training_s" in st:
            rl = f", of which RL training {st['rl_training_s']:.0f} s"
        else:
            rl = ""
        return (
            f"SFT {st['sft_s']:.0f} s, reward model {st['reward_model_s']:.0f} s, five RL runs + "
            f"dev evals {st['runs_s']:.0f} s{rl}"
        )

    if "full_build_s" in r:
        lines.append(
            f"| full world build | {r['full_build_s']:.0f} s "
            f"({stages(r['full_build_stages'], r.get('full_build_jobs'))}) "
            "| < 240 s |"
        )
    elif "reused_build_stages" in r:
        st = r["reused_build_stages"]
        lines.append(
            f"| full world build (as recorded in the reused world's world_info.json) | "
            f"{st['total_s']:.0f} s ({stages(st, r.get('reused_build_jobs'))}) | < 240 s |"
        )
    else:
        lines.append(
            "| full world build | not timed in this run (`--world` reused one) | < 240 s |"
        )
    lines += [
        f"| `--small` world build | {r['small_build_s']:.1f} s | < 60 s |",
        f"| default RL run ({r['default_steps']} steps) | {r['default_run_s']:.1f} s | |",
    ]
    lines += rl_speed_rows(r)
    if "pair_jobs" in r:  # figures recorded before this comparison existed lack it
        lines.append(
            f"| two RL runs ({r['pair_steps']} steps each) in turn / at once in "
            f"{r['pair_jobs']} workers (wall time, incl. the workers' start) | "
            f"{min(r['pair_in_turn_s']):.1f} s / {min(r['pair_at_once_s']):.1f} s "
            f"({r['pair_speedup']:.2f}x) | |"
        )
    lines += [
        f"| development evaluation ({r['dev_prompts']} dev prompts) | {r['dev_eval_s']:.2f} s | |",
        f"| truth evaluation (500 prompts per family) | {r['truth_eval_s']:.2f} s | |",
        "",
        "The published trainer is the seed world's trainer rebuilt with the published sizes",
        "(`benchmarks.rl.train_rl_anchor`: `nn.TransformerEncoder` blocks, sampling without a",
        "key/value cache), on one and on two threads; ours is `tinyworld.rl.train_rl`, torch on",
        "one thread, one step after another (`tinyworld.rl.rl_step`), with its one speed",
        "device (`tinyworld.rl.SpeedDevices`: the key/value cache); the plain loop is the same",
        "function with it off, and each device is measured on its own by turning it off alone.",
        "Each runs in a fresh process",
        "(`benchmarks.rl.run_contender`), rounds interleaved; a trainer's time is its loop's,",
        "first step included, setup (loading the models) not. Steps/s are each one's best round;",
        "the ratios are the median over rounds of each round's ratio, the published trainer",
        "taken at its faster thread count in that round. OpenMP settings: passive (rate's",
        "default, OMP_WAIT_POLICY=PASSIVE: threads sleep between kernels, which shared cores",
        "need) and spin (torch's default: GOMP_SPINCOUNT=300000, what a second thread needs at",
        "these sizes).",
        "This section: `python -m benchmarks --sections world [--world BUILT_WORLD]`.",
    ]
    lines.append("")
    return lines
