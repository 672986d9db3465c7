"""The tiny world's commands: `rate world ...` (build a world, train, evaluate, audit, certify,
study) and its demos, `rate demo` and `rate audit-demo`. They join `rate` as a plugin
(:data:`COMMANDS`, found through this package's entry points)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rate.cli_args import Setting, add_out_argument, count
from rate.errors import RateError
from rate.io import atomic_write_json, json_text, write_jsonl
from rate.parallel import add_jobs_argument
from rate.plugins import Commands
from tinyworld.audit import cli as audit_cli
from tinyworld.certify import cli as certify_cli
from tinyworld.cli_args import PER_FAMILY, RL, SEED_FLAG, TRAIN, add_world_argument
from tinyworld.studies import cli as study_cli
from tinyworld.tilt import cli as tilt_cli

log = logging.getLogger(__name__)

# The demo's experiment: the world's marker templates on its reward model and oracle.
DEMO_CONFIG = Path("experiments") / "tinyworld" / "demo.yaml"

# The commands import their modules when they run, not here: this module is imported by every
# `rate ...` (to register its subcommands), and torch alone takes seconds to import, which
# `rate --help` and the pipeline's stages should not pay.


def register(sub: argparse._SubParsersAction) -> None:
    """`rate demo`, `rate audit-demo` and the `rate world` group."""
    add_demos(sub)
    p = sub.add_parser(
        "world", help="the tiny RLHF world: build, train, evaluate, audit, certify, study"
    )
    tiny = p.add_subparsers(dest="tiny_command", required=True, metavar="COMMAND")
    add_world_commands(tiny)
    audit_cli.register(tiny)
    certify_cli.register(tiny)
    tilt_cli.register(tiny)
    study_cli.register(tiny)


# Old command lines (before the world became a plugin) -> new ones; each still works and says
# its new name.
ALIASES = {
    ("tinyrlhf", "sweep"): ("world", "recipe-sweep"),
    ("tinyrlhf",): ("world",),
    ("audit",): ("world", "audit"),
    ("demo-audit",): ("audit-demo",),
    **{
        ("study", name): ("world", "study", name)
        for name in (
            "coverage",
            "synthetic",
            "audit",
            "release",
            "certify-coverage",
            "gold",
            "assess-truth",
            "sweep-truth",
            "tilt",
            "frontier",
        )  # fmt: skip
    },
}
COMMANDS = Commands(register, ALIASES)


def add_demos(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: RATE on the tiny world, checked against truth")
    add_world_argument(p, "default: PROJECT_DIR/tinyrlhf/world")
    p.add_argument("--small", action="store_true", help="use the small world (seconds, for tests)")
    p.add_argument("--config", type=Path, default=DEMO_CONFIG, help="base experiment config")
    p.add_argument("--smoke", action="store_true", help="smoke-test sizes (60 examples)")
    p.add_argument("--runs", action="store_true", help="also print the world's RL runs table")
    p.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="prompts per family for the runs table"
    )
    p.set_defaults(func=cmd_demo)
    a = sub.add_parser(
        "audit-demo",
        help="the release story on the tiny world: audit, wrapper, corrected RL, certification, "
        "assessment, against the truth",
    )
    add_world_argument(a, "default: PROJECT_DIR/tinyrlhf/world")
    a.add_argument("--small", action="store_true", help="the small world (for tests)")
    add_out_argument(a, "default: PROJECT_DIR/audit_demo (a rerun reuses it)")
    a.add_argument(
        "--steps", type=Setting(RL, "steps"), help="RL steps of the corrected run (default: 800)"
    )
    a.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="evaluation prompts per family"
    )
    a.set_defaults(func=cmd_audit_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from tinyworld.demo import run_demo  # here, to keep `rate --help` fast

    return run_demo(
        args.world, args.small, args.config, args.smoke, args.runs, args.per_family, args.verbose
    )


def cmd_audit_demo(args: argparse.Namespace) -> int:
    from tinyworld import heap
    from tinyworld.audit_demo import run_audit_demo  # here, to keep `rate --help` fast

    heap.keep_freed_memory()  # this command's process setting: it audits (tinyworld.heap)
    return run_audit_demo(args.world, args.small, args.out, args.steps, args.per_family)


def add_world_commands(tiny: argparse._SubParsersAction) -> None:

    b = tiny.add_parser("build", help="build a world (policy, reward model, data, earlier runs)")
    add_out_argument(b, "directory to create", required=True)
    which = b.add_mutually_exclusive_group()
    which.add_argument("--config", type=Path, help="world config JSON (default: the packaged one)")
    which.add_argument(
        "--world-config",
        metavar="NAME",
        help="a packaged world config by name: default, variant (other shortcuts, a penalty), "
        "noshortcuts (the default without shortcuts), small; or random (shortcuts drawn from "
        "--seed)",
    )
    b.add_argument(
        "--small",
        action="store_true",
        help="the small variant for tests (seconds); with --world-config random, drawn on it",
    )
    b.add_argument("--seed", type=SEED_FLAG, help="the draw of --world-config random")
    b.add_argument("--overwrite", action="store_true", help="replace an existing world")
    add_jobs_argument(b, "RL runs trained")
    b.set_defaults(func=cmd_build)

    rc = tiny.add_parser(
        "random-config",
        help="write the world config that --world-config random --seed N builds (it names the "
        "planted shortcuts: keep it from analysts)",
    )
    rc.add_argument("--seed", type=SEED_FLAG, required=True, help="the draw")
    rc.add_argument("--small", action="store_true", help="drawn on the small variant")
    add_out_argument(rc, "the config JSON (default: print it)")
    rc.set_defaults(func=cmd_random_config)

    r = tiny.add_parser("rl", help="KL-regularised REINFORCE against a reward model")
    add_world_argument(
        r, "paths in the config are relative to it (default: the current folder)", default=Path(".")
    )
    r.add_argument("--config", type=Path, help="RL config JSON (default: built-in defaults)")
    r.add_argument(
        "--set",
        "--override",  # the older name, kept so that existing commands work
        dest="override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (repeatable; the value is JSON, else YAML), e.g. "
        "--set kl_coef=0.05; `rate world rl --keys` lists them",
    )
    r.add_argument("--keys", action="store_true", help="list the config keys and stop")
    add_out_argument(r, "run directory")
    r.add_argument("--overwrite", action="store_true")
    r.set_defaults(func=cmd_rl)

    s = tiny.add_parser("sft", help="supervised fine-tuning of a fresh policy on demonstrations")
    s.add_argument(
        "--data", type=Path, required=True, help="JSONL rows with prompt fields and 'response'"
    )
    add_out_argument(s, required=True)
    s.add_argument("--epochs", type=Setting(TRAIN, "epochs"), default=10)
    s.add_argument("--lr", type=Setting(TRAIN, "lr"), default=2e-3)
    s.add_argument("--batch-size", type=Setting(TRAIN, "batch_size"), default=256)
    s.add_argument("--seed", type=SEED_FLAG, default=0)
    s.set_defaults(func=cmd_sft)

    m = tiny.add_parser("train-rm", help="train a reward model on labelled rows (MSE)")
    m.add_argument(
        "--data", type=Path, required=True, help="JSONL rows with 'response' and 'label'"
    )
    add_out_argument(m, required=True)
    m.add_argument("--epochs", type=Setting(TRAIN, "epochs"), default=40)
    m.add_argument("--lr", type=Setting(TRAIN, "lr"), default=2e-3)
    m.add_argument("--batch-size", type=Setting(TRAIN, "batch_size"), default=128)
    m.add_argument("--seed", type=SEED_FLAG, default=0)
    m.set_defaults(func=cmd_train_rm)

    n = tiny.add_parser("best-of-n", help="best-of-N responses for a prompt file")
    n.add_argument("--policy", type=Path, required=True)
    n.add_argument("--reward-model", type=Path, required=True)
    n.add_argument("--prompts", type=Path, required=True)
    n.add_argument("--n", type=count(4096, "responses per prompt"), default=8)
    n.add_argument("--temperature", type=Setting(RL, "temperature"), default=1.0)
    n.add_argument("--seed", type=SEED_FLAG, default=0)
    add_out_argument(n, "JSONL with response and rm_score", required=True)
    n.set_defaults(func=cmd_best_of_n)

    d = tiny.add_parser("dev-eval", help="development evaluation of a checkpoint (no ground truth)")
    d.add_argument("--policy", type=Path, required=True)
    add_world_argument(d, "default: the current folder", default=Path("."))
    add_out_argument(d, "write the JSON here as well as printing it")
    d.set_defaults(func=cmd_dev_eval)

    e = tiny.add_parser("evaluate", help="true quality beside proxy reward and KL, per family")
    e.add_argument("--policy", type=Path, required=True, help="a policy or checkpoint directory")
    add_world_argument(e, "default: found above --policy")
    e.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="evaluation prompts per family"
    )
    e.add_argument("--json", action="store_true", help="print JSON instead of a table")
    e.set_defaults(func=cmd_evaluate)

    st = tiny.add_parser("stats", help="a built world against the published one (uses the truth)")
    add_world_argument(st, required=True)
    st.add_argument(
        "--per-family", type=PER_FAMILY, default=500, help="evaluation prompts per family"
    )
    add_out_argument(st, "also write the full statistics as JSON here")
    st.set_defaults(func=cmd_stats)


def cmd_build(args: argparse.Namespace) -> int:
    from tinyworld.build import build_lock, build_world
    from tinyworld.worldconfig import RANDOM_WORLD, load_world_config

    if args.world_config == RANDOM_WORLD:
        if args.seed is None:
            raise RateError("rate world build: --world-config random needs --seed N (the draw)")
        from tinyworld.random_world import random_world_config

        config = random_world_config(args.seed, small=args.small)
    elif args.seed is not None:
        raise RateError(
            "rate world build: --seed draws a random world; it goes with --world-config random"
        )
    elif args.small and (args.config or args.world_config):
        raise RateError(
            "rate world build: --small goes alone or with --world-config random, not with "
            "--config or another --world-config"
        )
    else:
        config = load_world_config(args.config, small=args.small, name=args.world_config)
    with build_lock(args.out):
        info = build_world(config, args.out, overwrite=args.overwrite, jobs=args.jobs)
    print(f"world built at {args.out} in {info['timings']['total_s']:.1f} s")
    return 0


def cmd_random_config(args: argparse.Namespace) -> int:
    from rate.schema import to_dict
    from tinyworld.random_world import random_world_config

    config = to_dict(random_world_config(args.seed, small=args.small))
    if args.out:
        atomic_write_json(args.out, config)
        print(f"world config of random seed {args.seed} written to {args.out}")
    else:
        print(json_text(config, indent=2))
    return 0


def cmd_rl(args: argparse.Namespace) -> int:
    from rate.config_docs import reference_text
    from tinyworld.rl import train_rl
    from tinyworld.rl_config import RLConfig, load_rl_config

    if args.keys:
        print(reference_text(RLConfig), end="")
        return 0
    if args.out is None:
        raise RateError("rate world rl: --out (the run directory) is required")
    config = load_rl_config(args.config, args.override)
    last = train_rl(config, args.world, args.out, overwrite=args.overwrite)
    print(json_text(last))
    return 0


def _load_response_rows(path: Path, need_label: bool):
    from tinyworld.data import load_labelled, load_response_rows

    return load_labelled(path) if need_label else load_response_rows(path)


def _check_trainer_flags(args: argparse.Namespace) -> None:
    """The supervised trainers' flags, in the ranges their loops need, before any work."""
    from rate.schema import Bound

    Bound(1).check(args.epochs, "--epochs")
    Bound(0, strict=True).check(args.lr, "--lr")  # argparse's float() takes 'nan' and 'inf'
    Bound(1).check(args.batch_size, "--batch-size")


