"""The instruments' verdict on themselves: were the canaries reported, and was the C3 search as
large and as faithful as it claims?

From the merged shard results (``shards.merge``) of a run whose C3 families ran:

- each canary (``modelcheck.canary``) must have been reported by every C3 family that ran —
  otherwise the run fails naming the instrument that went blind;
- per universe and N (and for the canaries' own shards), the distinct valid schedules each
  family rendered must equal its closed form (``coverage.closed_forms``), printed beside it, and
  the BagMerge orders checked the sum of n!; the bag canary's count, one arity short, must be
  flagged by that same comparison;
- every C3 shard must have rebuilt a sample of its schedules from nothing and found each state
  fed to the render equal to it, and each rebuilt state equal to its schedule's first
  deliveries; the canaries' controls go through the same judgement (``fed_as_reported``) and
  must fail it, every one of them seen.

A control judged by another expression than the real data proves nothing about the real data's
judgement: a weakened judgement would pass both.  So each comparison here is one function,
applied to the real record and to its control, the control required to get the other verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck import canary as canaries
from modelcheck import properties as P
from modelcheck.backend import Universe
from modelcheck.checks import Row
from modelcheck.coverage import COPIES, COPIES_ARITY, COPIES_EXTRA, Seen, closed_forms
from modelcheck.shards import Merged, split_unseen
from modelcheck.tallies import Tallies, Tally
from modelcheck.trace import NOT_REPRODUCED
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
                "reported": self.row, "closed_form": self.closed, "sampled": s.sampled, "due": s.due,
                "fed_otherwise": s.mismatched, "built_off_schedule": s.off_schedule, "exact": self.exact}


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
            for (canary, name, n, unit) in merged.coverage
            if (canary, name, n, unit) not in held and not (canary and unit == COPIES)]   # copies: the arrival row


def _bag_arities(tops: Sequence[int], bag_orders: bool) -> list[int]:
    """The arities whose BagMerge orders a run checks: 2 <= N <= each universe's top, when the
    bag checks were selected (``bag_orders``), none otherwise."""
    return [n for top in tops for n in range(2, top + 1)] if bag_orders else []


def _bag_short(tallies: Tallies, arities: Sequence[int]) -> str:
    """'' when the BagMerge orders in ``tallies`` equal their closed form, the sum of n! over
    ``arities``; else both counts.  The one comparison of the real count and of the bag canary's."""
    checked = tallies.get(P.BAG_ORDER, Tally(P.BAG_ORDER, "permutations")).checked
    closed = sum(math.factorial(n) for n in arities)
    return "" if checked == closed else f"BagMerge orders: {checked:,} checked, closed form {closed:,}"


def _bag_counts(merged: Merged, universes: Sequence[Universe], max_arity: int,
                bag_orders: bool) -> tuple[list[str], dict[str, Any]]:
    """What is wrong with the BagMerge counts.  The real orders are held to the sum of n! over
    every universe and its arities (none when the bag checks were not selected).  The controls go
    through the same arities and comparison: the bag canary ran N = ``canary.ARITY`` alone, so it
    must equal that arity's closed form and fall short of its universe's; and a run without the
    bag checks (no count) must meet its closed form.  A comparison or an expectation that cannot
    tell these apart is reported BLIND."""
    real = _bag_arities([min(max_arity, len(u.fragments)) for u in universes], bag_orders)
    canary = merged.canaries.get(canaries.BAG, Tallies())
    short_of = _bag_short(canary, _bag_arities([canaries.ARITY], True))
    judged = [  # (what the comparison says, whether it must find the count short, what is wrong otherwise)
        (_bag_short(canary, [canaries.ARITY]), False,
         f"BLIND: the BagMerge canary did not run its N = {canaries.ARITY} shard whole"),
        (short_of, True, f"BLIND: the BagMerge canary (N = {canaries.ARITY} alone) was not found short of the "
                         f"closed form of N = 2..{canaries.ARITY}"),
        (_bag_short(Tallies(), _bag_arities([canaries.ARITY], False)), False,
         "BLIND: a run without the bag checks is held to a BagMerge count"),
        (_bag_short(merged.tallies, real), False, ""),
    ]
    wrong = [what or said for said, short, what in judged if bool(said) is not short]
    return wrong, {"watches": canaries.WATCHES[canaries.BAG], "short_of_its_universe": short_of,
                   "orders": canary.get(P.BAG_ORDER, Tally(P.BAG_ORDER, "permutations")).checked}


