"""The `rate` command: one subcommand per stage of the pipeline, its tools, and whatever the
installed plugins add (the tiny RLHF world: `rate world ...`, `rate demo`)."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import sys
import traceback
from typing import NoReturn

# The command modules only build parsers; each imports what its commands run when they run,
# so that `rate --help` stays fast.
from rate import __version__, filesets, pipeline_cli
from rate.demos import cli as demo_cli
from rate.errors import RateError
from rate.fs import write_error
from rate.plugins import plugin_commands
from rate.profile import cli as profile_cli
from rate.results import cli as results_cli
from rate.settings import load_settings, log_to_files, redact, setup_logging
from rate.slurm import cli as slurm_cli
from rate.studies import cli as study_cli
from rate.suggest import unknown_name_message
from rate.sweep import cli as sweep_cli

log = logging.getLogger(__name__)


class Parser(argparse.ArgumentParser):
    """argparse with a did-you-mean for a mistyped command (every subparser is one too)."""

    def error(self, message: str) -> NoReturn:
        match = re.match(
            r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", message
        )
        if match and match.group(1) in ("COMMAND", "STUDY"):
            choices = re.findall(r"'([^']*)'", match.group(3)) or match.group(3).split(", ")
            message = unknown_name_message("command", match.group(2), choices)
        if re.match(r"argument \S+: (must be|expected) ", message):
            # A flag's value out of its declared range (rate.cli_args.Number): the line names
            # the flag, the range and the value; the usage would only push it off the screen.
            self.exit(2, f"{self.prog}: error: {message}\n")
        super().error(message)


# Old command lines of rate's own -> new ones (plugins bring theirs): hidden, and each use
# says the new name.
ALIASES = {("plot",): ("plots",)}


def build_parser() -> tuple[argparse.ArgumentParser, dict[tuple[str, ...], tuple[str, ...]]]:
    """The parser, with the plugins' commands after rate's own, and every alias."""
    parser = Parser(prog="rate", description=__doc__)
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

    # The pipeline first, then its tools, then what plugins add.
    pipeline_cli.register(sub)
    results_cli.register(sub)
    sweep_cli.register(sub)
    profile_cli.register(sub)
    slurm_cli.register(sub)
    demo_cli.register(sub)
    study_cli.register(sub)
    aliases = dict(ALIASES)
    for plugin in plugin_commands():
        plugin.register(sub)
        aliases.update(plugin.aliases)
    _name_commands(parser)
    return parser, aliases


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Each command's parsed arguments carry its name (``rate world audit``): the sets it
    writes record it, and it stays the same wherever its handler's code moves."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        parser.set_defaults(command_name=parser.prog)
    for action in subs:
        for sub in action.choices.values():
            _name_commands(sub)


def resolve_alias(argv: list[str], aliases: dict[tuple[str, ...], tuple[str, ...]]) -> list[str]:
    """``argv`` with an old command name replaced by its new one (the longest match), saying
    so on stderr once."""
    for old in sorted(aliases, key=len, reverse=True):
        if tuple(argv[: len(old)]) == old:
            new = aliases[old]
            print(
                f"rate: '{' '.join(('rate', *old))}' is now '{' '.join(('rate', *new))}'; "
                "the old name still works for now",
                file=sys.stderr,
            )
            return [*new, *argv[len(old) :]]
    return argv


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
    # OpenMP threads that spin while they wait make torch several times slower when the cores
    # are shared (BENCHMARKS.md); yielding costs little when they are not. Set before any
    # command loads torch's OpenMP runtime; an explicit setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    load_settings()
    parser, aliases = build_parser()
    argv, level = split_loudness(sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(resolve_alias(argv, aliases))
    args.verbose, args.quiet = level == "DEBUG", level == "WARNING"
    if args.quiet:  # warnings only: no progress bars either (ours and transformers')
        os.environ["RATE_PROGRESS"] = "0"
    setup_logging(level)
    try:
        from rate.outputs import check_out, claim_out

        check_out(args)  # before any work: --out never replaces an input or a stage's file
        # No other command writes it meanwhile; the sets it writes say which command wrote them.
        with claim_out(args), filesets.written_by(args.command_name):
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
