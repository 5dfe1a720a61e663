"""The exhaustive checks on one fragment universe: C3, C4, C6, the laws C1/C2 on concrete
states, and the refinement of the abstract model by the backend.

Every ordering's state is built by folding ``backend.merge`` over ``backend.singleton``s in that
order or tree (a re-delivery is ``backend.copy``: a distinct object with equal content), and
every one of them is rendered (``backend.render_digest``, or ``render_digests`` on a batch of
states, which may share the fixed cost of its torch calls but renders each state from its own
fragments): nothing is memoized by set, since a memo keyed by the set would make the C3 checks
compare a render with itself.  The laws memoize
renders only by the identity of the state object (a state built once is rendered once; two
distinct objects holding the same set are always rendered by two calls).

What each check claims is declared in ``modelcheck.properties``; here the search only counts
cases against those declarations.  A violation is minimized (fragments, then re-delivered
copies, removed while it persists) and compiled into a replayable program trace."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck import oracle_link
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.backend import Backend, FragmentDesc, Universe, render_digests
from modelcheck.coverage import ScheduleWatcher
from modelcheck.program import ProgramBuilder, evaluate, failed_expectations, run_program
from modelcheck.schedules import Expr, Join, Leaf
from modelcheck.trace import make_trace
from modelcheck.unions import Leaves, comb_states, tree_states
from spec import Check, Progress, canonical_order, no_progress
from spec.fragment_set import current_iteration_order, reseed_shuffle
from spec.laws import order_violations, semilattice_violations

# C3 schedules rendered per ``render_many`` call: enough that a batch's fixed cost is small
# beside its renders, few enough that the states held meanwhile are nothing
RENDER_BATCH = 128


def _batches(pairs: Iterable[tuple[Any, Any]], size: int) -> Iterator[list[tuple[Any, Any]]]:
    it = iter(pairs)
    while batch := list(itertools.islice(it, size)):
        yield batch


@dataclass
class Tally:
    """What one registered check found, accumulated over universes: cases checked and
    violations (ALWAYS) or witnesses (SOMETIMES)."""

    check: Check
    unit: str
    checked: int = 0
    found: int = 0
    traces: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    describe: Callable[[Tally], str] | None = None
    _traced: set[str] = field(default_factory=set)

    def fail(self, universe: str, make: Callable[[], dict[str, Any]]) -> None:
        """Count a violation; build a trace for the first one in each universe."""
        self.found += 1
        if universe not in self._traced:
            self._traced.add(universe)
            self.traces.append(make())

    def figure(self) -> str | None:
        return self.describe(self) if self.describe is not None else None


def digests_per_set(t: Tally) -> str:
    """The C3 matrix's figure: the most distinct digests any one set rendered to."""
    most = t.details.get("max digests per set", 0)
    return f"{most} digest{'s' if most != 1 else ''} per set / {t.checked:,} {t.unit}"


class Tallies(dict):
    """One ``Tally`` per registered check, created on first use."""

    def of(self, check: Check, unit: str, describe: Callable[[Tally], str] | None = None) -> Tally:
        if check not in self:
            self[check] = Tally(check, unit, describe=describe)
        return self[check]


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


def head_swapped_twin(d: FragmentDesc) -> FragmentDesc | None:
    """Heads 0 and 1 swapped at every layer: the same multiset of key norms (so exactly the same
    m) but other content; ``None`` when there is one head or the swap changes nothing."""
    if len(d.keys[0]) < 2:
        return None

    def swap(t: tuple) -> tuple:
        return tuple((layer[1], layer[0], *layer[2:]) for layer in t)

    twin = FragmentDesc(d.start, swap(d.keys), swap(d.values))
    return None if twin == d else twin