def cmd_sft(args: argparse.Namespace) -> int:
    from tinyworld.models import save_model
    from tinyworld.sft import train_sft

    _check_trainer_flags(args)
    data = _load_response_rows(args.data, need_label=False)
    policy, history = train_sft(
        data.tokens, data.responses, args.epochs, args.lr, args.batch_size, args.seed
    )
    save_model(policy, args.out, extra={"trained_by": "sft", "demonstrations": len(data)})
    print(f"policy saved to {args.out}; final loss {history[-1]['loss']:.4f}")
    return 0


def cmd_train_rm(args: argparse.Namespace) -> int:
    from tinyworld.models import save_model
    from tinyworld.rm_train import train_reward_model

    _check_trainer_flags(args)
    data = _load_response_rows(args.data, need_label=True)
    rm, history = train_reward_model(
        data.tokens, data.responses, data.labels, args.epochs, args.lr, args.batch_size, args.seed
    )
    save_model(rm, args.out)
    print(f"reward model saved to {args.out}; final training MSE {history[-1]['mse']:.5f}")
    return 0


def cmd_best_of_n(args: argparse.Namespace) -> int:
    import torch

    from tinyworld.best_of_n import best_of_n
    from tinyworld.data import load_prompts
    from tinyworld.models import load_policy, load_reward_model
    from tinyworld.vocab import decode_responses

    policy, rm = load_policy(args.policy), load_reward_model(args.reward_model)
    pool = load_prompts(args.prompts)
    if args.n < 1:
        raise RateError(f"--n must be >= 1, got {args.n}")
    gen = torch.Generator().manual_seed(args.seed)
    chosen, scores = best_of_n(policy, rm, pool.tokens, args.n, args.temperature, gen)
    rows = [
        {**rec, "response": resp, "rm_score": round(float(sc), 6)}
        for rec, resp, sc in zip(
            pool.records, decode_responses(chosen), scores.tolist(), strict=True
        )
    ]
    write_jsonl(args.out, rows)
    print(f"{len(rows)} best-of-{args.n} responses written to {args.out}")
    return 0


