"""The `rate` command: one subcommand per stage, plus the tiny RLHF world and the demo."""

from __future__ import annotations

import argparse
import logging
import sys

# The command modules only build parsers; each imports what its commands run when they run,
# so that `rate --help` stays fast.
from rate import __version__, pipeline_cli
from rate.audit import cli as audit_cli
from rate.demos import cli as demo_cli
from rate.errors import RateError
from rate.settings import load_env, setup_logging
from rate.slurm import cli as slurm_cli
from rate.studies import cli as study_cli
from rate.tinyrlhf import cli as tiny_cli

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"rate {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    pipeline_cli.register(sub)
    audit_cli.register(sub)
    demo_cli.register(sub)
    slurm_cli.register(sub)
    study_cli.register(sub)
    tiny_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    load_env()
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging("DEBUG" if args.verbose else "INFO")
    try:
        return args.func(args)
    except RateError as err:
        # User-facing errors: the message says what is wrong and what to do; no traceback.
        print(f"rate: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