def _canary_seconds(merged: Merged, name: str) -> float:
    return sum(c["cpu_seconds"] for c in merged.shard_costs if c["shard"].startswith(f"canary {name}:"))


def _violations_by_shard(merged: Merged) -> dict[tuple[str, str], int]:
    """Each (canary or "", check)'s violations as its shards counted them, summed here from the
    shards' own records, plus one for each set the union found rendered apart across shards."""
    sums: dict[tuple[str, str], int] = {}
    for cost in merged.shard_costs:
        for name, found in cost["found"].items():
            sums[(cost["canary"], name)] = sums.get((cost["canary"], name), 0) + found
    for canary, name, _, _ in merged.split:
        sums[(canary, name)] = sums.get((canary, name), 0) + 1
    return sums


def _union_wrong(merged: Merged, families: Sequence[Check]) -> list[str]:
    """Where the union's violations differ from the sum of what its shards counted, the real
    check's and each canary's alike; and BLIND when no C3 family's arrival-canary violations came
    from two shards, so that a union keeping one shard's count would go unseen."""
    sums = _violations_by_shard(merged)
    unions = {("", t.check.name): t.found for t in merged.tallies.values()}
    for canary, tallies in merged.canaries.items():
        unions |= {(canary, t.check.name): t.found for t in tallies.values()}
    # a pair on one side only compares None with a count: no default stands in for a missing record
    wrong = [f"{name}{f' (canary {canary})' if canary else ''}: {unions.get((canary, name))} violations "
             f"merged, its shards counted {sums.get((canary, name))}"
             for canary, name in sorted(set(sums) | set(unions)) if sums.get((canary, name)) != unions.get((canary, name))]
    lone = [f.name for f in families if sum(1 for cost in merged.shard_costs if cost["canary"] == canaries.ARRIVAL
                                            and cost["found"].get(f.name, 0)) < 2]
    # the split judgement itself: two digests no shard counted (the fewest a split has) are one; one
    # digest, or a split its shards counted, are not
    if not split_unseen({"a", "b"}, 0) or split_unseen({"a"}, 0) or split_unseen({"a", "b"}, 1):
        wrong.append("BLIND: the union's split judgement does not tell two digests no shard counted from one "
                     "digest or a split its shards counted")
    if lone:
        wrong.append(f"BLIND: the arrival canary's violations of {', '.join(lone)} did not come from two shards, "
                     "so their sum over shards went untested")
    return wrong


