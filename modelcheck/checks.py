"""The exhaustive checks on one fragment universe: C3, C4, C6, the laws C1/C2 on concrete
states, and the refinement of the abstract model by the backend.

Every ordering's state is built by folding ``backend.merge`` over ``backend.singleton``s in that
order or tree (a re-delivery is ``backend.copy``: a distinct object with equal content), and
``backend.render_digest`` is called for every one of them: memoizing renders by the abstract set
would make the C3 check unable to fail.  The laws and refinement checks may memoize renders by
``backend.state_key``, which is a complete description of the concrete state.

A violation is minimized (fragments, then re-delivered copies, removed while it persists) and
compiled into a replayable program trace."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from modelcheck import enumerate as en
from modelcheck.backend import Backend, Universe
from modelcheck.enumerate import Expr, Join, Leaf
from modelcheck.program import ProgramBuilder, evaluate, failed_expectations, run_program
from modelcheck.trace import make_trace
from spec import Progress, canonical_order, no_progress
from spec.laws import order_violations, semilattice_violations


@dataclass
class Tally:
    """What one (claim, check) found, accumulated over universes."""

    claim: str
    check: str
    unit: str
    checked: int = 0
    violations: int = 0
    traces: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    _traced: set[str] = field(default_factory=set)

    def fail(self, universe: str, make: Callable[[], dict[str, Any]]) -> None:
        """Count a violation; build a trace for the first one in each universe."""
        self.violations += 1
        if universe not in self._traced:
            self._traced.add(universe)
            self.traces.append(make())


class Tallies(dict):
    def get_tally(self, claim: str, check: str, unit: str) -> Tally:
        key = (claim, check)
        if key not in self:
            self[key] = Tally(claim, check, unit)
        return self[key]


@dataclass
class Row:
    """One line of a universe's table: what the exhaustive matrix saw at arity N."""

    n: int
    permutations: int = 0
    trees: int = 0
    redeliveries: int = 0
    canonical_digests: int = 0
    bag_digests: int = 0
    violations: int = 0


