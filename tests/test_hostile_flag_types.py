"""Every flag's argparse type, walked from the parsers themselves: a value the type refuses (a
non-number for a number, NaN, infinity, an overflowing float, the empty string, a word that is
no choice) is exit 2 and one line on stderr naming the flag and the value exactly as typed — not
argparse's usage block, not ``inf`` for a typed ``1e309``.  A flag added later is covered here
without a new row: the walk finds it."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from canonmerge.cli import build_parser, main

NUMBER_TYPES = {int, float}
FREE_TEXT = {None, str, Path}  # any string is a value; what it means is the command's check
HOSTILE_NUMBERS = ["nan", "inf", "-inf", "1e309", "", "x", "0x10"]
HOSTILE_TEXT = ["", "x"]


def value_flags(parser: argparse.ArgumentParser, words: list[str]) -> Iterator[tuple[list[str], argparse.Action]]:
    """Each (command words, action) of an option that takes a value, in every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from value_flags(sub, [*words, name])
        elif action.option_strings and action.nargs != 0 and not isinstance(action, argparse._HelpAction):
            yield words, action


def hostile_values(action: argparse.Action) -> list[str]:
    """The values this action's type or choices must refuse (none for free text)."""
    if action.type in NUMBER_TYPES:
        return HOSTILE_NUMBERS
    if action.choices is not None:
        return [v for v in [*HOSTILE_TEXT, "nan"] if v not in action.choices]
    if action.type in FREE_TEXT:
        return []
    return HOSTILE_TEXT  # a type function of the command's own (offsets, budgets, PART=FLAGS)


def rows() -> list[tuple[list[str], str, str, int]]:
    out = []
    for words, action in value_flags(build_parser(), []):
        flag = max(action.option_strings, key=len)
        arity = action.nargs if isinstance(action.nargs, int) else 1
        out += [(words, flag, value, arity) for value in hostile_values(action)
                if arity == 1 or not value.startswith("-")]  # argparse takes -inf for an option there
    return out


ROWS = rows()


def test_the_walk_reaches_every_subcommand_and_the_flags_named_in_the_report():
    """The walk is not vacuous: it finds nested actions and the flags whose usage block was seen."""
    found = {(" ".join(w), f) for w, f, _, _ in ROWS}
    assert {("check", "--max-arity"), ("check", "--max-states"), ("check", "--max-depth"), ("check", "--replicas"),
            ("soak", "--op-timeout"), ("soak", "--tokens"), ("soak", "--max-seconds"),
            ("store render", "--base"), ("store clean", "--older-than"), ("audit", "--part-args"),
            ("check", "--engine"), ("fragment make", "--threads")} <= found
    assert len({w for w, _ in found}) >= 15


@pytest.mark.parametrize("words,flag,value,arity", ROWS,
                         ids=[f"{' '.join(w)} {f} {shlex.quote(v)}" for w, f, v, _ in ROWS])
def test_a_value_its_type_refuses_is_one_line_naming_the_flag_and_the_value_as_typed(
        words: list[str], flag: str, value: str, arity: int, capsys: pytest.CaptureFixture[str]) -> None:
    for position in range(arity):  # each place of a two-number flag (--tokens MIN MAX)
        values = ["8"] * arity
        values[position] = value
        try:
            typed = [f"{flag}={value}"] if value.startswith("-") else [flag, *values]  # -inf is no option
            code = main([*words, *typed])
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert f"{flag} {shlex.quote(value)}: " in lines[0] and "usage" not in lines[0].lower(), lines[0]
        assert "Traceback" not in err and "inf:" not in lines[0].replace(f"{value}:", "")


def test_json_gets_the_same_one_line_as_a_usage_document(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    try:
        code = main(["check", "--json", "--max-arity", "1e309"])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr().out
    document = json.loads(out)
    assert code == 2 and document["error"] == {"kind": "usage",
                                               "message": "canonmerge check: error: --max-arity 1e309: "
                                                          "must be an integer"}


def test_other_parser_errors_are_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["check", "--no-such-flag"], ["check", "--max-states"], ["frobnicate"], ["store", "put"]):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "-h" in err, (argv, err)


def test_a_range_check_after_parsing_quotes_the_value_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    """``1e300`` is not ``1e+300`` and ``1_0_0`` not ``100`` in the message: the user's own text."""
    for argv, says in [(["check", "--max-states", "1_0_0_0_0_0_0_0_0_0_0"], "--max-states 1_0_0_0_0_0_0_0_0_0_0: "),
                       (["prove", "--only", "C5", "--timeout", "1e300"], "--timeout 1e300: "),
                       (["soak", "--tokens", "9", "3"], "--tokens 3: ")]:  # two values: the one refused
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv,line", [
    (["check", "--max-arity", "1e309"], "canonmerge check: error: --max-arity 1e309: must be an integer"),
    (["soak", "--max-seconds", "1e309"], "canonmerge soak: error: --max-seconds 1e309: must be a finite number"),
])
def test_the_installed_command_prints_one_line(argv: list[str], line: str) -> None:
    out = subprocess.run([sys.executable, "-m", "canonmerge", *argv], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr == line + "\n" and out.stdout == ""
