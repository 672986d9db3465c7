"""The tiny RLHF world's figures: world builds, RL speed, development and truth evaluation."""

from __future__ import annotations

from pathlib import Path

from rate.bench.timing import timed


def bench_world(tmp: Path, full: Path | None) -> dict:
    from rate.tinyrlhf.build import build_world
    from rate.tinyrlhf.worldconfig import load_world_config

    results = {}
    secs, info = timed(lambda: build_world(load_world_config(small=True), tmp / "small"))
    results["small_build_s"] = secs
    if full:
        secs, info = timed(lambda: build_world(load_world_config(), full))
        results["full_build_s"] = secs
        results["full_build_stages"] = info["timings"]
    return results


def bench_rl(world: Path, tmp: Path, plain_steps: int) -> dict:
    from rate.tinyrlhf.rl import load_rl_config, train_rl

    config = load_rl_config(world / "configs" / "default.json", ["log_every=1000"])
    full_s, _ = timed(lambda: train_rl(config, world, tmp / "rl_default"))
    short = load_rl_config(
        world / "configs" / "default.json", [f"steps={plain_steps}", "log_every=1000"]
    )
    fast_s, _ = timed(lambda: train_rl(short, world, tmp / "rl_fast"))
    plain_s, _ = timed(lambda: train_rl(short, world, tmp / "rl_plain", fast=False))
    return {
        "default_run_s": full_s,
        "default_steps": config.steps,
        "ours_steps_per_s": plain_steps / fast_s,
        "plain_steps_per_s": plain_steps / plain_s,
        "compare_steps": plain_steps,
    }


def bench_eval(world: Path) -> dict:
    from rate.tinyrlhf.data import load_labelled, load_prompts
    from rate.tinyrlhf.dev_eval import dev_evaluate
    from rate.tinyrlhf.evaluate import evaluate_policy, load_oracle
    from rate.tinyrlhf.models import load_policy, load_reward_model

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
        "## Tiny RLHF world (issue: foundation)",
        "",
        f"Measured {date}.",
        "",
        "| what | measured | goal |",
        "|---|---|---|",
    ]
    if "full_build_s" in r:
        st = r["full_build_stages"]
        lines.append(
            f"| full world build | {r['full_build_s']:.0f} s (SFT {st['sft_s']:.0f} s, reward model "
            f"{st['reward_model_s']:.0f} s, five RL runs + dev evals {st['runs_s']:.0f} s) | < 600 s |"
        )
    else:
        lines.append(
            "| full world build | not timed in this run (`--world` reused one) | < 600 s |"
        )
    lines += [
        f"| `--small` world build | {r['small_build_s']:.1f} s | < 60 s |",
        f"| default RL run ({r['default_steps']} steps) | {r['default_run_s']:.1f} s | < 25 s (published trainer: 50 s) |",
        f"| RL steps/s, ours vs plain loop ({r['compare_steps']} steps each) | {r['ours_steps_per_s']:.1f} vs "
        f"{r['plain_steps_per_s']:.1f} ({r['ours_steps_per_s'] / r['plain_steps_per_s']:.2f}x) | |",
        f"| development evaluation ({r['dev_prompts']} dev prompts) | {r['dev_eval_s']:.2f} s | |",
        f"| truth evaluation (500 prompts per family) | {r['truth_eval_s']:.2f} s | |",
        "",
        "The plain loop is the same trainer without the key/value cache in sampling and with each",
        "prompt re-encoded for every one of its samples (`train_rl(..., fast=False)`).",
        "",
    ]
    return lines