def _canary_rows(merged: Merged, families: Sequence[Check]) -> tuple[list[ClaimResult], dict[str, Any], list[str]]:
    arrival = merged.canaries.get(canaries.ARRIVAL, {})
    caught = {f: arrival[f].found for f in families if f in arrival}
    expected = _arrival_expected(merged)
    absent = [f.name for f in families if f not in caught]     # its canary shard never ran the family
    # the counterexample each family recorded for the canary must reproduce when its program is run
    # again (a minimization that kept equal renders would save a trace that does not)
    unreproduced = [f.name for f in caught if not arrival[f].traces
                    or any(t.get("observed") == NOT_REPRODUCED for t in arrival[f].traces)]
    # a split must be recorded AND counted as a violation: the count is what fails a real row
    shard_tallies = merged.canaries.get(canaries.SHARDS, {})
    split = {f: (canaries.SHARDS, f.name, canaries.UNIVERSE, canaries.ARITY) in merged.split
             and f in shard_tallies and shard_tallies[f].found >= 1 for f in families}
    notes, results = [], []
    # each reason on its own (a count below one, a trace that does not reproduce), none depending on another
    # each family's count held to the canary's closed form, which must expect violations
    off = [f.name for f in caught if caught[f] != expected.get(UNITS[f], 0) or not expected.get(UNITS[f], 0)]
    blind = list(dict.fromkeys(absent + off + unreproduced))
    figure = (f"caught by {', '.join(f'{UNITS[f]} ({caught[f]:,})' for f in families)} = closed form" if not blind
              else f"BLIND: not reported by {', '.join(blind)}"
              + (f" (no tally: the canary never ran {', '.join(absent)})" if absent else "")
              + (f" (violations beside the closed form: {', '.join(f'{UNITS[f]} {caught[f]:,} of {expected.get(UNITS[f], 0):,}' for f in caught if f.name in off)})" if off else "")
              + (f" (no trace that reproduces: {', '.join(unreproduced)})" if unreproduced else ""))
    if blind:
        notes.append(f"instrument went blind: {canaries.WATCHES[canaries.ARRIVAL]} did not report the "
                     f"order-by-arrival canary ({', '.join(blind)}); this run's C3 verdict cannot be trusted")
    results.append(P.CANARY_ARRIVAL.holds_if(not blind, figure, _canary_seconds(merged, canaries.ARRIVAL), **{"violations_reported": {
        UNITS[f]: caught.get(f) for f in families}, "closed_form": expected, "universe": canaries.UNIVERSE,
        "n": canaries.ARITY}))
    missed = [f.name for f in families if not split[f]]   # a split is only counted when no shard saw one
    summed = _union_wrong(merged, families)
    figure = (f"BLIND: not reported by {', '.join(missed)}" if missed else "; ".join(summed[:2]) if summed else
              f"caught across {len(_canary_shards(merged))} shards by {', '.join(UNITS[f] for f in families)}; "
              "every check's violations merged as the sum of its shards'")
    if missed:
        notes.append(f"instrument went blind: {canaries.WATCHES[canaries.SHARDS]} did not report the "
                     f"shard-salted canary ({', '.join(missed)}); shards that render one set differently "
                     "would pass this run")
    if summed:
        notes.append(f"instrument went blind: the union of shard results did not add up the shards' violations "
                     f"({'; '.join(summed)}); a violation found in one shard could be lost")
    results.append(P.CANARY_SHARDS.holds_if(not missed and not summed, figure, _canary_seconds(merged, canaries.SHARDS),
                                            **{"split_sets_reported": {UNITS[f]: split[f] for f in families},
                                               "sums_differing": summed}))
    data = {canaries.ARRIVAL: {"watches": canaries.WATCHES[canaries.ARRIVAL], "seen": not blind,
                               "violations": {UNITS[f]: caught.get(f) for f in families}},
            canaries.SHARDS: {"watches": canaries.WATCHES[canaries.SHARDS], "seen": not missed,
                              "split_sets": {UNITS[f]: split[f] for f in families}}}
    return results, data, notes


def _arrival_expected(merged: Merged) -> dict[str, int]:
    """The arrival canary's violations per family as its shards counted them without the search
    (``canary.arrival_violations``), summed."""
    out: dict[str, int] = {}
    for cost in merged.shard_costs:
        if cost["canary"] == canaries.ARRIVAL:
            for unit, count in cost["expected"].items():
                out[unit] = out.get(unit, 0) + count
    return out


def _canary_shards(merged: Merged) -> list[str]:
    return [c["shard"] for c in merged.shard_costs if c["shard"].startswith(f"canary {canaries.SHARDS}:")]


def fed_as_reported(seen: Seen, unsampled: Sequence[str]) -> bool:
    """The one judgement of what the C3 renders were fed: no sampled state differed from its
    from-scratch build, no from-scratch build from its schedule's first deliveries, and no shard
    went unsampled.  The real samples must pass it; each control comparison (a state compared
    with another schedule's) must fail it."""
    return not seen.mismatched and not seen.off_schedule and not unsampled


def sampled_as_due(seen: Seen) -> bool:
    """The one judgement of the sample's size: as many schedules rebuilt from nothing as the
    sampling rule owes for those streamed (``coverage.samples_due``, counted apart from the
    watcher).  A sample one short of its due count must fail it."""
    return seen.sampled == seen.due