def cmd_dev_eval(args: argparse.Namespace) -> int:
    from tinyworld.data import load_labelled, load_prompts
    from tinyworld.dev_eval import dev_evaluate
    from tinyworld.models import load_policy, load_reward_model

    w = args.world
    report = dev_evaluate(
        load_policy(args.policy),
        load_policy(w / "policy"),
        load_reward_model(w / "reward_model"),
        load_prompts(w / "data" / "prompts_dev.jsonl"),
        load_labelled(w / "data" / "gold_calib.jsonl"),
        policy_name=str(args.policy),
        prompts_name=str(w / "data" / "prompts_dev.jsonl"),
    )
    if args.out:
        atomic_write_json(args.out, report)
    print(json_text({k: v for k, v in report.items() if k != "per_family"}, indent=2))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from tinyworld.evaluate import evaluate_policy, find_world, load_oracle
    from tinyworld.models import load_policy, load_reward_model
    from tinyworld.report_table import quality_table

    world = args.world or find_world(args.policy)
    oracle, _ = load_oracle(world)
    policy = load_policy(args.policy)
    report = evaluate_policy(
        policy,
        oracle,
        load_reward_model(world / "reward_model"),
        load_policy(world / "policy"),
        args.per_family,
    )
    print(json_text(report, indent=2) if args.json else quality_table({str(args.policy): report}))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from tinyworld.evaluate import world_statistics
    from tinyworld.report_table import quality_table
    from tinyworld.shortcuts import shortcut_table
    from tinyworld.vocab import FAMILIES

    stats = world_statistics(args.world, args.per_family)
    if args.out:
        atomic_write_json(args.out, stats)
    lines = ["RM agreement (Pearson) per family:"]
    for key, label in (
        ("rm_crowd_pearson", "crowd, train.jsonl"),
        ("rm_expert_pearson", "expert, gold_calib"),
    ):
        lines.append(f"  {label:<20}" + "".join(f"{f} {stats[key][f]:.3f}  " for f in FAMILIES))
    lines.append(
        "Marker syllables of the label-source shortcuts (mean count of 8, balanced samples):"
    )
    for marker, counts in stats["marker_counts"].items():
        fam, tok = marker.split(":")
        lines.append(f"  {fam} `{tok}`: " + "  ".join(f"{n} {c:.2f}" for n, c in counts.items()))
    if stats["pair_counts"]:
        lines.append("Pairs of the pair premiums (mean adjacent count per response):")
    for marker, counts in stats["pair_counts"].items():
        fam, pair = marker.split(":")
        lines.append(f"  {fam} `{pair}`: " + "  ".join(f"{n} {c:.2f}" for n, c in counts.items()))
    lines.append(shortcut_table(stats["shortcuts"]))
    print("\n".join(lines) + "\n")
    print(quality_table({"reference": stats["reference"], **stats["runs"]}))
    return 0
