"""The shard plan held to the closed forms at every arity ``canonmerge check`` accepts.

A run renders only the arities it is asked for, so a plan that cannot split some larger N (no
prefix length for it), or whose prefixes miss or repeat schedules only there, passes every run
at the default arity and breaks, or silently checks less, at that N.  So every run whose C3
families run also builds the C3 plan of every arity and re-delivery bound the command accepts —
counts only, nothing rendered — sums each family's schedules over the shards (the schedules'
counts per prefix) and the shards' own ordering counts, and holds them to
``coverage.closed_forms``, written apart from the enumerators.

The comparison is also shown to see: the largest plan with its last shard left out must be
found short by it, and short by exactly that shard's counts."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from modelcheck import properties as P
from modelcheck.coverage import closed_forms
from modelcheck.shards import PREFIX_LENGTH, c3_counts, c3_shards
from spec import ClaimResult

ORDERINGS = "orderings"   # the shards' own count, what the plan records per shard (weights, progress)


def sums(shards: Sequence[tuple[tuple[int, ...], int]], n: int, redeliveries: int) -> dict[str, int]:
    """Each C3 family's schedules over ``shards`` (their prefixes' counts) and the shards' own
    ordering counts."""
    out = {"permutations": 0, "trees": 0, "re-deliveries": 0, ORDERINGS: 0}
    for prefix, orderings in shards:
        permutations, trees, copies = c3_counts(n, redeliveries, prefix)
        out["permutations"] += permutations
        out["trees"] += trees
        out["re-deliveries"] += copies
        out[ORDERINGS] += orderings
    return out


def _closed(n: int, redeliveries: int) -> dict[str, int]:
    """The closed forms of each family, and their sum as the shards' orderings."""
    forms = closed_forms(n, redeliveries)
    forms[ORDERINGS] = sum(forms.values())
    return forms


def short_of(planned: dict[str, int], n: int, redeliveries: int) -> list[str]:
    """The one comparison, of the real plan and of its control: each family's sum, and the
    shards' orderings, against the closed forms; empty when none differs."""
    forms = _closed(n, redeliveries)
    return [f"{key} {planned.get(key, 0):,}, closed form {closed:,}"
            for key, closed in forms.items() if planned.get(key) != closed]


def _control_seen(shards: Sequence[tuple[tuple[int, ...], int]], n: int, redeliveries: int) -> bool:
    """The control: the plan with its last shard left out must be found short, and short by exactly
    that shard's schedules and orderings (a control that left out more, or a comparison that only
    noticed *some* difference, would not show that the comparison counts what is missing)."""
    if not shards:
        return False
    kept, left_out = sums(shards[:-1], n, redeliveries), sums(shards[-1:], n, redeliveries)
    forms = _closed(n, redeliveries)
    return bool(short_of(kept, n, redeliveries)) and all(forms[k] - kept[k] == left_out[k] for k in forms)


def judge_plan(max_arity: int, max_redeliveries: int) -> ClaimResult:
    """The plan-coverage row: every N = 1..``max_arity`` at every R = 0..``max_redeliveries``;
    fails naming the arity (and bound) whose plan is missing or differs."""
    started = time.perf_counter()
    wrong = [f"N = {n}: the plan has no prefix length, so check --max-arity {n} cannot split it"
             for n in range(1, max_arity + 1) if n not in PREFIX_LENGTH]
    plans: list[dict[str, Any]] = []
    largest: tuple[list[tuple[tuple[int, ...], int]], int, int] = ([], 0, 0)
    for r in range(max_redeliveries + 1):
        for n in range(1, max_arity + 1):
            if n not in PREFIX_LENGTH:
                continue
            shards = c3_shards(n, r)
            planned = sums(shards, n, r)
            differs = short_of(planned, n, r)
            wrong += [f"N = {n}, R = {r}: {what}" for what in differs]
            plans.append({"n": n, "redeliveries": r, "shards": len(shards), **planned, "exact": not differs})
            largest = (shards, n, r)
    control = _control_seen(*largest)
    if not control:
        wrong.append("BLIND: the comparison did not find the largest plan short by exactly its last shard, "
                     "with that shard left out")
    total = sum(p[ORDERINGS] for p in plans)
    figure = ("; ".join(dict.fromkeys(wrong[:3])) if wrong else
              f"{len(plans)} plans (N = 1..{max_arity} x R = 0..{max_redeliveries}) = closed forms, "
              f"{total:,} schedules in their shards, none rendered; the comparison saw a plan one shard short")
    return P.COVERAGE_PLAN.holds_if(not wrong, figure, time.perf_counter() - started, wrong=wrong,
                                    control_seen=control, plans=plans)
