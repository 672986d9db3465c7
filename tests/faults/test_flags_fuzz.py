"""Every numeric flag of every command, fuzzed: each declares its range (a
:class:`rate.cli_args.Number`, or a comma list of them), and NaN, infinities, negatives, zero,
huge and wrong-typed values are refused by the parser with one line naming the flag and the
range (no usage dump), before any work and without writing anything (issue 45, items 1 and 9: the flags are
settings too).

The flags are found by walking the real parser (rate's commands and the world's, aliases
left out), not listed: a new numeric flag declared with a bare ``type=int`` fails the first
test.
"""

from __future__ import annotations

import argparse
import math

import pytest

from rate.cli import build_parser, main
from rate.cli_args import Commas, Number

PROBES = ["nan", "inf", "-inf", "-1", "0", "1e30", "10" + "0" * 30, "12abc", ""]


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...], seen: set[int]):
    if id(parser) in seen:  # an alias: the same parser under another name
        return
    seen.add(id(parser))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name), seen)
        elif action.option_strings:
            yield path, action


ACTIONS = list(_walk(build_parser()[0], (), set()))
NUMERIC = [
    (path, a)
    for path, a in ACTIONS
    if isinstance(a.type, (Number, Commas)) or a.type in (int, float)
]
IDS = [f"{' '.join(path)} {a.option_strings[-1]}" for path, a in NUMERIC]


def _number(action: argparse.Action) -> Number:
    return action.type.item if isinstance(action.type, Commas) else action.type


def test_every_numeric_flag_declares_its_range() -> None:
    bare = [
        f"rate {' '.join(path)} {a.option_strings[-1]}"
        for path, a in ACTIONS
        if a.type in (int, float)
        or (
            a.type is None
            and isinstance(a.default, (int, float))
            and not isinstance(a.default, bool)
            and a.nargs != 0
        )
    ]
    assert not bare, f"numeric flags without a declared range (use rate.cli_args.Number): {bare}"
    assert len(NUMERIC) >= 60  # the walk found the commands (rate's and the world's)


@pytest.mark.parametrize(("path", "action"), NUMERIC, ids=IDS)
def test_the_flags_type_refuses_what_is_out_of_range(path, action) -> None:
    number = _number(action)
    for probe in PROBES:
        try:
            value = action.type(probe)
        except argparse.ArgumentTypeError as err:
            message = str(err)
            assert "\n" not in message and ("must be" in message or "expected" in message)
            assert probe in message or probe == "" or "got" in message, message
            continue
        # Accepted: then the value is a finite number within the range it declares.
        values = value if isinstance(value, list) else [value]
        for v in values:
            bound = number.bound
            assert isinstance(v, number.kind) and math.isfinite(v), (probe, v)
            assert bound.problem(v) is None
            assert bound.high is not None, "every numeric flag has an upper end"


@pytest.mark.parametrize(("path", "action"), NUMERIC, ids=IDS)
def test_the_command_stops_before_any_work(path, action, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.chdir(tmp_path)
    flag = action.option_strings[-1]
    for probe in ("nan", "-1", "1e30"):
        try:
            action.type(probe)
            continue  # in the flag's range (a learning rate of 1e30): the parse goes on
        except argparse.ArgumentTypeError:
            pass
        with pytest.raises(SystemExit) as stop:
            main([*path, flag, probe])
        assert stop.value.code == 2
        said = capsys.readouterr().err.strip().splitlines()
        assert len(said) == 1, said  # one line: the usage would push it off the screen
        last = said[0]
        assert f"argument {flag}" in last or f"argument {action.option_strings[0]}" in last, last
        assert "must be" in last or "expected" in last, last
    assert list(tmp_path.iterdir()) == []  # nothing written, not even PROJECT_DIR
