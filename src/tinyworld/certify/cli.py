"""`rate world certify | assess | sweep`: the release tools, registered under `rate world`.

The commands import their modules when they run (torch takes seconds to import, which
`rate --help` should not pay).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rate.cli_args import Commas, Setting, add_out_argument, count
from rate.errors import ConfigError
from rate.io import json_text
from rate.parallel import add_jobs_argument
from tinyworld.cli_args import CERTIFY, RL, add_world_argument


def named_paths(
    items: list[str], flag: str = "--policy", file_name: bool = True
) -> dict[str, Path]:
    """``NAME=DIR`` arguments as a mapping, each malformed one a one-line error. Each NAME is
    given once; with ``file_name`` (a NAME that names output files) it is one part of a file
    name, never a path."""
    from rate.store import is_name_part

    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"{flag} {item!r}: expected NAME=DIR")
        if file_name and not is_name_part(name):
            raise ConfigError(
                f"{flag} {item!r}: NAME may hold letters, digits and _ . + = - and not start "
                "with a dot"
            )
        if name in out:
            raise ConfigError(f"{flag} {name}=...: NAME given twice; give each its own NAME")
        out[name] = Path(path)
    return out


def _settings_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wrapper",
        type=Path,
        help="a reward wrapper (.py, e.g. from `rate world audit --write-wrapper`): its corrected "
        "reward is the doubly robust estimate's model; default: the RM's raw score",
    )
    p.add_argument(
        "--fresh",
        type=Setting(CERTIFY, "fresh_per_family"),
        default=500,
        help="fresh samples of a policy per family",
    )
    p.add_argument(
        "--replicates",
        type=Setting(CERTIFY, "replicates"),
        default=2000,
        help="bootstrap replicates",
    )
    p.add_argument("--seed", type=Setting(CERTIFY, "seed"), default=0)
    p.add_argument(
        "--plan-samples",
        type=Setting(CERTIFY, "plan_per_family"),
        default=1000,
        help="where a certificate abstains, unlabelled samples per family of each policy from "
        "which the gold set that would let it answer is sized (0: no plan); default 1000",
    )


def _settings(args: argparse.Namespace):
    from rate.schema import from_dict
    from tinyworld.certify.certificate import CertifySettings

    if args.plan_samples != 0 and args.plan_samples < 100:
        raise ConfigError(f"--plan-samples must be 0 (no plan) or >= 100, got {args.plan_samples}")
    flags = {"fresh_per_family": "--fresh", "replicates": "--replicates", "seed": "--seed"}
    flags["plan_per_family"] = "--plan-samples"
    data = {key: getattr(args, flag[2:].replace("-", "_")) for key, flag in flags.items()}
    try:
        return from_dict(CertifySettings, data, "rate world certify")
    except ConfigError as err:  # name the flag the user typed, not the setting's key
        message = str(err)
        for key, flag in flags.items():
            message = message.replace(f"key '{key}'", flag)
        raise ConfigError(message) from None


def register(tiny: argparse._SubParsersAction) -> None:
    c = tiny.add_parser(
        "certify",
        help="a policy's expert quality from the reference's gold labels (SNIPS, doubly robust)",
        description="Reads WORLD/policy (the reference), WORLD/reward_model, WORLD/data/"
        "gold_calib.jsonl and --policy; writes OUT.json and OUT.md. Example: rate world "
        "certify --world W --policy W/runs/default-s800/checkpoint --wrapper ours.py",
    )
    add_world_argument(c, required=True)
    c.add_argument("--policy", type=Path, required=True, help="a policy or checkpoint directory")
    c.add_argument("--gold", type=Path, help="gold labels (default: WORLD/data/gold_calib.jsonl)")
    add_out_argument(c, "write OUT.json and OUT.md (a path without suffix)")
    _settings_arguments(c)
    c.set_defaults(func=cmd_certify)

    a = tiny.add_parser(
        "assess",
        help="every run of a world: ship or not, with the issues found",
        description="Reads every WORLD/runs/*/checkpoint (and --policy NAME=DIR), the audit's "
        "JSON and the gold labels; writes OUT/assessment.json and OUT/assessment.md. Example: "
        "rate world assess --world W --audit audit.json --wrapper ours.py --out W/assessment",
    )
    add_world_argument(a, required=True)
    a.add_argument(
        "--audit", type=Path, required=True, help="a `rate world audit` JSON (its flags)"
    )
    a.add_argument("--policy", action="append", default=[], metavar="NAME=DIR")
    add_out_argument(a, "output folder", required=True)
    a.add_argument(
        "--gold",
        type=Path,
        help="gold labels (default: WORLD/data/gold_calib.jsonl); a larger set of labelled "
        "reference samples lets more runs be certified (each abstention says how large)",
    )
    _settings_arguments(a)
    a.set_defaults(func=cmd_assess)

    s = tiny.add_parser(
        "recipe-sweep",
        help="RL over kl_coef x steps, every checkpoint certified, the winner chosen on held-out "
        "gold",
        description="Trains one run per --kl under OUT (reused when finished) and chooses a "
        "checkpoint: by default the highest corrected reward among those whose weights could "
        "support a certificate, reading no label, then certified on the whole gold set; with "
        "--selection split, the best certified lower bound on half the gold set among those "
        "passing the guardrails, certified on the other half. Writes OUT/sweep.json and .md. "
        "Example: rate world recipe-sweep --world W --wrapper ours.py --kl 0.1,0.05 --steps 1200 "
        "--save-every 400 --out W/sweep",
    )
    add_world_argument(s, required=True)
    s.add_argument(
        "--kl",
        type=Commas(Setting(RL, "kl_coef")),
        default="0.1,0.05,0.03",
        help="kl_coef values, comma-separated",
    )
    s.add_argument("--steps", type=Setting(RL, "steps"), default=1200)
    s.add_argument("--save-every", type=Setting(RL, "save_every"), default=300)
    add_out_argument(s, required=True)
    s.add_argument(
        "--selection",
        choices=("label-free", "split"),
        default="label-free",
        help="how the checkpoint is chosen (default: label-free)",
    )
    s.add_argument(
        "--refine",
        type=count(100, "more runs", low=0),
        default=0,
        help="up to N more runs, each at the geometric midpoint between the kl_coef of the "
        "current choice and the next smaller one tried (toward the edge of what the gold set "
        "can certify, where the best certifiable checkpoints lie); when none smaller was "
        "tried, at half of it if its run qualifies to its end, else at the midpoint to the "
        "next larger one; default 0",
    )
    s.add_argument(
        "--gold",
        type=Path,
        help="gold labels (default: WORLD/data/gold_calib.jsonl); a larger set of labelled "
        "reference samples moves the edge of what can be certified to smaller kl_coef",
    )
    add_jobs_argument(s, "kl_coef runs trained")
    _settings_arguments(s)
    s.set_defaults(func=cmd_sweep)


def cmd_certify(args: argparse.Namespace) -> int:
    import contextlib

    from rate.errors import BusyError
    from rate.filesets import write_set
    from rate.io import json_safe
    from rate.provenance import folder_lock
    from tinyworld.certify.certificate import markdown
    from tinyworld.certify.certify import certify_policy

    settings = _settings(args)
    busy = lambda pid: BusyError(  # noqa: E731
        f"{args.out}: another certificate (pid {pid}) is being written to this --out; wait for "
        "it to finish or choose another --out"
    )
    # The lock makes the folder first (one that cannot be made fails now, not after the
    # work) and keeps OUT.json and OUT.md of two certificates written at once from mixing.
    lock = (
        folder_lock(args.out.parent, busy, name=f".{args.out.name}.lock")
        if args.out
        else contextlib.nullcontext()
    )
    with lock:
        report = certify_policy(args.world, args.policy, args.wrapper, args.gold, settings)
        table = markdown(report)
        if args.out:
            md = {args.out.with_suffix(".md"): table.encode("utf-8")}
            write_set(args.out.with_suffix(".json"), json_safe(report), md)
    print(table, end="")
    print(json_text({"decision": report["verdict"]["decision"]}))
    return 0


def cmd_assess(args: argparse.Namespace) -> int:
    from rate.filesets import check_set, file_digest
    from tinyworld.audit.wrapper import wrapper_audit_digest
    from tinyworld.certify.assess import assess_world, markdown

    policies = named_paths(args.policy)
    audit = check_set(args.audit, "`rate world audit` JSON")
    if "candidates" not in audit:
        raise ConfigError(f"{args.audit}: not a `rate world audit` JSON (no 'candidates')")
    made_from = (
        wrapper_audit_digest(args.wrapper) if args.wrapper and args.wrapper.is_file() else None
    )
    if made_from and made_from != file_digest(args.audit):
        raise ConfigError(
            f"--wrapper {args.wrapper} was made from another audit than --audit {args.audit}; "
            "pass the audit it was written with, or write it again with rate world audit "
            "--write-wrapper"
        )
    # The folder is locked (made first: one that cannot be made fails before the
    # certificates) and written by assess_world; a rerun reuses the rows of unchanged runs.
    result = assess_world(
        args.world, audit, args.wrapper, policies, _settings(args), args.gold, args.out
    )
    print(markdown(result), end="")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from tinyworld.certify.recipes import markdown, recipe_sweep

    result = recipe_sweep(
        args.world, args.out, args.kl, args.steps, args.save_every, args.wrapper,
        args.seed, _settings(args), args.selection, args.jobs, args.refine, args.gold,
    )  # fmt: skip
    print(markdown(result), end="")  # written with sweep.json as OUT/sweep.md
    return 0
