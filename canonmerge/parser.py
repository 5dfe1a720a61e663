"""The command line's parser: every refusal is one line naming the flag and the value as typed.

Why: argparse answers a value its type function refuses with the whole usage block (eight to ten
lines for ``check``) and quotes the value with ``repr``; a float flag takes ``1e309`` as
infinity, so a later range check names ``inf``, a value the user never typed.  Here a value is
refused where it is converted, naming the flag the user typed and the value shell-quoted exactly
as typed (``--replicas ''``), and a float must be finite.  Any other parser error (an unknown
option, a missing argument) is one line too, pointing at ``-h`` for the usage."""

from __future__ import annotations

import argparse
import math
import shlex
from typing import Any, NoReturn

from spec import UsageError

# what a builtin type function's refusal means, in the words of the range checks
_TYPE_PROBLEM = {int: "must be an integer", float: "must be a finite number"}


def flag_name(action: argparse.Action) -> str:
    """The spelling a user sees: the long option (``--max-arity``), else the metavar."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return metavar or action.dest.upper()


def as_typed(text: str) -> str:
    """``text`` as a shell would need it typed: ``''`` for the empty string, quotes where needed."""
    return shlex.quote(text)


class Parser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of exiting, so that ``main`` reports every
    error the same way (exit 2, and a JSON document when ``--json`` was asked for).  Sub-parsers
    inherit it.  The error carries no usage block: one line on stderr, as docs/CLI.md promises."""

    typed: dict[str, list[str]]  # flag -> the strings typed for it, in this parser's last parse

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse, and ``namespace._typed``: each flag's strings as typed (a range check
        after parsing quotes those, not ``1e+300`` for a typed ``1e300``)."""
        self.typed = {}
        parsed, extras = super().parse_known_args(args, namespace)
        merged = dict(getattr(parsed, "_typed", {}))  # a subcommand's, copied up by argparse
        for flag, strings in self.typed.items():
            merged.setdefault(flag, []).extend(strings)
        parsed._typed = merged
        return parsed, extras

    def _refuse(self, action: argparse.Action, text: str, problem: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {flag_name(action)} {as_typed(text)}: {problem}", "")

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        convert = self._registry_get("type", action.type, action.type)
        if not callable(convert):
            return super()._get_value(action, arg_string)  # a programming error: argparse's own
        try:
            value = convert(arg_string)
        except argparse.ArgumentTypeError as exc:
            self._refuse(action, arg_string, str(exc))
        except (TypeError, ValueError):
            name = getattr(convert, "__name__", "value").strip("_").replace("_", " ")
            self._refuse(action, arg_string, _TYPE_PROBLEM.get(convert) or f"is not a valid {name}")
        if isinstance(value, float) and not math.isfinite(value):
            self._refuse(action, arg_string, "must be a finite number")
        if action.option_strings:
            self.typed.setdefault(flag_name(action), []).append(arg_string)
        return value

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            if isinstance(action, argparse._SubParsersAction):
                super()._check_value(action, value)  # an unknown command word: error() below
            choices = ", ".join(map(str, action.choices))
            self._refuse(action, str(value), f"must be one of {choices}")

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see '{self.prog} -h')", "")
