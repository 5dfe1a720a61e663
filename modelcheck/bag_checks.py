"""C4 and C6 on one universe: BagMerge's order dependence and re-delivery (witnesses: BagMerge
is the baseline that fails the laws), and N = 2, where the canonical render must equal BagMerge
in one of the pair's two orders."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.program import ProgramBuilder
from modelcheck.tallies import Row
from modelcheck.universe_search import INTERLEAVED, UniverseSearch


class BagChecks(UniverseSearch):
    """C4 (BagMerge witnesses) and C6 (every pair inherits a BagMerge order)."""

    def _copy_arrivals(self, n: int) -> Iterator[tuple[int, ...]]:
        """The arrival sequences of BagMerge re-delivery: the first n fragments once each plus one
        repeat, appended after them or (``INTERLEAVED``) anywhere."""
        if self.bag_copies == INTERLEAVED:
            yield from en.arrivals(n, 1)
        else:
            for i in range(n):
                yield (*range(n), i)

    def c4(self, n: int, row: Row) -> None:
        objs = [self.objects[i] for i in range(n)]
        if self.wants(P.BAG_ORDER):
            perm = self.tallies.of(P.BAG_ORDER, "permutations")
            started = time.perf_counter()
            bags: dict[str, tuple[int, ...]] = {}
            for order in itertools.permutations(range(n)):
                bags.setdefault(self.bag([objs[i] for i in order]), order)
                perm.checked += 1
            row.bag_digests = len(bags)
            if len(bags) > 1:
                perm.found += 1
                if "witness" not in perm.details:
                    (d1, o1), (d2, o2) = list(bags.items())[:2]
                    perm.details["witness"] = {"universe": self.universe.name, "orders": [list(o1), list(o2)],
                                               "digests": [d1, d2]}
            perm.seconds += time.perf_counter() - started
        if self.wants(P.BAG_REDELIVERY):
            red = self.tallies.of(P.BAG_REDELIVERY, "re-deliveries")
            started = time.perf_counter()
            firsts: dict[tuple[int, ...], str] = {}   # BagMerge of the first arrivals, by order
            for seq in self._copy_arrivals(n):
                leaves = en.leaves_of(seq)
                first = tuple(leaf.index for leaf in leaves if leaf.copy == 0)
                once = firsts.get(first)
                if once is None:
                    once = firsts[first] = self.bag([objs[i] for i in first])
                twice = self.bag([objs[x.index] if x.copy == 0 else self.backend.copy(objs[x.index])
                                  for x in leaves])
                red.checked += 1
                if twice != once:
                    red.found += 1
                    repeat = next(x.index for x in leaves if x.copy)
                    witness: dict[str, Any] = {"universe": self.universe.name, "order": list(first),
                                               "redelivered": repeat, "digests": [once, twice]}
                    if self.bag_copies == INTERLEAVED:
                        witness["arrivals"] = list(seq)
                    red.details.setdefault("witness", witness)
            red.seconds += time.perf_counter() - started

    def c6(self) -> None:
        tally = self.tallies.of(P.PAIRS, "pairs")
        started = time.perf_counter()
        ids = {i: self.backend.content_id(self.objects[i]) for i in range(self.size)}
        for i, j in itertools.combinations(sorted(ids), 2):
            if ids[i] == ids[j]:
                continue
            a, b = self.objects[i], self.objects[j]
            digest = self.render(self.backend.merge(self.backend.singleton(a), self.backend.singleton(b)))
            tally.checked += 1
            if digest not in (self.bag([a, b]), self.bag([b, a])):
                self.fail(tally, lambda i=i, j=j: self._c6_trace(i, j))
        tally.seconds += time.perf_counter() - started

    def _c6_trace(self, i: int, j: int) -> dict[str, Any]:
        b = ProgramBuilder()
        fa, fb = b.fragment(i), b.fragment(j)
        r = b.render(b.merge(b.singleton(fa), b.singleton(fb)))
        b.expect_one_of(r, [b.bag([fa, fb]), b.bag([fb, fa])])
        return self.trace(P.PAIRS, b, f"the canonical render of {{{i}, {j}}} is neither BagMerge order")
