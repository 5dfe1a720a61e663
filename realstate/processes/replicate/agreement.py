"""The comparison of ranks, used alike for the real round and the canary round.

Agreement means: one render digest across the ranks, one set digest, every rank gathered the
same digests from the others and they are the ranks' own, and the digest equals the launcher's
own render.  The canary round (one rank rendering at another base offset) goes through this same
function and must come out as a disagreement; the orders check says whether the ranks really
delivered in different orders (``min(ranks, fragments!)`` distinct orders, as each rank reports
the deliveries it executed)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Comparison:
    digests: frozenset[str]
    sets: frozenset[str]
    agree: bool  # one digest and one set across the ranks, as every rank gathered them
    matches_launcher: bool

    @property
    def holds(self) -> bool:
        return self.agree and self.matches_launcher


def compare_ranks(results: list[dict[str, Any]], launcher_digest: str) -> Comparison:
    digests = frozenset(r["digest"] for r in results)
    sets = frozenset(r["set_digest"] for r in results)
    gathered = {tuple(r["gathered_digests"]) for r in results}  # what each rank saw of the others
    agree = len(digests) == 1 and len(sets) == 1 and len(gathered) == 1 and set(next(iter(gathered))) == digests
    matches_launcher = digests == {launcher_digest}
    return Comparison(digests, sets, agree, matches_launcher)


def distinct_orders(results: list[dict[str, Any]], fragments: int) -> tuple[int, int]:
    """(distinct delivery orders the ranks report — the order in which each rank's deliveries
    were first sent, dropped or not — and how many there must be)."""
    orders = {tuple(r["order"]) for r in results}
    return len(orders), min(len(results), math.factorial(fragments))
