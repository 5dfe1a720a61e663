"""What every exhaustive check on one universe shares: the universe's fragment objects built
once, states built from schedules, the render calls (counted, never memoized by set), the
comparison with the independent oracle, and how a violation is counted and traced.

A universe is either plain data (``backend.Universe``: bit patterns, so a violation becomes a
replayable trace) or fragments the caller already holds as the backend's objects
(``HeldUniverse``: the real caches of a replay, whose bytes are too large to be data here; a
violation on them is counted, not traced).  The checks themselves live in ``order_checks``
(C3), ``bag_checks`` (C4, C6) and ``law_checks`` (C1, C2, the refinement)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from modelcheck import oracle_link
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.backend import Backend, FragmentDesc, Universe, render_digests
from modelcheck.coverage import ScheduleWatcher
from modelcheck.program import ProgramBuilder, evaluate, failed_expectations, run_program
from modelcheck.schedules import Expr
from modelcheck.tallies import Row, Tallies, Tally
from modelcheck.trace import NOT_REPRODUCED, make_trace
from modelcheck.unions import Leaves
from spec import Check, Progress, no_progress
from spec.fragment_set import current_iteration_order, reseed_shuffle

# how BagMerge re-delivery is searched: one copy of each fragment appended after the set
# (``canonmerge check``), or one copy in every interleaving of the arrivals (the replay)
APPENDED, INTERLEAVED = "appended", "interleaved"


@dataclass(frozen=True)
class HeldUniverse:
    """Fragments the caller already holds as the backend's objects, listed so that every prefix
    is a set to check; renders start at ``base``."""

    name: str
    fragments: tuple[Any, ...]
    base: int = 0


class UniverseSearch:
    """The universe, its fragment objects and the shared machinery of the checks on it."""

    def __init__(self, backend: Backend, universe: Universe | HeldUniverse, tallies: Tallies, *,
                 backend_name: str, mutant: str | None, redeliveries: int = 1,
                 selected: Iterable[Check], progress: Progress = no_progress,
                 bag_copies: str = APPENDED) -> None:
        """``selected``: the checks to run, always named by the caller (a default would let a caller
        that forgot its selection run every check unseen)."""
        if bag_copies not in (APPENDED, INTERLEAVED):
            raise ValueError(f"bag_copies must be {APPENDED!r} or {INTERLEAVED!r}, not {bag_copies!r}")
        self.backend, self.universe, self.tallies = backend, universe, tallies
        self.backend_name, self.mutant = backend_name, mutant
        self.max_extra, self.progress, self.bag_copies = redeliveries, progress, bag_copies
        self.selected = frozenset(selected)
        self.base = universe.base
        # a held universe has no descriptions: nothing of it can be written into a trace
        self.traced = isinstance(universe, Universe)
        self.descs: list[FragmentDesc] = list(universe.fragments) if self.traced else []
        self.objects: dict[int, Any] = (
            {i: backend.build(universe.geometry, d) for i, d in enumerate(self.descs)}  # type: ignore[union-attr]
            if self.traced else dict(enumerate(universe.fragments)))
        self.size = len(self.objects)   # the universe's own fragments (twins added later are not)
        self.leaves = Leaves(backend, self.objects)
        self.digests: dict[Check | None, set[str]] = {}   # C3 digests seen (None: every family)
        self.renders = 0
        self.rows: list[Row] = []
        self._by_object: dict[int, tuple[Any, str]] = {}
        self.use_oracle = self.traced and self.wants(P.ORACLE) and oracle_link.supports_oracle(backend)
        self._oracle: dict[tuple[str, tuple[int, ...]], Any] = {}      # oracle renders, by input
        self._oracle_verdicts: dict[tuple[str, tuple[int, ...], str], bool] = {}  # by product digest
        self.watcher: ScheduleWatcher | None = None   # counts and samples what C3 renders (coverage)

    def wants(self, *checks: Check) -> bool:
        return any(c in self.selected for c in checks)

    # --- states and renders ------------------------------------------------------------------

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

    def distinct(self, n: int) -> list[int]:
        """Indices of the first ``n`` fragments with distinct content ids."""
        firsts: dict[bytes, int] = {}
        for i in range(self.size):
            firsts.setdefault(self.backend.content_id(self.objects[i]), i)
        return sorted(firsts.values())[:n]

    # --- violations --------------------------------------------------------------------------

    def fail(self, tally: Tally, make: Callable[[], dict[str, Any]]) -> None:
        """Count a violation, traced (by ``make``) where the universe is data."""
        tally.fail(self.universe.name, make if self.traced else None)

    def trace(self, check: Check, b: ProgramBuilder, note: str) -> dict[str, Any]:
        """Run the program once more to record what it observes, and package it."""
        universe = self.universe
        assert isinstance(universe, Universe), "a held universe is never traced"
        indices = sorted({op["index"] for op in b.ops if op["op"] == "fragment"})
        descs = {i: self.descs[i] for i in indices}
        reseed_shuffle("program")
        values = run_program(self.backend, universe.geometry, descs, b.ops, self.base)
        failed = failed_expectations(b.expect, values)
        expected, observed = (failed[0][1], failed[0][2]) if failed else ("", NOT_REPRODUCED)
        return make_trace(kind="program", check=check.name, claim=check.claim, backend=self.backend_name,
                          mutant=self.mutant, universe=universe.name,
                          geometry=universe.geometry, fragments=descs, ops=b.ops,
                          expect=b.expect, expected=expected, observed=observed, note=note,
                          base=self.base, iteration=current_iteration_order())

    # --- every render against the independent oracle (C3) --------------------------------------

    def _oracle_for(self, mode: str, indices: tuple[int, ...]) -> Any:
        key = (mode, indices)
        if key not in self._oracle:
            geometry = self.universe.geometry  # type: ignore[union-attr]  (only data universes)
            self._oracle[key] = oracle_link.oracle_render(
                self.backend, geometry, [self.descs[i] for i in indices], mode, self.base)
        return self._oracle[key]

    def _agrees(self, mode: str, indices: tuple[int, ...], subject: Any, digest: str) -> bool:
        """Does the render whose digest is ``digest`` equal the oracle's?  Equal digests settle it;
        otherwise the bytes are fetched again (their digest must be the same: a render is a
        function) and compared element by element.  Verdicts are kept per product digest — the
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

    def oracle_checks(self, indices: tuple[int, ...], to_expr: Callable[[Any], Expr],
                      pairs: Sequence[tuple[Any, Any]], digests: Sequence[str]) -> None:
        """The render of each (key, state) of a batch (``digests``, in order; every state holds the
        set of fragments ``indices``; ``to_expr(key)`` builds its schedule, only for a trace)
        against the oracle's render of that set: one call per batch, each render compared."""
        if not self.use_oracle:
            return
        tally = self.tallies.of(P.ORACLE, "renders")
        tally.checked += len(digests)
        for (key, state), digest in zip(pairs, digests):
            if not self._agrees("canonical", indices, state, digest):
                self.fail(tally, lambda k=key: self._oracle_trace(to_expr(k), indices))

    def oracle_bag_check(self, order: Sequence[int], digest: str) -> None:
        if not self.use_oracle:
            return
        tally = self.tallies.of(P.ORACLE, "renders")
        started = time.perf_counter()
        tally.checked += 1
        if not self._agrees("bag", tuple(order), [self.objects[i] for i in order], digest):
            self.fail(tally, lambda: self._oracle_bag_trace(list(order)))
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
