"""C3 on one universe: every permutation, merge tree and re-delivery pattern of each prefix set
renders like the index-order fold; the engine's own sort driven with every input order; and a
violation minimized (fragments, then re-delivered copies, dropped while it persists).

Every ordering's state is built by folding ``backend.merge`` over ``backend.singleton``s in that
order or tree (a re-delivery is ``backend.copy``: a distinct object with equal content), and
every one of them is rendered (``backend.render_digest``, or ``render_digests`` on a batch of
states, which may share the fixed cost of its torch calls but renders each state from its own
fragments): nothing is memoized by set, since a memo keyed by the set would make these checks
compare a render with itself."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.backend import FragmentDesc
from modelcheck.program import ProgramBuilder
from modelcheck.schedules import Expr, Leaf
from modelcheck.tallies import Row, Tally, digests_per_set
from modelcheck.unions import comb_states, tree_states
from modelcheck.universe_search import UniverseSearch
from spec import Check, canonical_order
from spec.fragment_set import current_iteration_order, reseed_shuffle

# C3 schedules rendered per ``render_many`` call: enough that a batch's fixed cost is small
# beside its renders, few enough that the states held meanwhile are nothing
RENDER_BATCH = 128

UNITS = {P.PERMUTATIONS: "permutations", P.MERGE_TREES: "trees", P.REDELIVERIES: "re-deliveries"}


def _batches(pairs: Iterable[tuple[Any, Any]], size: int) -> Iterator[list[tuple[Any, Any]]]:
    it = iter(pairs)
    while batch := list(itertools.islice(it, size)):
        yield batch


def head_swapped_twin(d: FragmentDesc) -> FragmentDesc | None:
    """Heads 0 and 1 swapped at every layer: the same multiset of key norms (so exactly the same
    m) but other content; ``None`` when there is one head or the swap changes nothing."""
    if len(d.keys[0]) < 2:
        return None

    def swap(t: tuple) -> tuple:
        return tuple((layer[1], layer[0], *layer[2:]) for layer in t)

    twin = FragmentDesc(d.start, swap(d.keys), swap(d.values))
    return None if twin == d else twin



def swapped_heads_of(a: FragmentDesc, b: FragmentDesc) -> bool:
    """Whether ``a`` is ``b`` with heads 0 and 1 exchanged at every layer, keys and values, all
    else equal.  Compared head by head, apart from ``head_swapped_twin``'s construction, so that
    the engine-order check's count of its top set is not computed by the code it counts."""
    if a.start != b.start or len(a.keys) != len(b.keys) or len(a.values) != len(b.values):
        return False
    return all(len(x) == len(y) >= 2 and x[0] == y[1] and x[1] == y[0] and x[2:] == y[2:]
               for x, y in zip((*a.keys, *a.values), (*b.keys, *b.values)))


def twin_set_size(descs: Sequence[FragmentDesc], members: Sequence[int]) -> int:
    """The size of the top set with its twin, from the fragments' descriptions alone: one more
    than ``members`` when the first has two heads or more that differ somewhere (so that
    exchanging them gives other content) and no member already is that exchange."""
    if not descs:
        return len(members)
    first = descs[members[0]]
    heads = min(len(layer) for layer in (*first.keys, *first.values))
    differ = heads >= 2 and any(layer[0] != layer[1] for layer in (*first.keys, *first.values))
    held = any(swapped_heads_of(descs[i], first) for i in members)
    return len(members) + (1 if differ and not held else 0)


def engine_order_count(top: int, distinct: int, with_twin: int) -> int:
    """Input orders the engine-order check sorts: every order of each prefix set of 1..``top``
    fragments (at most ``distinct`` of them have distinct content), and of the top set with its
    twin (``with_twin`` members): the sum of min(n, distinct)! plus with_twin!."""
    return sum(math.factorial(min(n, distinct)) for n in range(1, top + 1)) + math.factorial(with_twin)

