"""The states of the C3 schedules, built with unions shared along the enumeration.

Consecutive arrival sequences (lexicographic) share a prefix, and the merge trees over one leaf
order share their subtrees: the union a prefix or a subtree stands for is built once (by the
backend's own ``merge``) and reused by every schedule that contains it.  What is never shared is
the *root*: for N >= 2 each schedule's final state is a fresh ``merge`` result — one object per
schedule — and the checker renders every one of them by its own call (at N = 1 the root is the
singleton itself).  So the render is still exercised
once per ordering; only the (pure) unions beneath it are shared, which the soundness rules allow
("unions of states may be shared along merge trees; renders never").

A leaf is the singleton of a fragment object, or of a re-delivered copy (``backend.copy``: a
distinct object with equal bytes).  ``Leaves`` makes each (fragment, copy number) object and its
singleton once per checker, so a copy is always a different object from the original."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from modelcheck import schedules as en
from modelcheck.backend import Backend
from modelcheck.schedules import Expr, Join, Leaf


class Leaves:
    """Singleton states of fragment objects and of their re-delivered copies, made once."""

    def __init__(self, backend: Backend, objects: Mapping[int, Any]) -> None:
        self.backend, self.objects = backend, objects
        self._copies: dict[tuple[int, int], Any] = {}
        self._singletons: dict[tuple[int, int], Any] = {}
        self._labels: dict[int, tuple[int, int]] = {}

    def fragment(self, index: int, copy: int) -> Any:
        if copy == 0:
            return self.objects[index]
        key = (index, copy)
        if key not in self._copies:
            self._copies[key] = self.backend.copy(self.objects[index])
        return self._copies[key]

    def labels(self) -> dict[int, tuple[int, int]]:
        """(index, copy) of every fragment object made so far, keyed by the object's identity
        (every one of them is kept alive here, so no identity is reused)."""
        if len(self._labels) != len(self.objects) + len(self._copies):
            self._labels = {id(obj): (index, 0) for index, obj in self.objects.items()}
            self._labels |= {id(obj): key for key, obj in self._copies.items()}
        return self._labels

    def singleton(self, index: int, copy: int = 0) -> Any:
        key = (index, copy)
        if key not in self._singletons:
            self._singletons[key] = self.backend.singleton(self.fragment(index, copy))
        return self._singletons[key]


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def comb_states(backend: Backend, leaves: Leaves, n: int, extra: int,
                prefix: Sequence[int] = ()) -> Iterator[tuple[tuple[int, ...], Any]]:
    """(arrival sequence, state) for every sequential delivery of n fragments with ``extra``
    re-deliveries that starts with ``prefix``: the left comb, prefixes' unions shared."""
    stack: list[Any] = []        # stack[k]: the union of the first k + 1 arrivals of ``previous``
    previous: tuple[int, ...] = ()
    for seq in en.arrivals(n, extra, prefix):
        keep = _common(previous, seq)   # < len(seq): sequences are distinct and never shrink
        del stack[keep:]
        seen: dict[int, int] = {}
        for i in seq[:keep]:
            seen[i] = seen.get(i, 0) + 1
        for pos in range(keep, len(seq)):
            i = seq[pos]
            leaf = leaves.singleton(i, seen.get(i, 0))
            seen[i] = seen.get(i, 0) + 1
            stack.append(leaf if pos == 0 else backend.merge(stack[-1], leaf))
        previous = seq
        yield seq, stack[-1]


def tree_states(backend: Backend, leaves: Leaves, n: int,
                prefix: Sequence[int] = ()) -> Iterator[tuple[Expr, Any]]:
    """(tree, state) for every binary merge tree over every leaf order starting with ``prefix``,
    in ``schedules.merge_trees`` order.  The unions of proper subtrees are kept per leaf range
    and reused while the leaf order keeps that range; every root is a fresh merge."""
    memo: dict[tuple[int, int], list[tuple[Expr, Any]]] = {}
    previous: tuple[int, ...] = ()
    for order in en.arrivals(n, 0, prefix):
        keep = _common(previous, order)
        for key in [k for k in memo if k[1] > keep]:
            del memo[key]
        previous = order

        def trees(i: int, j: int) -> list[tuple[Expr, Any]]:
            got = memo.get((i, j))
            if got is None:
                if j - i == 1:
                    got = [(Leaf(order[i]), leaves.singleton(order[i]))]
                else:
                    got = [(Join(le, re), backend.merge(ls, rs)) for s in range(i + 1, j)
                           for le, ls in trees(i, s) for re, rs in trees(s, j)]
                memo[(i, j)] = got
            return got

        if n == 1:
            yield Leaf(order[0]), leaves.singleton(order[0])
            continue
        for s in range(1, n):
            for le, ls in trees(0, s):
                for re, rs in trees(s, n):
                    yield Join(le, re), backend.merge(ls, rs)
