"""What a part hands back to the command line: claim results plus detail tables and data.

Parts build these; ``canonmerge`` only prints them.  Keeping the record here (not in the CLI)
lets every part report without importing the CLI, so data flows one way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from spec.claims import ClaimResult


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows}


@dataclass
class PartReport:
    part: str
    results: list[ClaimResult] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


class Progress(Protocol):
    """Progress sink for long work: ``progress(task, done, total)``; total 0 means unknown."""

    def __call__(self, task: str, done: int, total: int) -> None: ...


def no_progress(task: str, done: int, total: int) -> None:
    """The silent sink, for library use and tests."""
