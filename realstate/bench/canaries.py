"""Canaries: in every run, cells built to be caught go through the same pipeline as the real cells
(``conditions.cell_rows`` -> ``decoding.decode_rows`` -> ``conditions.assemble`` ->
``structural.structural_results``), and each structural instrument must report its canary.  A
canary an instrument does not report fails that instrument's row, naming the instrument: a row
that could not have failed is not evidence.

The canaries, on the run's smallest cell (fewest fragments, smallest budget), structural rows only:

- ``arrival order``: a render that keeps arrival order and, per content id, the LAST arrival's
  bytes, whose re-delivery is a forged copy (other value bytes under the same content id).  Its
  orders decode and render differently; its re-deliveries change the bytes while every content id
  and every place stays the same (so only a comparison of bytes sees them).
- ``one order``: CanonicalMerge fed the first input order k! times, re-deliveries appending
  nothing: short of k! orders and k re-deliveries, no BagMerge order witness, BagMerge unchanged.
- ``every arrival``: a state that keeps every arrival, a re-delivered copy counted as new."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from realstate.bench import properties as P
from realstate.bench.conditions import Plan, redeliver_copy
from realstate.bench.structural import INSTRUMENTS
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fragment import Fragment
from spec import ClaimResult, Outcome


class LastArrivalWins:
    """Dedups by content id keeping the first arrival's place but the last arrival's bytes."""

    def __init__(self, items: Iterable[Fragment] = ()) -> None:
        self._items: dict[bytes, Fragment] = {}
        for f in items:
            self._items[f.content_id] = f

    def merge(self, other: Iterable[Fragment]) -> LastArrivalWins:
        return LastArrivalWins([*self, *other])

    def __iter__(self) -> Iterator[Fragment]:
        return iter(self._items.values())


class EveryArrival:
    """Keeps every arrival: a re-delivered copy counts as a new member."""

    def __init__(self, items: Iterable[Fragment] = ()) -> None:
        self._items = list(items)

    def merge(self, other: Iterable[Fragment]) -> EveryArrival:
        return EveryArrival([*self, *other])

    def __iter__(self) -> Iterator[Fragment]:
        return iter(self._items)


def _arrival(items: Sequence[Fragment], key: Callable[[Fragment], Any]) -> list[Fragment]:
    return list(items)


def forged_redelivery(fragment: Fragment) -> list[Fragment]:
    """A copy whose values are negated (every element's sign bit flips, ±0 and NaN included) but
    which carries the original's content id: equal ids, other bytes."""
    forged = Fragment(fragment.fingerprint, fragment.start, fragment.keys.clone(), -fragment.values)
    forged.content_id = fragment.content_id
    return [forged]


def no_redelivery(fragment: Fragment) -> list[Fragment]:
    return []


@dataclass(frozen=True)
class Canary:
    name: str
    engine: Engine
    plan: Callable[[int], Plan]  # k -> what the canary cell renders
    instruments: tuple[str, ...]  # the instruments that must report it (structural.INSTRUMENTS)


def _one_order(k: int) -> Plan:
    return Plan(orders=(tuple(range(k)),) * math.factorial(k), redeliver=no_redelivery, full=False)


CANARIES = (
    Canary("arrival order", dataclasses.replace(CANONICAL, name="canary: arrival order", sort=_arrival,
                                                collect=LastArrivalWins),
           lambda k: Plan(redeliver=forged_redelivery, full=False),
           ("answers over orders", "digests over orders", "re-delivery bytes")),
    Canary("one order", CANONICAL, _one_order,
           ("decoded-order coverage", "rendered-order coverage", "re-delivery coverage", "BagMerge order witness",
            "BagMerge re-delivery bytes")),
    Canary("every arrival", dataclasses.replace(CANONICAL, name="canary: every arrival", collect=EveryArrival),
           lambda k: Plan(orders=(tuple(range(k)),), redeliver=redeliver_copy, full=False),
           ("re-delivery absorbed",)),
)
ROWS = (P.BENCH_UNIQUENESS.name, P.BENCH_RENDER.name, P.BENCH_ABSORB.name, P.BENCH_BAG.name)


def seen(instrument: str, results: Sequence[ClaimResult]) -> bool:
    """Whether ``instrument`` reported the canary: its row fails and lists the canary's cell."""
    check, detail = INSTRUMENTS[instrument]
    row = next((r for r in results if r.check == check), None)
    return row is not None and row.outcome is Outcome.FAILS and bool(row.details.get(detail))


def with_canaries(results: list[ClaimResult], outcomes: dict[str, list[ClaimResult]]) -> list[ClaimResult]:
    """The structural rows, each failed (its figure naming the blind instruments) where one of its
    instruments did not report the canary built for it (``outcomes``: canary name -> the
    structural rows of its cell); what each canary showed is in the row's details."""
    found: dict[str, list[tuple[str, str, bool]]] = {check: [] for check in ROWS}
    for canary in CANARIES:
        rows = outcomes.get(canary.name, [])
        for instrument in canary.instruments:
            found[INSTRUMENTS[instrument][0]].append((instrument, canary.name, seen(instrument, rows)))
    amended = []
    for row in results:
        checks = found.get(row.check, [])
        blind = [f"{instrument} (canary {name!r})" for instrument, name, ok in checks if not ok]
        details = {**row.details, "canaries": {i: {"canary": n, "seen": ok} for i, n, ok in checks}}
        if blind:
            figure = f"BLIND: {', '.join(blind)} did not report its canary; {row.figure}"
            amended.append(dataclasses.replace(row, outcome=Outcome.FAILS, figure=figure, details=details))
        else:
            figure = f"{row.figure}; {len(checks)} of {len(checks)} instruments saw their canaries"
            amended.append(dataclasses.replace(row, figure=figure, details=details))
    return amended
