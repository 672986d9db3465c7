"""`rate world audit`: which features does a reward model reward beyond what experts support?

The audit is imported when the command runs, to keep `rate --help` fast.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rate.cli_args import add_out_argument
from rate.io import json_text
from rate.store import Layout, timestamp
from tinyworld.cli_args import add_world_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="every syllable and adjacent pair of the tiny world: what the RM pays for it "
        "beyond what experts support (reads no ground truth)",
        description=__doc__,
    )
    add_world_argument(p, "its analyst-visible files")
    p.add_argument(
        "--reward-model", type=Path, help="the reward model (default: WORLD/reward_model)"
    )
    p.add_argument("--policy", type=Path, help="the reference policy (default: WORLD/policy)")
    p.add_argument("--prompts", type=Path, help="prompts (default: WORLD/data/prompts_train.jsonl)")
    p.add_argument("--gold", type=Path, help="gold labels (default: WORLD/data/gold_calib.jsonl)")
    p.add_argument("--qa", type=Path, help="the crowd QA sample, for the ridge baseline")
    p.add_argument(
        "--no-gold",
        action="store_true",
        help="the portable diagnostic: no expert labels (a token's quality effect is only bounded)",
    )
    add_out_argument(p, "the audit's JSON (with .csv, .md and .png beside)")
    p.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="an audit setting, e.g. --set margin=0.1 (see `rate world audit --settings`)",
    )  # fmt: skip
    p.add_argument(
        "--write-wrapper",
        type=Path,
        metavar="FILE",
        help="also write a reward wrapper (.py) removing each flagged feature's excess, for "
        "rate world rl --set reward_wrapper=FILE",
    )
    p.add_argument(
        "--method",
        choices=("ours", "ridge", "naive"),
        default="ours",
        help="whose flags the command prints and --write-wrapper corrects: ours (default), the "
        "analyst's ridge scan of the QA crowd labels, or the naive correlational scan; every "
        "report shows all three side by side",
    )
    p.add_argument("--settings", action="store_true", help="list the settings and stop")
    p.set_defaults(func=cmd_audit)


def cmd_audit(args: argparse.Namespace) -> int:
    from rate.config_docs import reference_text
    from rate.errors import ConfigError
    from rate.fs import ensure_dir
    from rate.schema import flat_assignments, from_dict
    from tinyworld import heap
    from tinyworld.audit.report import markdown, write_reports
    from tinyworld.audit.run import load_inputs, run_audit
    from tinyworld.audit.settings import DIAGNOSTIC, AuditSettings
    from tinyworld.audit.wrapper import write_wrapper

    if args.settings:
        print(reference_text(AuditSettings), end="")
        return 0
    if args.no_gold and args.gold is not None:
        raise ConfigError(
            "--no-gold and --gold contradict each other: drop --gold for the portable "
            "diagnostic, or --no-gold to measure against those labels"
        )
    data = flat_assignments(args.overrides)
    if args.no_gold:  # the portable diagnostic's own defaults, unless set
        data = {**DIAGNOSTIC, **data}
    settings = from_dict(AuditSettings, data, "rate world audit --set")
    out = args.out or Layout.from_env().root / "audit" / f"audit_{timestamp()}.json"
    # Folders that cannot be made fail now, not after the audit.
    for target in (out, *([args.write_wrapper] if args.write_wrapper else [])):
        ensure_dir(Path(target).parent)
        if not os.access(Path(target).parent, os.W_OK):
            raise ConfigError(f"{target}: its folder is not writable; choose another path")
    inputs = load_inputs(
        args.world, args.reward_model, args.policy, args.prompts, args.gold, args.qa,
        use_gold=not args.no_gold,
    )  # fmt: skip
    heap.keep_freed_memory()  # this command's process setting: it audits (tinyworld.heap)
    audit = run_audit(inputs, settings)
    if args.method != "ours" and args.method not in audit["baselines"]:
        raise ConfigError(
            f"--method {args.method}: the {args.method} scan needs the QA crowd labels "
            "(WORLD/reward_model/train.jsonl, or --qa FILE)"
        )
    audit["method"] = args.method
    for path in write_reports(audit, out):
        print(path)
    if args.write_wrapper:
        table = write_wrapper(audit, args.write_wrapper, str(out), args.method)
        n = sum(len(parts) for f in table.values() for parts in f.values())
        print(f"{args.write_wrapper}: a reward wrapper removing {n} flagged features' excess")
    print(markdown(audit, top=10))
    rows = audit["candidates"] if args.method == "ours" else audit["baselines"][args.method]
    flagged = [f"{r['family']} `{r['feature']}`" for r in rows if r["flagged"]]
    print(json_text({"method": args.method, "flagged": flagged}))
    return 0
