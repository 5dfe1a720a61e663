"""The options blocks of docs/CLI.md, generated from the parser itself so the man page cannot
drift from the command line (a test compares them; ``python -m canonmerge.manpage docs/CLI.md``
rewrites them in place)."""

from __future__ import annotations

import argparse
import re
import sys
from functools import partial
from pathlib import Path

from canonmerge.cli import build_parser

WIDTH = 100
BLOCK = re.compile(r"(<!-- options:(?P<name>[a-z]+) -->\n)(?P<body>.*?)(<!-- /options -->)", re.S)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = partial(argparse.HelpFormatter, width=WIDTH)
    return parser.format_help()


def options_text(command: str) -> str:
    """``canonmerge COMMAND --help`` at a fixed width, as it prints, followed by the help of each
    of its actions (``store put``, ``fragment make``, ...)."""
    sub = _subparsers(build_parser(only=command))[command]
    return "\n".join([_help(sub), *(_help(action) for action in _subparsers(sub).values())])


def commands() -> list[str]:
    return list(_subparsers(build_parser(only="")))


def render(text: str) -> str:
    """``text`` with every options block replaced by the current help of its command."""
    return BLOCK.sub(lambda m: m.group(1) + "```\n" + options_text(m.group("name")) + "```\n" + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m canonmerge.manpage docs/CLI.md", file=sys.stderr)
        return 2
    path = Path(args[0])
    path.write_text(render(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
