"""`rate world tilt`: the reward's tails and the pi_beta forecast, registered under
`rate world` (its module imports when the command runs, to keep `rate --help` fast)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rate.cli_args import add_out_argument, count
from tinyworld.cli_args import BETA, SAMPLES, SEED_FLAG, add_world_argument


def add_forecast_arguments(p: argparse.ArgumentParser) -> None:
    """The forecast's flags, the command's and its study's: the wrapper, the betas and the
    sample sizes."""
    p.add_argument("--wrapper", type=Path, help="a reward wrapper .py: also the corrected reward")
    p.add_argument("--beta", type=BETA, nargs="+", default=[0.1, 0.05], help="KL coefficients")
    p.add_argument(
        "--tail-samples",
        type=count(10**7, "samples per family"),
        default=10_000,
        help="reference samples per family for the tails",
    )
    p.add_argument(
        "--model-samples",
        type=SAMPLES,
        default=10_000,
        help="with --wrapper: guided samples of pi_beta per rung for the model forecast (0: none)",
    )


def register(tiny: argparse._SubParsersAction) -> None:
    t = tiny.add_parser("tilt", help="reward tails and a forecast of pi_beta's quality from gold")
    add_world_argument(t, required=True)
    add_forecast_arguments(t)
    t.add_argument("--seed", type=SEED_FLAG, default=0)
    add_out_argument(t, "folder for tilt.json, .md, Q-Q pngs", required=True)
    t.set_defaults(func=cmd_tilt)


def cmd_tilt(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from tinyworld.tilt.report import markdown, write_report
    from tinyworld.tilt.run import tilt_analysis

    ensure_dir(args.out)  # a folder that cannot be made fails now, not after the analysis
    analysis = tilt_analysis(
        args.world,
        args.wrapper,
        args.beta,
        args.tail_samples,
        seed=args.seed,
        model_samples=args.model_samples,
    )
    written = write_report(analysis, args.out)
    print(markdown(analysis))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