class UniverseCheck:
    """Runs the selected checks on one universe for one backend."""

    def __init__(self, backend: Backend, universe: Universe, tallies: Tallies, *, backend_name: str,
                 mutant: str | None, redeliveries: int = 1, progress: Progress = no_progress,
                 selected: Iterable[Check] | None = None) -> None:
        self.backend, self.universe, self.tallies = backend, universe, tallies
        self.backend_name, self.mutant = backend_name, mutant
        self.max_extra, self.progress = redeliveries, progress
        self.selected = frozenset(selected) if selected is not None else frozenset(P.ALL)
        self.base = universe.base
        self.descs: list[FragmentDesc] = list(universe.fragments)
        self.objects = {i: backend.build(universe.geometry, d) for i, d in enumerate(self.descs)}
        self.leaves = Leaves(backend, self.objects)
        self.digests: dict[Check | None, set[str]] = {}   # C3 digests seen (None: every family)
        self.renders = 0
        self._by_object: dict[int, tuple[Any, str]] = {}
        self.rows: list[Row] = []
        self.use_oracle = self.wants(P.ORACLE) and oracle_link.supports_oracle(backend)
        self._oracle: dict[tuple[str, tuple[int, ...]], Any] = {}      # oracle renders, by input
        self._oracle_verdicts: dict[tuple[str, tuple[int, ...], str], bool] = {}  # by product digest
        self.watcher: ScheduleWatcher | None = None   # counts and samples what C3 renders (coverage)

    def wants(self, *checks: Check) -> bool:
        return any(c in self.selected for c in checks)

    # --- helpers -----------------------------------------------------------------------------

    def state(self, expr: Expr) -> Any:
        """The state a replica reaches by ``expr``; the shuffled iteration order is reseeded per
        schedule so that a schedule and its replayed trace see the same shuffles."""
        reseed_shuffle(en.render_expr(expr))
        return evaluate(self.backend, expr, self.objects)

    def render(self, state: Any) -> str:
        self.renders += 1
        return self.backend.render_digest(state, self.base)

    def render_many(self, states: list[Any]) -> list[str]:
        """One render per state, as ``render`` gives it; a backend with ``render_digests`` may
        share the fixed cost of its torch calls between them (never their bytes)."""
        self.renders += len(states)
        return render_digests(self.backend, states, self.base)

    def render_once(self, state: Any) -> str:
        """Render a state object once; the memo is keyed by the object (kept alive), never by
        its set, so two objects holding the same set are two render calls."""
        hit = self._by_object.get(id(state))
        if hit is None or hit[0] is not state:
            hit = self._by_object[id(state)] = (state, self.render(state))
        return hit[1]

    def bag(self, fragments: list[Any]) -> str:
        return self.backend.bag_digest(fragments, self.base)

    def trace(self, check: Check, b: ProgramBuilder, note: str) -> dict[str, Any]:
        """Run the program once more to record what it observes, and package it."""
        indices = sorted({op["index"] for op in b.ops if op["op"] == "fragment"})
        descs = {i: self.descs[i] for i in indices}
        reseed_shuffle("program")
        values = run_program(self.backend, self.universe.geometry, descs, b.ops, self.base)
        failed = failed_expectations(b.expect, values)
        expected, observed = (failed[0][1], failed[0][2]) if failed else ("", "(did not reproduce)")
        return make_trace(kind="program", check=check.name, claim=check.claim, backend=self.backend_name,
                          mutant=self.mutant, universe=self.universe.name,
                          geometry=self.universe.geometry, fragments=descs, ops=b.ops,
                          expect=b.expect, expected=expected, observed=observed, note=note,
                          base=self.base, iteration=current_iteration_order())

    # --- C3: every render against the independent oracle -------------------------------------

    def _oracle_for(self, mode: str, indices: tuple[int, ...]) -> Any:
        key = (mode, indices)
        if key not in self._oracle:
            self._oracle[key] = oracle_link.oracle_render(
                self.backend, self.universe.geometry, [self.descs[i] for i in indices], mode, self.base)
        return self._oracle[key]

    def _agrees(self, mode: str, indices: tuple[int, ...], subject: Any, digest: str) -> bool:
        """Does the render whose digest is ``digest`` equal the oracle's?  Equal digests settle it;
        otherwise the bytes are fetched again (their digest must be the same: a render is a
        function) and compared with the NaN rule.  Verdicts are kept per product digest — the
        same SHA-256 is the same bytes — never per set."""
        expected = self._oracle_for(mode, indices)
        if digest == expected.digest:
            return True
        key = (mode, indices, digest)
        if key not in self._oracle_verdicts:
            found = oracle_link.mismatches(self.backend, subject, mode, self.base, expected)
            again = (self.backend.render_bytes(subject, self.base) if mode == "canonical"  # type: ignore[attr-defined]
                     else self.backend.bag_bytes(list(subject), self.base)).digest  # type: ignore[attr-defined]
            self._oracle_verdicts[key] = not found and again == digest
        return self._oracle_verdicts[key]

    def oracle_check(self, indices: tuple[int, ...], expr: Callable[[], Expr], state: Any, digest: str) -> None:
        """The render of ``state`` (the set of fragments ``indices``; ``expr()`` builds its
        schedule, only for a trace) against the oracle's render of that set."""
        if not self.use_oracle:
            return
        tally = self.tallies.of(P.ORACLE, "renders")
        tally.checked += 1
        if not self._agrees("canonical", indices, state, digest):
            tally.fail(self.universe.name, lambda: self._oracle_trace(expr(), indices))

    def oracle_bag_check(self, order: list[int], digest: str) -> None:
        if not self.use_oracle:
            return
        tally = self.tallies.of(P.ORACLE, "renders")
        started = time.perf_counter()
        tally.checked += 1
        if not self._agrees("bag", tuple(order), [self.objects[i] for i in order], digest):
            tally.fail(self.universe.name, lambda: self._oracle_bag_trace(order))
        tally.seconds += time.perf_counter() - started

    def _oracle_trace(self, expr: Expr, indices: tuple[int, ...]) -> dict[str, Any]:
        b = ProgramBuilder()
        state = b.state(expr)
        b.expect_empty(b.oracle_mismatch(state, [b.fragment(i) for i in indices]))
        return self.trace(P.ORACLE, b, f"the render of schedule {en.render_expr(expr)} differs from the "
                          f"independent oracle's render of its set at base {self.base}")

    def _oracle_bag_trace(self, order: list[int]) -> dict[str, Any]:
        b = ProgramBuilder()
        frags = [b.fragment(i) for i in order]
        b.expect_empty(b.oracle_mismatch(frags[0], frags, mode="bag"))
        return self.trace(P.ORACLE, b, f"BagMerge of fragments {order} differs from the independent "
                          f"oracle's at base {self.base}")

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

    def c3_trace(self, check: Check, ref: Expr, bad: Expr) -> dict[str, Any]:
        ref, bad = self.minimize(ref, bad)
        b = ProgramBuilder()
        r1 = b.render(b.state(ref))
        r2 = b.render(b.state(bad))
        b.expect_equal(r1, r2)
        return self.trace(check, b, f"schedule {en.render_expr(ref)} and schedule "
                          f"{en.render_expr(bad)} hold the same set but render differently")

    def _schedules(self, n: int, prefix: Sequence[int]
                   ) -> list[tuple[Check, str, Callable[[Any], Expr], Callable[[], Iterator[tuple[Any, Any]]]]]:
        """(check, row column, schedule of a key, (key, state) pairs) for the three C3 families."""
        b, leaves = self.backend, self.leaves
        return [
            (P.PERMUTATIONS, "permutations", en.sequence, lambda: comb_states(b, leaves, n, 0, prefix)),
            (P.MERGE_TREES, "trees", lambda e: e, lambda: tree_states(b, leaves, n, prefix)),
            (P.REDELIVERIES, "redeliveries", en.sequence,
             lambda: itertools.chain.from_iterable(comb_states(b, leaves, n, e, prefix)
                                                   for e in range(1, self.max_extra + 1))),
        ]

    def c3(self, n: int, row: Row, prefix: Sequence[int] = ()) -> None:
        """Every schedule of the first n fragments (those starting with ``prefix``) must render
        like the index-order fold, which is built and rendered afresh here."""
        ref_expr = en.fold([Leaf(i) for i in range(n)])
        ref = self.render(self.state(ref_expr))
        every = {ref}
        indices = tuple(range(n))
        shuffled = current_iteration_order() == "shuffled"
        units = {P.PERMUTATIONS: "permutations", P.MERGE_TREES: "trees", P.REDELIVERIES: "re-deliveries"}
        for check, column, to_expr, pairs in self._schedules(n, prefix):
            wanted = self.wants(check)
            if not (wanted or self.use_oracle):
                continue
            tally = self.tallies.of(check, units[check], digests_per_set) if wanted else Tally(check, units[check])
            started = time.perf_counter()
            count, digests = 0, {ref}
            fed = pairs() if self.watcher is None else self.watcher.watch(units[check], n, prefix, to_expr, pairs())
            for batch in _batches(fed, 1 if shuffled else RENDER_BATCH):
                if shuffled:  # a schedule and its replayed trace see the same shuffles
                    reseed_shuffle(en.render_expr(to_expr(batch[0][0])))
                for (key, state), digest in zip(batch, self.render_many([state for _, state in batch])):
                    count += 1
                    digests.add(digest)
                    self.oracle_check(indices, lambda k=key, f=to_expr: f(k), state, digest)
                    if digest != ref:
                        row.violations += 1
                        tally.fail(self.universe.name,
                                   lambda k=key, f=to_expr, c=check: self.c3_trace(c, ref_expr, f(k)))
            tally.checked += count
            tally.seconds += time.perf_counter() - started
            tally.details["max digests per set"] = max(tally.details.get("max digests per set", 0), len(digests))
            if wanted:
                self.digests.setdefault(check, set()).update(digests)
            setattr(row, column, getattr(row, column) + count)
            every |= digests
        self.digests.setdefault(None, set()).update(every)
        row.canonical_digests = len(every)

    # --- C3: the engine's sort, driven with every input order ----------------------------------

    def _distinct(self, n: int) -> list[int]:
        """Indices of the first ``n`` fragments with distinct content ids."""
        firsts: dict[bytes, int] = {}
        for i in range(len(self.universe.fragments)):
            firsts.setdefault(self.backend.content_id(self.objects[i]), i)
        return sorted(firsts.values())[:n]

    def _with_twin(self, members: list[int]) -> list[int]:
        """``members`` plus a head-swapped twin of the first (equal m, other id), if it has one."""
        twin = head_swapped_twin(self.descs[members[0]])
        if twin is None:
            return members
        if twin in self.descs:
            index = self.descs.index(twin)
        else:
            self.descs.append(twin)
            index = len(self.descs) - 1
            self.objects[index] = self.backend.build(self.universe.geometry, twin)
        return members if index in members else members + [index]

    def engine_order(self, top: int) -> None:
        """For each prefix set (and, at the top arity, with an equal-m twin added), the engine's
        own sort must return spec.canonical_order by the backend's key from every input order."""
        tally = self.tallies.of(P.ENGINE_ORDER, "input orders")
        started = time.perf_counter()
        for n in range(1, top + 1):
            members = self._distinct(n)
            sets = [members] + ([self._with_twin(members)] if n == top else [])
            for chosen in sets:
                want = [self.backend.content_id(f) for f in
                        canonical_order([self.objects[i] for i in chosen], self.backend.order_key)]
                for perm in itertools.permutations(chosen):
                    tally.checked += 1
                    if self.backend.order_of([self.objects[i] for i in perm]) != want:
                        tally.fail(self.universe.name, lambda p=perm: self._engine_trace(list(p)))
        tally.seconds += time.perf_counter() - started

    def _engine_trace(self, perm: list[int]) -> dict[str, Any]:
        b = ProgramBuilder()
        frags = [b.fragment(i) for i in perm]
        b.expect_equal(b.canonical_order(frags), b.order_of(frags))
        return self.trace(P.ENGINE_ORDER, b, f"the engine orders fragments {perm} (in this input "
                          "order) differently from spec.canonical_order")

    # --- C4: BagMerge witnesses --------------------------------------------------------------

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
            once = self.bag(objs)
            for i in range(n):
                twice = self.bag(objs + [self.backend.copy(objs[i])])
                red.checked += 1
                if twice != once:
                    red.found += 1
                    red.details.setdefault("witness", {"universe": self.universe.name, "order": list(range(n)),
                                                       "redelivered": i, "digests": [once, twice]})
            red.seconds += time.perf_counter() - started

    # --- C6: N = 2 inherits a BagMerge order ---------------------------------------------------

    def c6(self) -> None:
        tally = self.tallies.of(P.PAIRS, "pairs")
        started = time.perf_counter()
        ids = {i: self.backend.content_id(self.objects[i]) for i in range(len(self.universe.fragments))}
        for i, j in itertools.combinations(sorted(ids), 2):
            if ids[i] == ids[j]:
                continue
            a, b = self.objects[i], self.objects[j]
            digest = self.render(self.backend.merge(self.backend.singleton(a), self.backend.singleton(b)))
            tally.checked += 1
            if digest not in (self.bag([a, b]), self.bag([b, a])):
                tally.fail(self.universe.name, lambda i=i, j=j: self._c6_trace(i, j))
        tally.seconds += time.perf_counter() - started

    def _c6_trace(self, i: int, j: int) -> dict[str, Any]:
        b = ProgramBuilder()
        fa, fb = b.fragment(i), b.fragment(j)
        r = b.render(b.merge(b.singleton(fa), b.singleton(fb)))
        b.expect_one_of(r, [b.bag([fa, fb]), b.bag([fb, fa])])
        return self.trace(P.PAIRS, b, f"the canonical render of {{{i}, {j}}} is neither BagMerge order")

    # --- C1/C2 laws and the refinement of the abstract model -----------------------------------

    def family(self, k: int = 3) -> list[Expr]:
        """Concrete states for the laws: every non-empty subset of the first k distinct fragments
        (folded in index order), plus singletons of re-delivered copies."""
        chosen = self._distinct(k)
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
                    c1.fail(self.universe.name, lambda law=law, x=x, y=y, z=z: self._law_trace(
                        law, P.LAWS_C1, fam[x], fam[y], fam[z]))
            c1.seconds += time.perf_counter() - started
        if self.wants(P.LAWS_C2):
            c2 = self.tallies.of(P.LAWS_C2, "pairs")
            started = time.perf_counter()
            for (x, a), (y, b) in itertools.product(enumerate(states), repeat=2):
                c2.checked += 1
                for law in order_violations(a, b, merge, self.equal, self.leq):
                    c2.fail(self.universe.name, lambda law=law, x=x, y=y: self._law_trace(
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
                    absm.fail(self.universe.name, lambda e=e: self._abstract_trace(e))
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
                    order.fail(self.universe.name, lambda e=e: self._order_trace(e))
                order.seconds += time.perf_counter() - started
            if bag is not None:
                mid = time.perf_counter()
                bag.checked += 1
                bag_digest = self.bag(spec_order)
                if self.render(s) != bag_digest:
                    bag.fail(self.universe.name, lambda e=e: self._bag_trace(e))
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

    # --- the work, in the pieces the shards run -------------------------------------------------

    def top(self, max_arity: int) -> int:
        """The largest arity checked on this universe: its first ``top`` fragments."""
        return min(max_arity, len(self.universe.fragments))

    def run_c3(self, n: int, prefix: Sequence[int] = ()) -> Row:
        """C3 (and the oracle) on the schedules of arity n that start with ``prefix``."""
        row = Row(n)
        if self.wants(P.PERMUTATIONS, P.MERGE_TREES, P.REDELIVERIES) or self.use_oracle:
            self.c3(n, row, prefix)
        return row

    def run_bag(self, n: int) -> Row:
        """C4 on arity n (n >= 2)."""
        row = Row(n)
        if n >= 2 and self.wants(P.BAG_ORDER, P.BAG_REDELIVERY):
            self.c4(n, row)
        return row

    def run_universe(self, top: int) -> None:
        """The checks over the whole universe: the engine's sort, C6, the laws, the refinement."""
        if self.wants(P.ENGINE_ORDER):
            self.engine_order(top)
        if self.wants(P.PAIRS):
            self.c6()
        if self.wants(P.LAWS_C1, P.LAWS_C2):
            self.laws()
        if self.wants(P.REFINEMENT_UNION, P.REFINEMENT_ORDER, P.REFINEMENT_BAG):
            self.refinement(en.permutations(top))

    def run(self, max_arity: int) -> list[Row]:
        """Everything on this universe in one process, arity by arity (what one shard plan run
        in order does; kept for direct use)."""
        top = self.top(max_arity)
        for n in range(1, top + 1):
            row = self.run_c3(n)
            row.bag_digests = self.run_bag(n).bag_digests
            self.rows.append(row)
            self.progress(f"universe {self.universe.name}", n, top)
        self.run_universe(top)
        return self.rows
