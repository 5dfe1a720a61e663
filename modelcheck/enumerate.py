"""Enumerators of delivery schedules: permutations, binary merge trees and re-delivery patterns.

A schedule is an ``Expr``: a binary tree whose leaves are deliveries of fragment ``index``
(``copy`` 0 is the object first delivered, ``copy`` k >= 1 its k-th re-delivered copy) and whose
inner nodes are merges.  A sequential arrival order is the left comb.  Counts have closed forms
(n!, n!·Catalan(n−1), surjection counts) that the tests hold the enumerators to."""

from __future__ import annotations

import itertools
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

def permutations(n: int) -> Iterator[Expr]:
    """Every arrival order of n distinct deliveries (n! of them)."""
    for order in itertools.permutations(range(n)):
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


def merge_trees(n: int) -> Iterator[Expr]:
    """Every merge tree combined with every leaf order (n!·Catalan(n−1) = (2n−2)!/(n−1)!)."""
    for order in itertools.permutations(range(n)):
        yield from tree_shapes([Leaf(i) for i in order])


def _multiset_permutations(counts: list[int], length: int) -> Iterator[list[int]]:
    if length == 0:
        yield []
        return
    for i, c in enumerate(counts):
        if c:
            counts[i] -= 1
            for rest in _multiset_permutations(counts, length - 1):
                yield [i] + rest
            counts[i] += 1


def _multiplicities(n: int, extra: int) -> Iterator[list[int]]:
    """Every way to hand out ``extra`` additional deliveries among n fragments."""
    if n == 0:
        if extra == 0:
            yield []
        return
    for k in range(extra + 1):
        for rest in _multiplicities(n - 1, extra - k):
            yield [1 + k] + rest


def redeliveries(n: int, max_extra: int) -> Iterator[Expr]:
    """Every arrival sequence in which each of n fragments arrives at least once and 1..max_extra
    deliveries are repeats (copies), in every interleaving."""
    for extra in range(1, max_extra + 1):
        for counts in _multiplicities(n, extra):
            for seq in _multiset_permutations(list(counts), n + extra):
                yield sequence(seq)


# --- closed forms -----------------------------------------------------------------------------

def catalan(n: int) -> int:
    return math.comb(2 * n, n) // (n + 1)


def permutation_count(n: int) -> int:
    return math.factorial(n)


def tree_count(n: int) -> int:
    return math.factorial(n) * catalan(n - 1)


def stirling2(n: int, k: int) -> int:
    return sum((-1) ** j * math.comb(k, j) * (k - j) ** n for j in range(k + 1)) // math.factorial(k)


def redelivery_count(n: int, max_extra: int) -> int:
    """Sequences of length n+e onto n fragments using each (surjections: n!·S(n+e, n))."""
    return sum(math.factorial(n) * stirling2(n + e, n) for e in range(1, max_extra + 1))


def multinomial_redelivery_count(n: int, max_extra: int) -> int:
    """The same count as a sum of multinomials over multiplicity vectors (an independent form)."""
    total = 0
    for extra in range(1, max_extra + 1):
        for counts in _multiplicities(n, extra):
            total += math.factorial(n + extra) // math.prod(math.factorial(c) for c in counts)
    return total
