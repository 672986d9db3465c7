"""The `rate` command: one subcommand per stage, plus the tiny RLHF world and the demo."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
import traceback

# The command modules only build parsers; each imports what its commands run when they run,
# so that `rate --help` stays fast.
from rate import __version__, pipeline_cli
from rate.audit import cli as audit_cli
from rate.certify import cli as certify_cli
from rate.demos import cli as demo_cli
from rate.errors import RateError
from rate.io import write_error
from rate.results import cli as results_cli
from rate.settings import load_settings, log_to_files, redact, setup_logging
from rate.slurm import cli as slurm_cli
from rate.studies import cli as study_cli
from rate.sweep import cli as sweep_cli
from rate.tilt import cli as tilt_cli
from rate.tinyrlhf import cli as tiny_cli

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"rate {__version__}")
    # -v and -q are taken anywhere on the line (rate score_dataset -v too): see main().
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v", "--verbose", action="store_true", help="debug logging (anywhere on the line)"
    )
    loudness.add_argument(
        "-q", "--quiet", action="store_true", help="warnings and errors only (anywhere)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    pipeline_cli.register(sub)
    audit_cli.register(sub)
    demo_cli.register(sub)
    results_cli.register(sub)
    slurm_cli.register(sub)
    study_cli.register(sub)
    sweep_cli.register(sub)
    tiny = tiny_cli.register(sub)
    # The release tools sit above the tiny world's modules, so they join its command here.
    certify_cli.register(tiny)
    tilt_cli.register(tiny)
    return parser


def _fail(text: str, details: str = "") -> None:
    """Say ``text`` on stderr and at the end of the run's log file (with ``details``, a
    traceback, in the log file only), secrets redacted."""
    print(redact(text), file=sys.stderr)
    log_to_files(text + (f"\n{details}" if details else ""))


LOUDNESS = {"-v": "DEBUG", "--verbose": "DEBUG", "-q": "WARNING", "--quiet": "WARNING"}


def split_loudness(argv: list[str]) -> tuple[list[str], str]:
    """``argv`` without its -v/-q flags (wherever they stand, before a ``--``), and the log
    level they ask for (the last one wins; INFO without any)."""
    level, rest = "INFO", []
    for i, arg in enumerate(argv):
        if arg == "--":
            rest += argv[i:]
            break
        if arg in LOUDNESS:
            level = LOUDNESS[arg]
        else:
            rest.append(arg)
    return rest, level


def main(argv: list[str] | None = None) -> int:
    load_settings()
    parser = build_parser()
    argv, level = split_loudness(sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    args.verbose, args.quiet = level == "DEBUG", level == "WARNING"
    if args.quiet:  # warnings only: no progress bars either (ours and transformers')
        os.environ["RATE_PROGRESS"] = "0"
    setup_logging(level)
    try:
        return args.func(args)
    except RateError as err:
        # User-facing errors: the message says what is wrong and what to do; no traceback.
        _fail(f"rate: error: {err}")
        return 2
    except OSError as err:
        # A write or read the code did not expect to fail (a full disk, a lost mount).
        verb = "write" if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS) else "use"
        message = write_error(err.filename or "a file", err, verb)
        _fail(f"rate: error: {message}", traceback.format_exc())
        return 2
    except KeyboardInterrupt:
        _fail("rate: interrupted")
        return 130
    except Exception:
        # A bug: the traceback, redacted, on stderr and in the log, and a line to report.
        details = traceback.format_exc()
        print(redact(details), file=sys.stderr, end="")
        _fail(
            "rate: error: an unexpected error (a bug in rate; please report it with the log)",
            details,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
