"""The instruments' verdict on themselves: were the canaries reported, and was the C3 search as
large and as faithful as it claims?

From the merged shard results (``shards.merge``) of a run whose C3 families ran:

- each canary (``modelcheck.canary``) must have been reported by every C3 family that ran —
  otherwise the run fails naming the instrument that went blind;
- per universe and N (and for the canaries' own shards), the distinct valid schedules each
  family rendered must equal its closed form (``coverage.closed_forms``), printed beside it;
- every C3 shard must have rebuilt a sample of its schedules from nothing and found each state
  fed to the render equal to it, and the comparison must have seen its own control."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck import canary as canaries
from modelcheck import properties as P
from modelcheck.backend import Universe
from modelcheck.checks import Row
from modelcheck.coverage import Seen, closed_forms
from modelcheck.shards import Merged
from modelcheck.tallies import Tally
from spec import Check, ClaimResult, Table

UNITS = {P.PERMUTATIONS: "permutations", P.MERGE_TREES: "trees", P.REDELIVERIES: "re-deliveries"}


@dataclass
class Judged:
    results: list[ClaimResult] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _row_count(rows: Sequence[Row], n: int, unit: str) -> int:
    column = {"permutations": "permutations", "trees": "trees", "re-deliveries": "redeliveries"}[unit]
    return sum(getattr(r, column) for r in rows if r.n == n)


@dataclass(frozen=True)
class Cell:
    """One (run or canary, universe, N, family) of the coverage table."""

    canary: str
    universe: str
    n: int
    unit: str
    closed: int
    seen: Seen
    row: int                         # what the universe's table reports

    @property
    def exact(self) -> bool:
        s = self.seen
        return s.distinct == s.count == self.row == self.closed and not s.invalid and not s.repeated

    def to_json(self) -> dict[str, Any]:
        s = self.seen
        return {"canary": self.canary or None, "universe": self.universe, "n": self.n, "family": self.unit,
                "checked": s.count, "distinct": s.distinct, "invalid": s.invalid, "repeated": s.repeated,
                "reported": self.row, "closed_form": self.closed, "sampled": s.sampled,
                "fed_otherwise": s.mismatched, "exact": self.exact}


def _cells(merged: Merged, universes: Sequence[Universe], max_arity: int, redeliveries: int,
           families: Sequence[Check]) -> list[Cell]:
    wanted = [(u.name, "", n, merged.rows.get(u.name, [])) for u in universes
              for n in range(1, min(max_arity, len(u.fragments)) + 1)]
    wanted += [(canaries.UNIVERSE, c, canaries.ARITY, merged.canary_rows.get(c, [])) for c in canaries.NAMES]
    cells = []
    for name, canary, n, rows in wanted:
        forms = closed_forms(n, redeliveries)
        for family in families:
            unit = UNITS[family]
            seen = merged.coverage.get((canary, name, n, unit), Seen())
            cells.append(Cell(canary, name, n, unit, forms[unit], seen, _row_count(rows, n, unit)))
    return cells


def _unjudged(merged: Merged, cells: Sequence[Cell]) -> list[str]:
    """What the shards fed to their renders but no cell holds to a closed form: the cells are
    built from the run's universes, the coverage from what the shards ran, so a universe or N the
    table leaves out shows here."""
    held = {(c.canary, c.universe, c.n, c.unit) for c in cells}
    return [f"{name} N={n} {unit}" + (f" (canary {canary})" if canary else "")
            for (canary, name, n, unit) in merged.coverage if (canary, name, n, unit) not in held]


def _bag_short(merged: Merged, universes: Sequence[Universe], max_arity: int) -> list[str]:
    """The BagMerge orders checked beside their closed form, the sum of n! over every universe
    and 2 <= N <= its top: an arity whose bag shard was never planned or run shows here."""
    ran = P.BAG_ORDER in merged.tallies        # no early return: a skipped comparison would pass
    checked = merged.tallies.get(P.BAG_ORDER, Tally(P.BAG_ORDER, "permutations")).checked
    closed = sum(math.factorial(n) for u in universes
                 for n in range(2, min(max_arity, len(u.fragments)) + 1)) if ran else 0
    return [] if checked == closed else [f"BagMerge orders: {checked:,} checked, closed form {closed:,}"]


def _canary_seconds(merged: Merged, name: str) -> float:
    return sum(c["cpu_seconds"] for c in merged.shard_costs if c["shard"].startswith(f"canary {name}:"))


def _canary_rows(merged: Merged, families: Sequence[Check]) -> tuple[list[ClaimResult], dict[str, Any], list[str]]:
    arrival = merged.canaries.get(canaries.ARRIVAL, {})
    caught = {f: arrival[f].found if f in arrival else 0 for f in families}
    # a split must be recorded AND counted as a violation: the count is what fails a real row
    shard_tallies = merged.canaries.get(canaries.SHARDS, {})
    split = {f: (canaries.SHARDS, f.name, canaries.UNIVERSE, canaries.ARITY) in merged.split
             and f in shard_tallies and shard_tallies[f].found >= 1 for f in families}
    notes, results = [], []
    blind = [f.name for f in families if not caught[f]]
    figure = (f"caught by {', '.join(f'{UNITS[f]} ({caught[f]:,})' for f in families)}" if not blind
              else f"BLIND: not reported by {', '.join(blind)}")
    if blind:
        notes.append(f"instrument went blind: {canaries.WATCHES[canaries.ARRIVAL]} did not report the "
                     f"order-by-arrival canary ({', '.join(blind)}); this run's C3 verdict cannot be trusted")
    results.append(P.CANARY_ARRIVAL.holds_if(not blind, figure, _canary_seconds(merged, canaries.ARRIVAL), **{"violations_reported": {
        UNITS[f]: caught[f] for f in families}, "universe": canaries.UNIVERSE, "n": canaries.ARITY}))
    missed = [f.name for f in families if not split[f]]   # a split is only counted when no shard saw one
    figure = (f"caught across {len(_canary_shards(merged))} shards by {', '.join(UNITS[f] for f in families)}"
              if not missed else f"BLIND: not reported by {', '.join(missed)}")
    if missed:
        notes.append(f"instrument went blind: {canaries.WATCHES[canaries.SHARDS]} did not report the "
                     f"shard-salted canary ({', '.join(missed)}); shards that render one set differently "
                     "would pass this run")
    results.append(P.CANARY_SHARDS.holds_if(not missed, figure, _canary_seconds(merged, canaries.SHARDS), **{
        "split_sets_reported": {UNITS[f]: split[f] for f in families}}))
    data = {canaries.ARRIVAL: {"watches": canaries.WATCHES[canaries.ARRIVAL], "seen": not blind,
                               "violations": {UNITS[f]: caught[f] for f in families}},
            canaries.SHARDS: {"watches": canaries.WATCHES[canaries.SHARDS], "seen": not missed,
                              "split_sets": {UNITS[f]: split[f] for f in families}}}
    return results, data, notes


def _canary_shards(merged: Merged) -> list[str]:
    return [c["shard"] for c in merged.shard_costs if c["shard"].startswith(f"canary {canaries.SHARDS}:")]


def judge(merged: Merged, universes: Sequence[Universe], max_arity: int, redeliveries: int,
          families: Sequence[Check]) -> Judged:
    """The instrument rows of a run whose C3 ``families`` ran (none when none ran)."""
    out = Judged()
    if not families:
        return out
    rows, canary_data, notes = _canary_rows(merged, families)
    out.results += rows
    out.notes += notes
    cells = _cells(merged, universes, max_arity, redeliveries, families)
    off = [c for c in cells if not c.exact]
    unjudged = _unjudged(merged, cells) + _bag_short(merged, universes, max_arity)
    total = sum(c.closed for c in cells)
    figure = (f"{len(cells)} counts (universe x N x family, canaries included) = closed form; "
              f"{total:,} schedules" if not off and not unjudged else
              f"{len(off)} of {len(cells)} counts differ from the closed form, e.g. "
              f"{off[0].universe} N={off[0].n} {off[0].unit}: {off[0].seen.distinct:,} distinct of "
              f"{off[0].seen.count:,} checked, closed form {off[0].closed:,}" if off else
              f"{len(unjudged)} count(s) not held to their closed form, e.g. {unjudged[0]}")
    if off or unjudged:
        out.notes.append("instrument went blind: the C3 enumeration did not check every schedule it counts "
                         f"({figure})")
    out.results.append(P.COVERAGE_COUNTS.holds_if(not off and not unjudged, figure, cells=len(cells),
                                                  differing=len(off), schedules=total))
    seen = Seen()
    for c in cells:
        seen.add(c.seen)
    canary_seen = Seen()
    for c in cells:
        if c.canary:
            canary_seen.add(c.seen)
    ok = not seen.mismatched and not merged.unsampled and canary_seen.probes > 0 and \
        canary_seen.probes_seen == canary_seen.probes
    if seen.mismatched:
        figure = (f"{seen.mismatched:,} of {seen.sampled:,} sampled schedules fed in another arrival order "
                  f"than reported, e.g. {seen.first_mismatch}")
    elif merged.unsampled:
        figure = f"{len(merged.unsampled)} shard(s) with no schedule rebuilt, e.g. {merged.unsampled[0]}"
    elif not ok:
        figure = (f"BLIND: the comparison saw {canary_seen.probes_seen} of {canary_seen.probes} states that "
                  "arrived in another order")
    else:
        figure = (f"0 / {seen.sampled:,} sampled schedules fed otherwise (every shard sampled); the "
                  f"comparison saw {canary_seen.probes_seen} of {canary_seen.probes} controls")
    if not ok:
        out.notes.append(f"instrument went blind: shared unions vs. from-scratch build: {figure}")
    out.results.append(P.COVERAGE_ARRIVAL.holds_if(ok, figure, sampled=seen.sampled, fed_otherwise=seen.mismatched,
                                                   unsampled_shards=merged.unsampled, controls=canary_seen.probes,
                                                   controls_seen=canary_seen.probes_seen))
    out.tables.append(_coverage_table(cells, families))
    out.tables.append(Table("modelcheck instruments: canaries through the run's own pipeline",
                            ["instrument", "negative control", "outcome", "figure"],
                            [[r.check, _control(r.check), r.outcome.value, r.figure] for r in out.results]))
    canary_cpu = sum(_canary_seconds(merged, name) for name in canaries.NAMES)
    out.data = {"canary": canary_data | {"cpu_seconds": round(canary_cpu, 4),
                                         "share_of_cpu": round(canary_cpu / merged.cpu_seconds, 4)
                                         if merged.cpu_seconds else None},
                "coverage": {"cells": [c.to_json() for c in cells], "sampled": seen.sampled,
                             "fed_otherwise": seen.mismatched, "first_fed_otherwise": seen.first_mismatch or None,
                             "controls": canary_seen.probes, "controls_seen": canary_seen.probes_seen,
                             "unsampled_shards": merged.unsampled}}
    return out


def _control(check: str) -> str:
    return {P.CANARY_ARRIVAL.name: f"order-by-arrival render ({canaries.UNIVERSE}, N = {canaries.ARITY})",
            P.CANARY_SHARDS.name: "render salted by shard (one digest per shard)",
            P.COVERAGE_COUNTS.name: "closed forms n!, (2n-2)!/(n-1)!, surjections",
            P.COVERAGE_ARRIVAL.name: "a sampled state compared with the previous schedule's"}[check]


def _coverage_table(cells: Sequence[Cell], families: Sequence[Check]) -> Table:
    """One line per (universe, N): each family's count beside its closed form."""
    units = [UNITS[f] for f in families]
    table = Table("modelcheck coverage: schedules checked beside their closed form",
                  ["universe", "N", *[f"{u} (closed form)" for u in units], "sampled from scratch",
                   "fed otherwise"])
    by_line: dict[tuple[str, str, int], dict[str, Cell]] = {}
    for c in cells:
        by_line.setdefault((c.canary, c.universe, c.n), {})[c.unit] = c
    for (canary, name, n), line in by_line.items():
        label = f"{name} (canary {canary})" if canary else name
        table.rows.append([label, str(n)] + [f"{line[u].seen.distinct:,} ({line[u].closed:,})"
                                             + ("" if line[u].exact else " MISMATCH") for u in units]
                          + [f"{sum(c.seen.sampled for c in line.values()):,}",
                             str(sum(c.seen.mismatched for c in line.values()))])
    return table
