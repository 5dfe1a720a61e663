"""What the exhaustive checks count: one ``Tally`` per registered check (cases, violations or
witnesses, the first trace per universe) and one ``Row`` per arity of a universe's table.

Plain records, apart from the search, so that shards, the runner and the replay can add them up
without importing the search itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec import Check


@dataclass
class Tally:
    """What one registered check found, accumulated over universes: cases checked and
    violations (ALWAYS) or witnesses (SOMETIMES)."""

    check: Check
    unit: str
    checked: int = 0
    found: int = 0
    traces: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    describe: Callable[[Tally], str] | None = None
    _traced: set[str] = field(default_factory=set)

    def fail(self, universe: str, make: Callable[[], dict[str, Any]] | None) -> None:
        """Count a violation; build a trace for the first one in each universe (``make`` is
        ``None`` where the universe's fragments cannot be written into a trace)."""
        self.found += 1
        if make is not None and universe not in self._traced:
            self._traced.add(universe)
            self.traces.append(make())

    def figure(self) -> str | None:
        return self.describe(self) if self.describe is not None else None


def digests_per_set(t: Tally) -> str:
    """The C3 matrix's figure: the most distinct digests any one set rendered to."""
    most = t.details.get("max digests per set", 0)
    return f"{most} digest{'s' if most != 1 else ''} per set / {t.checked:,} {t.unit}"


class Tallies(dict):
    """One ``Tally`` per registered check, created on first use."""

    def of(self, check: Check, unit: str, describe: Callable[[Tally], str] | None = None) -> Tally:
        if check not in self:
            self[check] = Tally(check, unit, describe=describe)
        return self[check]


@dataclass
class Row:
    """One line of a universe's table: what the exhaustive matrix saw at arity N."""

    n: int
    permutations: int = 0
    trees: int = 0
    redeliveries: int = 0
    canonical_digests: int = 0
    bag_digests: int = 0
    violations: int = 0
