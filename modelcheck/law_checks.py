"""C1 and C2 on concrete states, and the refinement of the abstract model by the backend: the
semilattice laws, inflation and absorption on every state of a small family (each state object
rendered once, distinct objects holding one set rendered separately), abstract(merge) = union,
render order = spec.canonical_order, render = BagMerge of that order."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable
from typing import Any

from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.program import ProgramBuilder
from modelcheck.schedules import Expr, Join, Leaf
from modelcheck.universe_search import UniverseSearch
from spec import Check, canonical_order
from spec.laws import order_violations, semilattice_violations


class LawChecks(UniverseSearch):
    """The laws C1/C2 on concrete states and the refinement (C1, C3, C6)."""

    def family(self, k: int = 3) -> list[Expr]:
        """Concrete states for the laws: every non-empty subset of the first k distinct fragments
        (folded in index order), plus singletons of re-delivered copies."""
        chosen = self.distinct(k)
        subsets = [en.fold([Leaf(i) for i in s]) for r in range(1, len(chosen) + 1)
                   for s in itertools.combinations(chosen, r)]
        return subsets + [Leaf(i, 1) for i in chosen]

    def equal(self, s: Any, t: Any) -> bool:
        b = self.backend
        return b.abstract(s) == b.abstract(t) and self.render_once(s) == self.render_once(t)

    def leq(self, s: Any, t: Any) -> bool:
        return self.backend.abstract(s) <= self.backend.abstract(t)

    def laws(self) -> None:
        fam = self.family()
        states = [self.state(e) for e in fam]
        merged: dict[tuple[int, int], tuple[Any, Any, Any]] = {}

        def merge(a: Any, b: Any) -> Any:
            """The backend's merge, called once per pair of state objects (the result object is
            reused, so it is rendered once; distinct objects are still rendered separately)."""
            key = (id(a), id(b))
            if key not in merged:
                merged[key] = (a, b, self.backend.merge(a, b))
            return merged[key][2]

        if self.wants(P.LAWS_C1):
            c1 = self.tallies.of(P.LAWS_C1, "triples")
            started = time.perf_counter()
            for (x, a), (y, b), (z, c) in itertools.product(enumerate(states), repeat=3):
                c1.checked += 1
                for law in semilattice_violations(a, b, c, merge, self.equal):
                    self.fail(c1, lambda law=law, x=x, y=y, z=z: self._law_trace(
                        law, P.LAWS_C1, fam[x], fam[y], fam[z]))
            c1.seconds += time.perf_counter() - started
        if self.wants(P.LAWS_C2):
            c2 = self.tallies.of(P.LAWS_C2, "pairs")
            started = time.perf_counter()
            for (x, a), (y, b) in itertools.product(enumerate(states), repeat=2):
                c2.checked += 1
                for law in order_violations(a, b, merge, self.equal, self.leq):
                    self.fail(c2, lambda law=law, x=x, y=y: self._law_trace(
                        law, P.LAWS_C2, fam[x], fam[y], None))
            c2.seconds += time.perf_counter() - started

    def _law_trace(self, law: str, check: Check, ea: Expr, eb: Expr, ec: Expr | None) -> dict[str, Any]:
        b = ProgramBuilder()
        a, bb = b.state(ea), b.state(eb)

        def same(s: int, t: int) -> None:
            b.expect_equal(b.render(s), b.render(t))
            b.expect_equal(b.abstract(s), b.abstract(t))

        if law.endswith("commutativity"):
            same(b.merge(a, bb), b.merge(bb, a))
        elif law.endswith("associativity"):
            c = b.state(ec)
            same(b.merge(b.merge(a, bb), c), b.merge(a, b.merge(bb, c)))
        elif law.endswith("idempotence"):
            same(b.merge(a, a), a)
        elif law.endswith("inflation"):
            j, aa, ab = b.merge(a, bb), b.abstract(a), b.abstract(bb)
            aj = b.abstract(j)
            b.expect_subset(aa, aj)
            b.expect_subset(ab, aj)
        else:  # absorption (b <= a holds for the pair the check found)
            same(b.merge(a, bb), a)
        parts = [en.render_expr(e) for e in (ea, eb, ec) if e is not None]
        return self.trace(check, b, f"{law} fails on states {', '.join(parts)}")

    def _spec_order(self, expr: Expr) -> list[int]:
        """Indices of the distinct contents ``expr`` delivers (first index per content id), in
        ``spec.canonical_order`` by the backend's order key."""
        firsts: dict[bytes, int] = {}
        for leaf in en.leaves(expr):
            firsts.setdefault(self.backend.content_id(self.objects[leaf.index]), leaf.index)
        return canonical_order(list(firsts.values()), lambda i: self.backend.order_key(self.objects[i]))

    def refinement(self, extra: Iterable[Expr] = ()) -> None:
        """abstract ∘ merge = union ∘ abstract; render order = spec.canonical_order by the
        backend's order key; render = BagMerge of that order."""
        fam = self.family()
        merged = [Join(a, b) for a in fam for b in fam]
        schedules = fam + merged + list(extra)
        backend = self.backend
        if self.wants(P.REFINEMENT_UNION):
            absm = self.tallies.of(P.REFINEMENT_UNION, "pairs")
            started = time.perf_counter()
            for e in merged:
                absm.checked += 1
                s = self.state(e)
                union = backend.abstract(self.state(e.left)).merge(backend.abstract(self.state(e.right)))
                if backend.abstract(s) != union:
                    self.fail(absm, lambda e=e: self._abstract_trace(e))
            absm.seconds += time.perf_counter() - started
        if not self.wants(P.REFINEMENT_ORDER, P.REFINEMENT_BAG):
            return
        order = self.tallies.of(P.REFINEMENT_ORDER, "states") if self.wants(P.REFINEMENT_ORDER) else None
        bag = self.tallies.of(P.REFINEMENT_BAG, "states") if self.wants(P.REFINEMENT_BAG) else None
        for e in schedules:
            started = time.perf_counter()
            s = self.state(e)
            spec_indices = self._spec_order(e)
            spec_order = [self.objects[i] for i in spec_indices]
            if order is not None:
                order.checked += 1
                if backend.render_order(s) != [backend.content_id(f) for f in spec_order]:
                    self.fail(order, lambda e=e: self._order_trace(e))
                order.seconds += time.perf_counter() - started
            if bag is not None:
                mid = time.perf_counter()
                bag.checked += 1
                bag_digest = self.bag(spec_order)
                if self.render(s) != bag_digest:
                    self.fail(bag, lambda e=e: self._bag_trace(e))
                bag.seconds += time.perf_counter() - mid
                self.oracle_bag_check(spec_indices, bag_digest)

    def _abstract_trace(self, e: Join) -> dict[str, Any]:
        b = ProgramBuilder()
        left, right = b.state(e.left), b.state(e.right)
        b.expect_equal(b.join_abstract(b.abstract(left), b.abstract(right)), b.abstract(b.merge(left, right)))
        return self.trace(P.REFINEMENT_UNION, b,
                          f"abstract(merge) is not the union of abstracts for {en.render_expr(e)}")

    def _order_trace(self, e: Expr) -> dict[str, Any]:
        b = ProgramBuilder()
        s = b.state(e)
        b.expect_equal(b.canonical_order([b.fragment(i) for i in self._spec_order(e)]), b.render_order(s))
        return self.trace(P.REFINEMENT_ORDER, b,
                          f"render order of {en.render_expr(e)} is not spec.canonical_order")

    def _bag_trace(self, e: Expr) -> dict[str, Any]:
        b = ProgramBuilder()
        s = b.state(e)
        b.expect_equal(b.bag([b.fragment(i) for i in self._spec_order(e)]), b.render(s))
        return self.trace(P.REFINEMENT_BAG, b,
                          f"render of {en.render_expr(e)} is not BagMerge of its spec order")
