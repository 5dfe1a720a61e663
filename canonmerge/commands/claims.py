"""``canonmerge claims``: the claim index — every check each part registers, under its claim."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from canonmerge.printing import print_table
from spec import CLAIMS, Table, registered

PARTS = ("proofs", "modelcheck", "realstate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--part", choices=PARTS, help="only this part's checks")
    parser.add_argument("--markdown", action="store_true", help="print the markdown table the docs carry")


def load_registrations() -> None:
    """Import every part's declarations (no solver runs, no torch)."""
    import modelcheck.properties  # noqa: F401
    import proofs.catalog  # noqa: F401
    import realstate.bench.properties  # noqa: F401
    import realstate.processes.properties  # noqa: F401
    import realstate.replay.properties  # noqa: F401


def run(args: argparse.Namespace, console: Console) -> int:
    from spec.index import claims_json, markdown_table

    load_registrations()
    if args.json:
        print(json.dumps({"exit_code": 0, "claims": claims_json()}, indent=2))
    elif args.markdown:
        print(markdown_table(args.part), end="")
    else:
        for claim in CLAIMS.values():
            table = Table(f"{claim.id}: {claim.statement}", ["part", "check", "expect"],
                          [[c.part, c.name, c.expect.value] for c in registered(args.part, claim.id)])
            if table.rows:
                print_table(console, table)
    return 0
