"""No command writes over its own input or a stage's published file (rate.outputs).

The sweep below finds every command of ``rate`` (the world's included) that takes ``--out`` and
a path input, points ``--out`` at that input and runs the real entry point: each must refuse
in one line before any work, and the input keeps its bytes.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from rate.cli import build_parser, main
from rate.cli_args import Commas, Number
from rate.errors import ConfigError


def _commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub.description and "deprecated" in (sub.description or ""):
                    continue
                yield from _commands(sub, (*prefix, name))
    if prefix:
        yield prefix, parser


def _path_inputs(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.type is Path and a.dest != "out"]


def _argv_with(
    command: tuple[str, ...], parser: argparse.ArgumentParser, target: argparse.Action, file: Path
) -> list[str]:
    """``command`` with ``target`` and --out both set to ``file``, and every other required
    argument given a value that parses."""
    argv = [*command]
    for action in parser._actions:
        if action.dest in ("help", "out") or isinstance(action, argparse._SubParsersAction):
            continue
        if action is not target and not action.required:
            continue
        value = str(file) if action is target else (action.choices and list(action.choices)[0])
        number = isinstance(action.type, (Number, Commas)) or action.type in (int, float)
        value = value or ("1" if number else str(file.parent / "x"))
        if action.option_strings:
            argv += [action.option_strings[0], str(value)]
        else:
            argv.append(str(value))
    return [*argv, "--out", str(file)]


CASES = [
    (command, target.dest)
    for command, parser in _commands(build_parser()[0])
    if any(a.dest == "out" for a in parser._actions)
    for target in _path_inputs(parser)
]


def test_the_sweep_finds_the_commands_with_an_out_and_an_input():
    found = {" ".join(c) for c, _ in CASES}
    assert {"results", "world audit", "world certify", "world assess"} <= found, found
    assert len(CASES) >= 15


@pytest.mark.parametrize(("command", "dest"), CASES, ids=[f"{' '.join(c)}:{d}" for c, d in CASES])
def test_out_set_to_an_input_is_refused_before_any_work(command, dest, tmp_path, capsys):
    parsers = dict(_commands(build_parser()[0]))
    parser = parsers[command]
    (target,) = [a for a in parser._actions if a.dest == dest]
    file = tmp_path / "input.json"
    file.write_text('{"keep": true}\n')
    argv = _argv_with(command, parser, target, file)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "which this command reads" in err and err.count("\n") == 0, err
    assert file.read_text() == '{"keep": true}\n'


def test_a_second_command_writing_the_same_out_stops_at_once(tmp_path, monkeypatch, capsys):
    """Issue 45, item 7: every command's --out is locked while the command runs; a second one
    given the same --out names the first and writes nothing (here the first is this process's
    other descriptor of the lock, as a second process would see it)."""
    from rate.errors import BusyError
    from rate.provenance import folder_lock

    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "project"))
    out = tmp_path / "reports" / "results.json"
    with folder_lock(out.parent, lambda pid: BusyError(pid), name=".results.json.out.lock"):
        assert main(["results", "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert f"--out {out}: another rate command (pid " in said and "choose another --out" in said
    assert not out.exists()
    # Released (the first command ended, however): the next one takes it.
    main(["results", "--out", str(out)])
    assert "another rate command" not in capsys.readouterr().err


def test_out_may_not_replace_another_commands_output(tmp_path, monkeypatch, capsys):
    """Issue 45, item 2: no command writes over a file another command wrote (a file set
    records its writer); the same command's rerun replaces its own set."""
    from rate.filesets import WRITER_KEY, check_set, write_set, written_by

    audit = tmp_path / "a.json"
    with written_by("rate world audit"):
        write_set(audit, {"candidates": []}, {tmp_path / "a.md": b"# audit"})
    assert check_set(audit)[WRITER_KEY] == "rate world audit"
    from rate.outputs import check_out

    ns = argparse.Namespace
    check_out(
        ns(out=audit, command_name="rate world audit")
    )  # its own output: a rerun replaces the set
    check_out(ns(out=tmp_path / "other.json", command_name="rate world certify"))
    for out in (audit, tmp_path / "a"):  # the primary, or OUT whose OUT.json is the primary
        with pytest.raises(ConfigError, match=r"would write over .*a\.json, which another"):
            check_out(ns(out=out, command_name="rate world certify"))
    write_set(tmp_path / "b.json", {}, {})  # written from Python: no writer, not claimed
    check_out(ns(out=tmp_path / "b.json", command_name="rate world certify"))


def test_every_command_knows_its_name(tmp_path):
    """What a set records as its writer: the command's name, whatever module handles it."""
    parser, _ = build_parser()
    assert parser.parse_args(["world", "audit"]).command_name == "rate world audit"
    assert parser.parse_args(["results"]).command_name == "rate results"
