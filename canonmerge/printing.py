"""Human tables (rich) and the JSON report.  Nothing here computes a result."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from canonmerge.terminal import terminal_safe
from spec import CLAIMS, ClaimResult, Outcome, PartReport, Table

_STYLE = {Outcome.HOLDS: "green", Outcome.FAILS: "bold red", Outcome.UNKNOWN: "yellow",
          Outcome.NOT_BUILT: "magenta", Outcome.NOT_APPLICABLE: "dim"}


def literal(text: str) -> str:
    """``text`` as it is: rich markup escaped, control characters shown as escapes (paths and
    names from users and peers may hold ``[red]`` or ``ESC``)."""
    return escape(terminal_safe(text))


def print_table(console: Console, table: Table) -> None:
    out = RichTable(title=literal(table.title), title_justify="left")
    for column in table.columns:
        out.add_column(literal(column))
    for row in table.rows:
        out.add_row(*(literal(cell) for cell in row))
    console.print(out)


def results_table(title: str, results: list[ClaimResult]) -> RichTable:
    out = RichTable(title=title, title_justify="left")
    for column in ("claim", "part", "check", "result", "key figure", "time"):
        out.add_column(column)
    for r in results:
        style = _STYLE[r.outcome]
        out.add_row(r.claim, r.part, literal(r.check), f"[{style}]{r.outcome.value}[/]", literal(r.figure),
                    f"{r.seconds:.2f}s")
    return out


def print_part(console: Console, report: PartReport) -> None:
    for table in report.tables:
        print_table(console, table)
    console.print(results_table(f"{report.part}: claims", report.results))
    for note in report.notes:
        console.print(f"note: {literal(note)}")


def claims_summary(results: list[ClaimResult]) -> list[dict[str, Any]]:
    """One entry per claim of the registry, with every row that names it."""
    summary = []
    for cid, c in CLAIMS.items():
        rows = [r for r in results if r.claim == cid]
        outcomes = {r.outcome for r in rows} - {Outcome.NOT_APPLICABLE}  # neither evidence nor failure
        if rows and not outcomes:
            overall = Outcome.NOT_APPLICABLE
        elif not rows:
            overall = Outcome.NOT_BUILT
        elif outcomes & {Outcome.FAILS, Outcome.UNKNOWN}:
            overall = Outcome.FAILS if Outcome.FAILS in outcomes else Outcome.UNKNOWN
        elif Outcome.NOT_BUILT in outcomes:
            overall = Outcome.NOT_BUILT
        else:
            overall = Outcome.HOLDS
        summary.append({"claim": cid, "statement": c.statement, "outcome": overall.value,
                        "results": [r.to_json() for r in rows]})
    return summary


def json_report(command: str, reports: list[PartReport], exit_code: int,
                environment: dict[str, Any]) -> str:
    results = [r for rep in reports for r in rep.results]
    document = {
        "command": command,
        "exit_code": exit_code,
        "environment": environment,
        "claims": claims_summary(results),
        "parts": [
            {"part": rep.part, "seconds": round(rep.seconds, 3), "data": rep.data,
             "notes": rep.notes, "tables": [t.to_json() for t in rep.tables],
             "results": [r.to_json() for r in rep.results]}
            for rep in reports
        ],
    }
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False)
