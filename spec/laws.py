"""The semilattice laws as executable predicates (claims C1, C2).

Each function takes concrete states plus the ``merge``, ``equal`` and ``leq`` under test and
returns the names of the laws that fail on them.  Tests drive these with random states;
negative tests drive them with broken merges to show they can fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

S = TypeVar("S")


def semilattice_violations(
    a: S, b: S, c: S, merge: Callable[[S, S], S], equal: Callable[[S, S], bool]
) -> list[str]:
    """C1: commutativity, associativity and idempotence on ``a, b, c``."""
    failed = []
    if not equal(merge(a, b), merge(b, a)):
        failed.append("C1 commutativity")
    if not equal(merge(merge(a, b), c), merge(a, merge(b, c))):
        failed.append("C1 associativity")
    if not equal(merge(a, a), a):
        failed.append("C1 idempotence")
    return failed


def order_violations(
    a: S, b: S, merge: Callable[[S, S], S], equal: Callable[[S, S], bool],
    leq: Callable[[S, S], bool],
) -> list[str]:
    """C2: inflation (a <= a|b, b <= a|b) and absorption (b <= a implies a|b = a)."""
    failed = []
    joined = merge(a, b)
    if not (leq(a, joined) and leq(b, joined)):
        failed.append("C2 inflation")
    if leq(b, a) and not equal(joined, a):
        failed.append("C2 absorption")
    return failed