class OrderChecks(UniverseSearch):
    """C3: the orderings of each prefix set, and the engine's sort."""

    # --- permutations, merge trees, re-deliveries --------------------------------------------

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
        for check, column, to_expr, pairs in self._schedules(n, prefix):
            wanted = self.wants(check)
            if not (wanted or self.use_oracle):
                continue
            tally = self.tallies.of(check, UNITS[check], digests_per_set) if wanted else Tally(check, UNITS[check])
            started = time.perf_counter()
            count, digests = 0, {ref}
            fed = pairs() if self.watcher is None else self.watcher.watch(UNITS[check], n, prefix, to_expr, pairs())
            for batch in _batches(fed, 1 if shuffled else RENDER_BATCH):
                if shuffled:  # a schedule and its replayed trace see the same shuffles
                    reseed_shuffle(en.render_expr(to_expr(batch[0][0])))
                rendered = self.render_many([state for _, state in batch])
                count += len(rendered)
                digests.update(rendered)
                self.oracle_checks(indices, to_expr, batch, rendered)
                if rendered.count(ref) == len(rendered):   # the common case: every schedule agrees
                    continue
                for (key, _), digest in zip(batch, rendered):
                    if digest != ref:
                        row.violations += 1
                        self.fail(tally, lambda k=key, f=to_expr, c=check: self.c3_trace(c, ref_expr, f(k)))
            tally.checked += count
            tally.seconds += time.perf_counter() - started
            tally.details["max digests per set"] = max(tally.details.get("max digests per set", 0), len(digests))
            if wanted:
                self.digests.setdefault(check, set()).update(digests)
            setattr(row, column, getattr(row, column) + count)
            every |= digests
        self.digests.setdefault(None, set()).update(every)
        row.canonical_digests = len(every)

    # --- the engine's sort, driven with every input order --------------------------------------

    def _with_twin(self, members: list[int]) -> list[int]:
        """``members`` plus a head-swapped twin of the first (equal m, other id), if it has one
        (a held universe has no descriptions to swap heads in)."""
        if not self.descs:
            return members
        twin = head_swapped_twin(self.descs[members[0]])
        if twin is None:
            return members
        if twin in self.descs:
            index = self.descs.index(twin)
        else:
            self.descs.append(twin)
            index = len(self.descs) - 1
            self.objects[index] = self.backend.build(self.universe.geometry, twin)  # type: ignore[union-attr]
        return members if index in members else members + [index]

    def engine_order(self, top: int) -> None:
        """For each prefix set (and, at the top arity, with an equal-m twin added), the engine's
        own sort must return spec.canonical_order by the backend's key from every input order."""
        tally = self.tallies.of(P.ENGINE_ORDER, "input orders")
        started = time.perf_counter()
        count = 0
        for n in range(1, top + 1):
            members = self.distinct(n)
            sets = [members] + ([self._with_twin(members)] if n == top else [])
            for chosen in sets:
                want = [self.backend.content_id(f) for f in
                        canonical_order([self.objects[i] for i in chosen], self.backend.order_key)]
                for perm in itertools.permutations(chosen):
                    count += 1
                    if self.backend.order_of([self.objects[i] for i in perm]) != want:
                        self.fail(tally, lambda p=perm: self._engine_trace(list(p)))
        tally.checked += count
        distinct = self.distinct(top)
        with_twin = twin_set_size(self.descs[:self.size], distinct)
        closed = engine_order_count(top, len(distinct), with_twin)
        if count != closed:   # a loop that stops short (or repeats) sorted other orders than it claims
            tally.fail(self.universe.name, None)
            tally.details.setdefault("input orders beside the closed form", f"{count:,} of {closed:,} in "
                                     f"universe {self.universe.name!r}")
        scanned = sets[-1]   # the top set with its twin, held to its size from the descriptions
        misfiled = [i for i in scanned if not self._built_from_desc(i)]
        if misfiled:   # a twin sorted under a number whose description is another (or none)
            tally.fail(self.universe.name, None)
            tally.details.setdefault("fragments not built from their description", f"{misfiled} in universe "
                                     f"{self.universe.name!r}")
        if len(scanned) != with_twin:   # a scan of another set than the twin's would not see a misfiled twin
            tally.fail(self.universe.name, None)
            tally.details.setdefault("fragments scanned beside the twin set", f"{len(scanned)} of {with_twin} in "
                                     f"universe {self.universe.name!r}")
        tally.seconds += time.perf_counter() - started

    def _built_from_desc(self, index: int) -> bool:
        """Whether the fragment object numbered ``index`` is the build of the description of that
        number, built again and compared by content id: an added twin, and the universe's own too
        (a twin filed under an original's number replaces that original's object).  A held
        universe has no descriptions, and adds none: its own are what it holds."""
        if not self.descs:
            return index < self.size
        if index >= len(self.descs) or index not in self.objects:
            return False
        again = self.backend.build(self.universe.geometry, self.descs[index])  # type: ignore[union-attr]
        return self.backend.content_id(again) == self.backend.content_id(self.objects[index])

    def _engine_trace(self, perm: list[int]) -> dict[str, Any]:
        b = ProgramBuilder()
        frags = [b.fragment(i) for i in perm]
        b.expect_equal(b.canonical_order(frags), b.order_of(frags))
        return self.trace(P.ENGINE_ORDER, b, f"the engine orders fragments {perm} (in this input "
                          "order) differently from spec.canonical_order")
