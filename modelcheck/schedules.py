"""Enumerators of delivery schedules: permutations, binary merge trees and re-delivery patterns.

A schedule is an ``Expr``: a binary tree whose leaves are deliveries of fragment ``index``
(``copy`` 0 is the object first delivered, ``copy`` k >= 1 its k-th re-delivered copy) and whose
inner nodes are merges.  A sequential arrival order is the left comb.  Counts have closed forms
(n!, n!·Catalan(n−1), surjection counts) that the tests hold the enumerators to.

Every enumerator takes a ``prefix``: only the schedules whose first arrivals (leaves, left to
right) are ``prefix`` are produced.  The prefixes of one length partition the schedules, which is
how the checker splits an arity into shards (``modelcheck.shards``); ``*_count(n, ..., prefix)``
are the closed forms per prefix.  Arrival sequences come in lexicographic order, so consecutive
ones share long prefixes (the checker reuses the unions of those shared prefixes)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Leaf:
    index: int
    copy: int = 0


@dataclass(frozen=True)
class Join:
    left: Expr
    right: Expr


Expr = Leaf | Join


def leaves(expr: Expr) -> list[Leaf]:
    out: list[Leaf] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Leaf):
            out.append(e)
        else:
            stack += [e.right, e.left]
    return out


def fold(items: Sequence[Leaf]) -> Expr:
    """The left comb: deliveries one after another into one replica."""
    expr: Expr = items[0]
    for leaf in items[1:]:
        expr = Join(expr, leaf)
    return expr


def sequence(indices: Sequence[int]) -> Expr:
    """Arrival order of fragment indices; a repeated index arrives as a fresh copy."""
    seen: dict[int, int] = {}
    items = []
    for i in indices:
        items.append(Leaf(i, seen.get(i, 0)))
        seen[i] = seen.get(i, 0) + 1
    return fold(items)


def render_expr(expr: Expr) -> str:
    """A compact human form, e.g. ``((0 1) 2')`` with a prime per re-delivered copy."""
    if isinstance(expr, Leaf):
        return f"{expr.index}" + "'" * expr.copy
    return f"({render_expr(expr.left)} {render_expr(expr.right)})"


def prune(expr: Expr, drop: Callable[[Leaf], bool]) -> Expr | None:
    """``expr`` without the leaves ``drop`` selects (a merge with one side gone is its other side)."""
    if isinstance(expr, Leaf):
        return None if drop(expr) else expr
    left, right = prune(expr.left, drop), prune(expr.right, drop)
    if left is None or right is None:
        return left if right is None else right
    return Join(left, right)


# --- the enumerators --------------------------------------------------------------------------

def arrivals(n: int, extra: int = 0, prefix: Sequence[int] = ()) -> Iterator[tuple[int, ...]]:
    """Every sequence of n + ``extra`` deliveries of fragments 0..n-1 that delivers each at
    least once and starts with ``prefix``, in lexicographic order.  ``extra = 0`` gives the
    permutations; ``extra >= 1`` the re-delivery patterns with exactly that many repeats."""
    length = n + extra
    counts = [0] * n
    for i in prefix:
        if not 0 <= i < n:
            return
        counts[i] += 1
    if len(prefix) > length or sum(c - 1 for c in counts if c) > extra:
        return
    seq = list(prefix)
    missing = counts.count(0)

    def extend(missing: int) -> Iterator[tuple[int, ...]]:
        room = length - len(seq)
        if room == 0:
            yield tuple(seq)
            return
        for i in range(n):
            left = missing - (counts[i] == 0)
            if left > room - 1:          # the rest could no longer deliver every fragment
                continue
            counts[i] += 1
            seq.append(i)
            yield from extend(left)
            seq.pop()
            counts[i] -= 1

    yield from extend(missing)


def leaves_of(sequence_: Sequence[int]) -> list[Leaf]:
    """The leaves of an arrival sequence: a repeated index arrives as its next copy."""
    seen: dict[int, int] = {}
    out = []
    for i in sequence_:
        out.append(Leaf(i, seen.get(i, 0)))
        seen[i] = seen.get(i, 0) + 1
    return out


def permutations(n: int, prefix: Sequence[int] = ()) -> Iterator[Expr]:
    """Every arrival order of n distinct deliveries (n! of them)."""
    for order in arrivals(n, 0, prefix):
        yield fold([Leaf(i) for i in order])


def tree_shapes(items: Sequence[Leaf]) -> Iterator[Expr]:
    """Every binary merge tree over ``items`` in this leaf order (Catalan(len−1) of them)."""
    if len(items) == 1:
        yield items[0]
        return
    for split in range(1, len(items)):
        for left in tree_shapes(items[:split]):
            for right in tree_shapes(items[split:]):
                yield Join(left, right)


def merge_trees(n: int, prefix: Sequence[int] = ()) -> Iterator[Expr]:
    """Every merge tree combined with every leaf order (n!·Catalan(n−1) = (2n−2)!/(n−1)!)."""
    for order in arrivals(n, 0, prefix):
        yield from tree_shapes([Leaf(i) for i in order])


def _multiplicities(n: int, extra: int) -> Iterator[list[int]]:
    """Every way to hand out ``extra`` additional deliveries among n fragments."""
    if n == 0:
        if extra == 0:
            yield []
        return
    for k in range(extra + 1):
        for rest in _multiplicities(n - 1, extra - k):
            yield [1 + k] + rest


def redeliveries(n: int, max_extra: int, prefix: Sequence[int] = ()) -> Iterator[Expr]:
    """Every arrival sequence in which each of n fragments arrives at least once and 1..max_extra
    deliveries are repeats (copies), in every interleaving."""
    for extra in range(1, max_extra + 1):
        for seq in arrivals(n, extra, prefix):
            yield sequence(seq)


# --- closed forms -----------------------------------------------------------------------------

def catalan(n: int) -> int:
    return math.comb(2 * n, n) // (n + 1)


def _in_range(prefix: Sequence[int], n: int) -> bool:
    return not prefix or (min(prefix) >= 0 and max(prefix) < n)


def covering_count(n: int, length: int, prefix: Sequence[int] = ()) -> int:
    """Sequences of ``length`` over n fragments that start with ``prefix`` and deliver every
    fragment at least once (inclusion–exclusion over the fragments the prefix misses)."""
    if len(prefix) > length or not _in_range(prefix, n):
        return 0
    return _covering(n, n - len(set(prefix)), length - len(prefix))


@functools.lru_cache(maxsize=4096)
def _covering(n: int, missing: int, rest: int) -> int:
    """``rest`` more deliveries over n fragments that deliver the ``missing`` ones: the count
    depends on nothing else, so the plan's thousands of prefixes at N = 9 share a few sums."""
    return sum((-1) ** j * math.comb(missing, j) * (n - j) ** rest for j in range(missing + 1))


def _distinct(prefix: Sequence[int], n: int) -> bool:
    return len(set(prefix)) == len(prefix) and _in_range(prefix, n)


def permutation_count(n: int, prefix: Sequence[int] = ()) -> int:
    return math.factorial(n - len(prefix)) if len(prefix) <= n and _distinct(prefix, n) else 0


def tree_count(n: int, prefix: Sequence[int] = ()) -> int:
    return permutation_count(n, prefix) * catalan(n - 1)


def stirling2(n: int, k: int) -> int:
    return sum((-1) ** j * math.comb(k, j) * (k - j) ** n for j in range(k + 1)) // math.factorial(k)


def redelivery_count(n: int, max_extra: int, prefix: Sequence[int] = ()) -> int:
    """Sequences of length n+e onto n fragments using each (surjections: n!·S(n+e, n)); with a
    prefix, those that start with it (each extra e counted separately: a prefix holding more
    repeats than e allows starts none of length n+e)."""
    if not prefix:
        return sum(math.factorial(n) * stirling2(n + e, n) for e in range(1, max_extra + 1))
    if not _in_range(prefix, n):
        return 0
    distinct = len(set(prefix))
    return sum(_covering(n, n - distinct, n + e - len(prefix))
               for e in range(max(1, len(prefix) - distinct), max_extra + 1) if len(prefix) <= n + e)


def multinomial_redelivery_count(n: int, max_extra: int) -> int:
    """The same count as a sum of multinomials over multiplicity vectors (an independent form)."""
    total = 0
    for extra in range(1, max_extra + 1):
        for counts in _multiplicities(n, extra):
            total += math.factorial(n + extra) // math.prod(math.factorial(c) for c in counts)
    return total
