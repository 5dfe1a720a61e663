"""Did each shard run exactly the checks it was handed?

A shard runs the checks of its selection that its kind runs (``checks.UniverseCheck``: the C3
families on a C3 shard, the BagMerge checks on a bag shard, the others on the universe shard,
the oracle wherever the backend has its link).  A selection ignored inside a shard runs every
check: a default run, whose selection is every check, would not show it, but the canary shards
are handed narrower ones (a C3 canary the run's C3 families, the bag canary the BagMerge orders
alone), and a ``--only`` run narrower still.  So the checks each shard tallied (its own record,
the shard costs of ``shards.merge``) are held to the selection it was handed, worked out here
apart from ``shards``: none outside it, and none of it that the shard's kind runs missing.

The comparison is also shown to see: on the run's first real C3 shard, its record with one
tallied check left out, and its selection with one tallied check left out, must each be reported."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from modelcheck import properties as P
from spec import ClaimResult

# what each kind of shard runs when selected (the oracle, run only where the backend has its link, is
# allowed where selected and never required)
RUNS_ON: dict[str, frozenset[str]] = {
    "c3": frozenset(c.name for c in P.C3_FAMILIES),
    "bag": frozenset({P.BAG_ORDER.name, P.BAG_REDELIVERY.name}),
    "universe": frozenset(c.name for c in (P.ENGINE_ORDER, P.PAIRS, P.LAWS_C1, P.LAWS_C2, P.REFINEMENT_UNION,
                                           P.REFINEMENT_ORDER, P.REFINEMENT_BAG)),
}


def handed(checks: Iterable[str], kind: str, canary: str) -> frozenset[str]:
    """The selection a shard is handed: the run's checks; on the bag canary the BagMerge orders
    alone, on a C3 canary the run's C3 families."""
    if canary and kind == "bag":
        return frozenset({P.BAG_ORDER.name})
    if canary:
        return frozenset(checks) & RUNS_ON["c3"]
    return frozenset(checks)


def off_selection(ran: Iterable[str], kind: str, selection: frozenset[str]) -> list[str]:
    """The one comparison, of every shard's record and of the controls: checks tallied outside
    the selection, and checks of the selection that the shard's kind runs not tallied."""
    ran = set(ran)
    return ([f"{name} ran unselected" for name in sorted(ran - selection)]
            + [f"{name} selected, not run" for name in sorted((selection & RUNS_ON[kind]) - ran)])


def _control_blind(costs: Sequence[Mapping[str, Any]], checks: Sequence[str]) -> str:
    """'' when the comparison reports both controls on the first real C3 shard, else why not."""
    first = next((c for c in costs if not c["canary"] and c["kind"] == "c3" and set(c["found"]) & RUNS_ON["c3"]),
                 None)
    if first is None:
        return "BLIND: no real C3 shard tallied a C3 family to build the controls from"
    ran = set(first["found"])
    left_out = min(ran & RUNS_ON["c3"])
    selection = handed(checks, "c3", "")
    if not off_selection(ran - {left_out}, "c3", selection):
        return f"BLIND: a C3 shard's record without {left_out} was not reported"
    if not off_selection(ran, "c3", selection - {left_out}):
        return f"BLIND: a C3 shard's selection without {left_out} was not reported"
    return ""


def judge_selection(costs: Sequence[Mapping[str, Any]], checks: Sequence[str]) -> ClaimResult:
    """The selection row: each shard's tallied checks (``costs``, in plan order) against the
    selection it was handed from the run's ``checks``."""
    wrong = [f"{cost['shard']}: {what}" for cost in costs
             for what in off_selection(cost["found"], cost["kind"], handed(checks, cost["kind"], cost["canary"]))]
    blind = _control_blind(costs, checks)
    problems = wrong + ([blind] if blind else [])
    figure = ("; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
              if problems else
              f"{len(costs)} shards (canaries included) tallied exactly their selections; the comparison "
              "saw a record and a selection one check short")
    return P.COVERAGE_SELECTION.holds_if(not problems, figure, shards=len(costs), wrong=wrong,
                                         control_blind=blind or None)