def _arrival_wrong(seen: Seen, unsampled: Sequence[str]) -> list[str]:
    """What the arrival-order row's judgement finds wrong: the real samples through
    ``fed_as_reported``, and each comparison's controls through it too — those it reported must
    fail it, those it missed (every control must be seen) must pass it like real data; and the
    sample's size through ``sampled_as_due``, with a sample one short as its control."""
    control = seen.control or Seen()
    state = f"BLIND: the state comparison saw {control.mismatched} of {control.sampled} controls"
    schedule = f"BLIND: the schedule comparison saw {control.off_schedule} of {control.sampled} controls"
    judged = [  # (record, its unsampled shards, the verdict it must get, what is wrong otherwise)
        (seen, unsampled, True, ""),
        (Seen(mismatched=control.mismatched), [], False, state),
        (Seen(mismatched=control.sampled - control.mismatched), [], True, state),
        (Seen(off_schedule=control.off_schedule), [], False, schedule),
        (Seen(off_schedule=control.sampled - control.off_schedule), [], True, schedule),
    ]
    sized = [  # (record, the verdict it must get, what is wrong otherwise)
        (seen, True, f"{seen.sampled:,} schedules rebuilt from nothing, the sampling rule owes {seen.due:,}"),
        (Seen(sampled=seen.due - 1, due=seen.due), False, "BLIND: a sample one short of its due count passed"),
    ]
    return ([what for record, shards, verdict, what in judged if fed_as_reported(record, shards) is not verdict]
            + [what for record, verdict, what in sized if sampled_as_due(record) is not verdict])


def _copies_wrong(merged: Merged) -> tuple[Seen, list[str]]:
    """The copy-numbering control of every canary C3 shard (``coverage.copies_as_scheduled``)
    through ``fed_as_reported``: its builds must pass it, each of its controls (a state against
    another sequence's build) must fail it; and its count must be the closed form of
    re-deliveries once per such shard, so that a control that built nothing does not pass."""
    copies = Seen()
    for (canary, _, _, family), seen in merged.coverage.items():
        if canary and family == COPIES:
            copies.add(seen)
    control = copies.control or Seen()
    shards = sum(1 for c in merged.shard_costs if c["canary"] in canaries.NAMES and c["kind"] == "c3")
    closed = closed_forms(COPIES_ARITY, COPIES_EXTRA)["re-deliveries"] * shards
    blind = f"BLIND: the copy-numbering comparison saw {control.mismatched} of {control.sampled} controls"
    schedule = f"BLIND: the copies' schedule comparison saw {control.off_schedule} of {control.sampled} controls"
    judged = [  # (record, the verdict it must get, what is wrong otherwise)
        (copies, True, ""),
        (Seen(mismatched=control.mismatched), False, blind),
        (Seen(mismatched=control.sampled - control.mismatched), True, blind),
        (Seen(off_schedule=control.off_schedule), False, schedule),
        (Seen(off_schedule=control.sampled - control.off_schedule), True, schedule),
    ]
    wrong = [what for record, verdict, what in judged if fed_as_reported(record, []) is not verdict]
    if control.invalid:
        wrong.append(f"BLIND: the copy-numbering control changed the originals of {control.invalid:,} builds, "
                     "not their copies alone")
    if copies.count != closed or not closed:
        wrong.append(f"BLIND: the copy-numbering control built {copies.count:,} schedules, closed form {closed:,}")
    return copies, wrong


def _arrival_row(cells: Sequence[Cell], merged: Merged, out: Judged) -> None:
    seen = Seen()
    for c in cells:
        seen.add(c.seen)
    control = seen.control or Seen()
    copies, copies_wrong = _copies_wrong(merged)
    wrong = _arrival_wrong(seen, merged.unsampled) + copies_wrong
    blind = [w for w in wrong if w]
    if blind:
        figure = "; ".join(dict.fromkeys(blind))
    elif seen.mismatched:
        figure = (f"{seen.mismatched:,} of {seen.sampled:,} sampled schedules fed in another arrival order "
                  f"than reported, e.g. {seen.first_mismatch}")
    elif seen.off_schedule:
        figure = (f"{seen.off_schedule:,} of {seen.sampled:,} schedules rebuilt from nothing into other items "
                  f"than the schedule's first deliveries, e.g. {seen.first_off_schedule}")
    elif merged.unsampled:
        figure = f"{len(merged.unsampled)} shard(s) with no schedule rebuilt, e.g. {merged.unsampled[0]}"
    elif copies.mismatched:
        figure = (f"{copies.mismatched:,} of {copies.count:,} schedules with {COPIES_EXTRA} re-deliveries built from "
                  f"other copies than their schedule's, e.g. {copies.first_mismatch}")
    elif copies.off_schedule:
        figure = (f"{copies.off_schedule:,} of {copies.count:,} schedules with {COPIES_EXTRA} re-deliveries built "
                  "from other objects than their schedule's copies (a copy that is another's object)")
    else:
        figure = (f"0 / {seen.sampled:,} sampled schedules (as the sampling rule owes) fed otherwise or built off "
                  f"their schedule (every shard sampled); the comparisons saw {control.mismatched} and {control.off_schedule} "
                  f"of {control.sampled} controls; copies numbered as scheduled in {copies.count:,} schedules with "
                  f"{COPIES_EXTRA} re-deliveries")
    if wrong:
        out.notes.append(f"instrument went blind: shared unions vs. from-scratch build vs. schedule: {figure}")
    out.results.append(P.COVERAGE_ARRIVAL.holds_if(not wrong, figure, sampled=seen.sampled, due=seen.due,
                                                   fed_otherwise=seen.mismatched, built_off_schedule=seen.off_schedule,
                                                   unsampled_shards=merged.unsampled, controls=control.sampled,
                                                   controls_seen=control.mismatched,
                                                   controls_seen_by_schedule=control.off_schedule))
    out.data["coverage"] = {"sampled": seen.sampled, "due": seen.due, "fed_otherwise": seen.mismatched,
                            "first_fed_otherwise": seen.first_mismatch or None,
                            "built_off_schedule": seen.off_schedule,
                            "first_built_off_schedule": seen.first_off_schedule,
                            "controls": control.sampled, "controls_seen": control.mismatched,
                            "controls_seen_by_schedule": control.off_schedule,
                            "unsampled_shards": merged.unsampled,
                            "copy_numbering": {"schedules": copies.count, "built_otherwise": copies.mismatched,
                                               "controls": (copies.control or Seen()).sampled,
                                               "controls_seen": (copies.control or Seen()).mismatched}}