class UniverseCheck:
    """Runs every check on one universe for one backend."""

    def __init__(self, backend: Backend, universe: Universe, tallies: Tallies, *, backend_name: str,
                 mutant: str | None, redeliveries: int = 1, progress: Progress = no_progress) -> None:
        self.backend, self.universe, self.tallies = backend, universe, tallies
        self.backend_name, self.mutant = backend_name, mutant
        self.max_extra, self.progress = redeliveries, progress
        self.objects = {i: backend.build(universe.geometry, d) for i, d in enumerate(universe.fragments)}
        self.renders = 0
        self._memo: dict[Hashable, str] = {}
        self.rows: list[Row] = []

    # --- helpers -----------------------------------------------------------------------------

    def state(self, expr: Expr) -> Any:
        return evaluate(self.backend, expr, self.objects)

    def render(self, state: Any) -> str:
        self.renders += 1
        return self.backend.render_digest(state)

    def render_memo(self, state: Any) -> str:
        key = self.backend.state_key(state)
        if key not in self._memo:
            self._memo[key] = self.render(state)
        return self._memo[key]

    def trace(self, check: str, claim: str, b: ProgramBuilder, note: str) -> dict[str, Any]:
        """Run the program once more to record what it observes, and package it."""
        indices = sorted({op["index"] for op in b.ops if op["op"] == "fragment"})
        descs = {i: self.universe.fragments[i] for i in indices}
        values = run_program(self.backend, self.universe.geometry, descs, b.ops)
        failed = failed_expectations(b.expect, values)
        expected, observed = (failed[0][1], failed[0][2]) if failed else ("", "(did not reproduce)")
        return make_trace(kind="program", check=check, claim=claim, backend=self.backend_name,
                          mutant=self.mutant, universe=self.universe.name,
                          geometry=self.universe.geometry, fragments=descs, ops=b.ops,
                          expect=b.expect, expected=expected, observed=observed, note=note)

    # --- C3: permutations, merge trees, re-deliveries ----------------------------------------

    def _differs(self, a: Expr, b: Expr) -> bool:
        return self.render(self.state(a)) != self.render(self.state(b))

    def minimize(self, ref: Expr, bad: Expr) -> tuple[Expr, Expr]:
        """Drop fragments, then re-delivered copies, while the two schedules still render apart."""
        changed = True
        while changed:  # passes until nothing more can go: the result is 1-minimal
            changed = False
            for i in sorted({leaf.index for leaf in en.leaves(bad)}):
                r2, b2 = (en.prune(e, lambda leaf, i=i: leaf.index == i) for e in (ref, bad))
                if r2 is not None and b2 is not None and self._differs(r2, b2):
                    ref, bad, changed = r2, b2, True
            for leaf in [x for x in en.leaves(bad) if x.copy]:
                b2 = en.prune(bad, lambda x, leaf=leaf: x == leaf)
                if b2 is not None and self._differs(ref, b2):
                    bad, changed = b2, True
        return ref, bad

    def c3_trace(self, check: str, ref: Expr, bad: Expr) -> dict[str, Any]:
        ref, bad = self.minimize(ref, bad)
        b = ProgramBuilder()
        r1 = b.render(b.state(ref))
        r2 = b.render(b.state(bad))
        b.expect_equal(r1, r2)
        return self.trace(check, "C3", b, f"schedule {en.render_expr(ref)} and schedule "
                          f"{en.render_expr(bad)} hold the same set but render differently")

    def c3(self, n: int, row: Row) -> None:
        """Every schedule of the first n fragments must render like the index-order fold."""
        ref_expr = en.fold([Leaf(i) for i in range(n)])
        ref = self.render(self.state(ref_expr))
        every = {ref}
        schedules: list[tuple[str, str, str, Callable[[], Iterator[Expr]]]] = [
            ("permutations", "permutations", "permutations", lambda: en.permutations(n)),
            ("merge trees", "trees", "trees", lambda: en.merge_trees(n)),
            ("re-deliveries", "re-deliveries", "redeliveries", lambda: en.redeliveries(n, self.max_extra)),
        ]
        for check, unit, column, make in schedules:
            tally = self.tallies.get_tally("C3", check, unit)
            started = time.perf_counter()
            count, digests = 0, {ref}
            for expr in make():
                count += 1
                digest = self.render(self.state(expr))
                digests.add(digest)
                if digest != ref:
                    row.violations += 1
                    tally.fail(self.universe.name, lambda e=expr, c=check: self.c3_trace(c, ref_expr, e))
                if count % 200 == 0:
                    self.progress(f"{self.universe.name} N={n} {check}", count, 0)
            tally.checked += count
            tally.seconds += time.perf_counter() - started
            tally.extra["max digests per set"] = max(tally.extra.get("max digests per set", 0), len(digests))
            setattr(row, column, count)
            every |= digests
        row.canonical_digests = len(every)

    # --- C4: BagMerge witnesses --------------------------------------------------------------

    def c4(self, n: int, row: Row) -> None:
        objs = [self.objects[i] for i in range(n)]
        perm = self.tallies.get_tally("C4", "BagMerge order dependence", "permutations")
        started = time.perf_counter()
        bags: dict[str, tuple[int, ...]] = {}
        for order in itertools.permutations(range(n)):
            bags.setdefault(self.backend.bag_digest([objs[i] for i in order]), order)
            perm.checked += 1
        row.bag_digests = len(bags)
        if len(bags) > 1 and "witness" not in perm.extra:
            (d1, o1), (d2, o2) = list(bags.items())[:2]
            perm.extra["witness"] = {"universe": self.universe.name, "orders": [list(o1), list(o2)],
                                     "digests": [d1, d2]}
        perm.extra["witnesses"] = perm.extra.get("witnesses", 0) + (len(bags) > 1)
        perm.seconds += time.perf_counter() - started

        red = self.tallies.get_tally("C4", "BagMerge re-delivery", "re-deliveries")
        started = time.perf_counter()
        once = self.backend.bag_digest(objs)
        for i in range(n):
            twice = self.backend.bag_digest(objs + [self.backend.copy(objs[i])])
            red.checked += 1
            if twice != once:
                red.extra["witnesses"] = red.extra.get("witnesses", 0) + 1
                red.extra.setdefault("witness", {"universe": self.universe.name, "order": list(range(n)),
                                                 "redelivered": i, "digests": [once, twice]})
        red.seconds += time.perf_counter() - started

    # --- C6: N = 2 inherits a BagMerge order ---------------------------------------------------

    def c6(self) -> None:
        tally = self.tallies.get_tally("C6", "N = 2 equals a BagMerge order", "pairs")
        started = time.perf_counter()
        ids = {i: self.backend.content_id(o) for i, o in self.objects.items()}
        for i, j in itertools.combinations(sorted(self.objects), 2):
            if ids[i] == ids[j]:
                continue
            a, b = self.objects[i], self.objects[j]
            digest = self.render(self.backend.merge(self.backend.singleton(a), self.backend.singleton(b)))
            tally.checked += 1
            if digest not in (self.backend.bag_digest([a, b]), self.backend.bag_digest([b, a])):
                tally.fail(self.universe.name, lambda i=i, j=j: self._c6_trace(i, j))
        tally.seconds += time.perf_counter() - started

    def _c6_trace(self, i: int, j: int) -> dict[str, Any]:
        b = ProgramBuilder()
        fa, fb = b.fragment(i), b.fragment(j)
        r = b.render(b.merge(b.singleton(fa), b.singleton(fb)))
        b.expect_one_of(r, [b.bag([fa, fb]), b.bag([fb, fa])])
        return self.trace("N = 2 equals a BagMerge order", "C6", b,
                          f"the canonical render of {{{i}, {j}}} is neither BagMerge order")

    # --- C1/C2 laws and the refinement of the abstract model -----------------------------------

    def family(self, k: int = 3) -> list[Expr]:
        """Concrete states for the laws: every non-empty subset of the first k distinct fragments
        (folded in index order), plus singletons of re-delivered copies."""
        firsts: dict[bytes, int] = {}
        for i, o in self.objects.items():
            firsts.setdefault(self.backend.content_id(o), i)
        chosen = sorted(firsts.values())[:k]
        subsets = [en.fold([Leaf(i) for i in s]) for r in range(1, len(chosen) + 1)
                   for s in itertools.combinations(chosen, r)]
        return subsets + [Leaf(i, 1) for i in chosen]

    def equal(self, s: Any, t: Any) -> bool:
        b = self.backend
        return b.abstract(s) == b.abstract(t) and self.render_memo(s) == self.render_memo(t)

    def leq(self, s: Any, t: Any) -> bool:
        return self.backend.abstract(s) <= self.backend.abstract(t)

    def laws(self) -> None:
        fam = self.family()
        states = [self.state(e) for e in fam]
        merge = self.backend.merge
        c1 = self.tallies.get_tally("C1", "laws on concrete states", "triples")
        started = time.perf_counter()
        for (x, a), (y, b), (z, c) in itertools.product(enumerate(states), repeat=3):
            c1.checked += 1
            for law in semilattice_violations(a, b, c, merge, self.equal):
                c1.fail(self.universe.name, lambda law=law, x=x, y=y, z=z: self._law_trace(
                    law, "C1", "laws on concrete states", fam[x], fam[y], fam[z]))
        c1.seconds += time.perf_counter() - started
        c2 = self.tallies.get_tally("C2", "laws on concrete states", "pairs")
        started = time.perf_counter()
        for (x, a), (y, b) in itertools.product(enumerate(states), repeat=2):
            c2.checked += 1
            for law in order_violations(a, b, merge, self.equal, self.leq):
                c2.fail(self.universe.name, lambda law=law, x=x, y=y: self._law_trace(
                    law, "C2", "laws on concrete states", fam[x], fam[y], None))
        c2.seconds += time.perf_counter() - started

    def _law_trace(self, law: str, claim: str, check: str, ea: Expr, eb: Expr, ec: Expr | None) -> dict[str, Any]:
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
        return self.trace(check, claim, b, f"{law} fails on states {', '.join(parts)}")

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
        absm = self.tallies.get_tally("C1", "refinement: abstract(merge) = union", "pairs")
        started = time.perf_counter()
        for e in merged:
            absm.checked += 1
            s = self.state(e)
            if backend.abstract(s) != backend.abstract(self.state(e.left)).merge(backend.abstract(self.state(e.right))):
                absm.fail(self.universe.name, lambda e=e: self._abstract_trace(e))
        absm.seconds += time.perf_counter() - started
        order = self.tallies.get_tally("C3", "refinement: render order = spec order", "states")
        bag = self.tallies.get_tally("C6", "refinement: render = BagMerge of spec order", "states")
        for e in schedules:
            started = time.perf_counter()
            s = self.state(e)
            spec_order = [self.objects[i] for i in self._spec_order(e)]
            order.checked += 1
            if backend.render_order(s) != [backend.content_id(f) for f in spec_order]:
                order.fail(self.universe.name, lambda e=e: self._order_trace(e))
            mid = time.perf_counter()
            order.seconds += mid - started
            bag.checked += 1
            if self.render_memo(s) != backend.bag_digest(spec_order):
                bag.fail(self.universe.name, lambda e=e: self._bag_trace(e))
            bag.seconds += time.perf_counter() - mid

    def _abstract_trace(self, e: Join) -> dict[str, Any]:
        b = ProgramBuilder()
        left, right = b.state(e.left), b.state(e.right)
        b.expect_equal(b.join_abstract(b.abstract(left), b.abstract(right)), b.abstract(b.merge(left, right)))
        return self.trace("refinement: abstract(merge) = union", "C1", b,
                          f"abstract(merge) is not the union of abstracts for {en.render_expr(e)}")

    def _order_trace(self, e: Expr) -> dict[str, Any]:
        b = ProgramBuilder()
        s = b.state(e)
        b.expect_equal(b.canonical_order([b.fragment(i) for i in self._spec_order(e)]), b.render_order(s))
        return self.trace("refinement: render order = spec order", "C3", b,
                          f"render order of {en.render_expr(e)} is not spec.canonical_order")

    def _bag_trace(self, e: Expr) -> dict[str, Any]:
        b = ProgramBuilder()
        s = b.state(e)
        b.expect_equal(b.bag([b.fragment(i) for i in self._spec_order(e)]), b.render(s))
        return self.trace("refinement: render = BagMerge of spec order", "C6", b,
                          f"render of {en.render_expr(e)} is not BagMerge of its spec order")

    # --- everything, arity by arity -------------------------------------------------------------

    def run(self, max_arity: int) -> list[Row]:
        top = min(max_arity, len(self.universe.fragments))
        for n in range(1, top + 1):
            row = Row(n)
            self.c3(n, row)
            if n >= 2:
                self.c4(n, row)
            self.rows.append(row)
            self.progress(f"universe {self.universe.name}", n, top)
        self.c6()
        self.laws()
        self.refinement(en.permutations(top))
        return self.rows