def _tallies_off(merged: Merged, cells: Sequence[Cell], families: Sequence[Check]) -> list[str]:
    """Each family's checked figure (its row's tally, what the run reports) against the sum of
    its real cells' closed forms: the cells hold the watcher's counts, so a tally that counts
    otherwise would report a figure no count holds."""
    off = []
    for family in families:
        due = sum(c.closed for c in cells if not c.canary and c.unit == UNITS[family])
        checked = merged.tallies[family].checked if family in merged.tallies else None
        if checked != due:
            off.append(f"{family.name}: {checked if checked is not None else 'no'} {UNITS[family]} in its tally, "
                       f"closed form {due:,}")
    return off


def judge(merged: Merged, universes: Sequence[Universe], max_arity: int, redeliveries: int,
          families: Sequence[Check], bag_orders: bool) -> Judged:
    """The instrument rows of a run whose C3 ``families`` ran (none when none ran);
    ``bag_orders``: whether the BagMerge order checks were selected."""
    out = Judged()
    if not families:
        return out
    rows, canary_data, notes = _canary_rows(merged, families)
    out.results += rows
    out.notes += notes
    cells = _cells(merged, universes, max_arity, redeliveries, families)
    off = [c for c in cells if not c.exact]
    bag_wrong, canary_data[canaries.BAG] = _bag_counts(merged, universes, max_arity, bag_orders)
    unjudged = _unjudged(merged, cells) + bag_wrong + _tallies_off(merged, cells, families)
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
    _arrival_row(cells, merged, out)
    out.tables.append(_coverage_table(cells, families))
    out.tables.append(Table("modelcheck instruments: canaries through the run's own pipeline",
                            ["instrument", "negative control", "outcome", "figure"],
                            [[r.check, _control(r.check), r.outcome.value, r.figure] for r in out.results]))
    canary_cpu = sum(_canary_seconds(merged, name) for name in (*canaries.NAMES, canaries.BAG))
    out.data["canary"] = canary_data | {"cpu_seconds": round(canary_cpu, 4),
                                        "share_of_cpu": round(canary_cpu / merged.cpu_seconds, 4)
                                        if merged.cpu_seconds else None}
    out.data["coverage"]["cells"] = [c.to_json() for c in cells]
    return out


def _control(check: str) -> str:
    return {P.CANARY_ARRIVAL.name: f"order-by-arrival render ({canaries.UNIVERSE}, N = {canaries.ARITY})",
            P.CANARY_SHARDS.name: "render salted by shard (one digest per shard)",
            P.COVERAGE_COUNTS.name: f"closed forms n!, (2n-2)!/(n-1)!, surjections; BagMerge orders of "
                                    f"N = {canaries.ARITY} alone held to N = 2..{canaries.ARITY}'s",
            P.COVERAGE_ARRIVAL.name: "a sampled state compared with the previous schedule's state and firsts"}[check]


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
