"""Test-only broken backends: wrappers that break exactly one piece of any ``Backend``.

They test the checker's own machinery (counting, minimization, traces, replay) on the fast
pure-Python reference backend.  They are NOT how the product shows it catches bugs: that is done
by bugs planted in the source of realstate (``audit``) and by realstate ``Engine`` presets
(``realstate.evidence.planted``, ``canonmerge check --plant``), both of which run realstate's real render."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from modelcheck.backend import Backend
from modelcheck.canary import _Forward
from spec import FragmentSet, canonical_order, total_order_bits


class _Wrapper(_Forward):
    """Forwards the fragment-level primitives to the real backend (the canary's forwarder), and
    orders by the spec's canonical order so a subclass can break exactly one piece."""

    mutant = ""

    def order_of(self, fragments: Sequence[Any]) -> list[bytes]:
        return [self.inner.content_id(f) for f in self._order_list(list(fragments))]

    def _order_list(self, fragments: list[Any]) -> list[Any]:
        return self._canonical(fragments)

    def _canonical(self, fragments: Sequence[Any]) -> list[Any]:
        return canonical_order(list(fragments), self.inner.order_key)


# --- states that remember arrival order (dedup by content id) ---------------------------------

class _ArrivalOrdered(_Wrapper):
    """State: ``((id, fragment), ...)`` in first-arrival order, one entry per content id — what a
    dict keyed by id gives.  Subclasses choose how the render orders it (the planted bug)."""

    def _order(self, fragments: list[Any]) -> list[Any]:
        raise NotImplementedError

    def singleton(self, fragment: Any) -> tuple[tuple[bytes, Any], ...]:
        return ((self.inner.content_id(fragment), fragment),)

    def merge(self, a: tuple, b: tuple) -> tuple:
        seen = {cid for cid, _ in a}
        out = list(a)
        for cid, f in b:
            if cid not in seen:
                seen.add(cid)
                out.append((cid, f))
        return tuple(out)

    def abstract(self, state: tuple) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(cid for cid, _ in state)

    def state_key(self, state: tuple) -> Hashable:
        return tuple(cid for cid, _ in state)

    def render_order(self, state: tuple) -> list[bytes]:
        return [self.inner.content_id(f) for f in self._order([f for _, f in state])]

    def _order_list(self, fragments: list[Any]) -> list[Any]:
        return self._order(fragments)

    def render_digest(self, state: tuple, base: int = 0) -> str:
        return self.inner.bag_digest(self._order([f for _, f in state]), base)


class UnstableSort(_ArrivalOrdered):
    """Heapsort by m alone (what ``torch.sort(norms)`` does): ties land in an arrival-dependent order."""

    mutant = "unstable-sort"

    def _order(self, fragments: list[Any]) -> list[Any]:
        items = [(self.inner.order_value(f), f) for f in fragments]

        def sift(start: int, end: int) -> None:
            root = start
            while 2 * root + 1 <= end:
                child = 2 * root + 1
                if child + 1 <= end and items[child][0] < items[child + 1][0]:
                    child += 1
                if items[root][0] < items[child][0]:
                    items[root], items[child] = items[child], items[root]
                    root = child
                else:
                    return

        for start in range(len(items) // 2 - 1, -1, -1):
            sift(start, len(items) - 1)
        for end in range(len(items) - 1, 0, -1):
            items[0], items[end] = items[end], items[0]
            sift(0, end - 1)
        return [f for _, f in items]


class NoTieBreak(_ArrivalOrdered):
    """Stable sort by ``total_order_bits(m)`` only: ties keep arrival order."""

    mutant = "no-tie-break"

    def _order(self, fragments: list[Any]) -> list[Any]:
        return sorted(fragments, key=lambda f: total_order_bits(self.inner.order_value(f)))


class NaiveFloatCompare(_ArrivalOrdered):
    """Sort by the Python tuple ``(m, id)``: float ``<`` is not a total order once NaN appears."""

    mutant = "naive-float-compare"

    def _order(self, fragments: list[Any]) -> list[Any]:
        return sorted(fragments, key=lambda f: (self.inner.order_value(f), self.inner.content_id(f)))


class OrderByArrival(_ArrivalOrdered):
    """Dedup by id, but render in arrival order (BagMerge with dedup)."""

    mutant = "order-by-arrival"

    def _order(self, fragments: list[Any]) -> list[Any]:
        return list(fragments)


# --- states that forget to deduplicate -------------------------------------------------------

class MergeKeepsDuplicates(_Wrapper):
    """State: a tuple; merge concatenates, so a re-delivery is rendered twice."""

    mutant = "merge-keeps-duplicates"

    def singleton(self, fragment: Any) -> tuple:
        return (fragment,)

    def merge(self, a: tuple, b: tuple) -> tuple:
        return a + b

    def abstract(self, state: tuple) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(self.inner.content_id(f) for f in state)

    def state_key(self, state: tuple) -> Hashable:
        return tuple(self.inner.content_id(f) for f in state)

    def render_order(self, state: tuple) -> list[bytes]:
        return [self.inner.content_id(f) for f in self._canonical(state)]

    def render_digest(self, state: tuple, base: int = 0) -> str:
        return self.inner.bag_digest(self._canonical(state), base)


class IdentityDedup(_Wrapper):
    """State keyed by Python ``id()`` of the fragment object: a re-delivered copy is kept twice."""

    mutant = "identity-dedup"

    def singleton(self, fragment: Any) -> tuple:
        return (fragment,)

    def merge(self, a: tuple, b: tuple) -> tuple:
        seen = {id(f) for f in a}
        return a + tuple(f for f in b if id(f) not in seen)

    def abstract(self, state: tuple) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(self.inner.content_id(f) for f in state)

    def state_key(self, state: tuple) -> Hashable:
        return tuple(sorted((self.inner.content_id(f), id(f)) for f in state))

    def render_order(self, state: tuple) -> list[bytes]:
        return [self.inner.content_id(f) for f in self._canonical(state)]

    def render_digest(self, state: tuple, base: int = 0) -> str:
        return self.inner.bag_digest(self._canonical(state), base)


# --- incremental merging ---------------------------------------------------------------------

class RenderDependsOnMergeTree(_Wrapper):
    """Merge renders both sides into one block (the two blocks in canonical order, via
    ``render_as_fragment``): a different merge tree re-encodes different blocks.

    State: ``(block, members)`` with members ``((id, fragment), ...)`` in block token order."""

    mutant = "render-depends-on-merge-tree"

    def singleton(self, fragment: Any) -> tuple:
        return (fragment, ((self.inner.content_id(fragment), fragment),))

    def merge(self, a: tuple, b: tuple) -> tuple:
        ids_a, ids_b = {c for c, _ in a[1]}, {c for c, _ in b[1]}
        if ids_b <= ids_a:
            return a
        if ids_a <= ids_b:
            return b
        first, second = sorted((a, b), key=lambda s: self.inner.order_key(s[0]))
        block = self.inner.render_as_fragment([first[0], second[0]])
        seen = {c for c, _ in first[1]}
        return (block, first[1] + tuple(m for m in second[1] if m[0] not in seen))

    def abstract(self, state: tuple) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(c for c, _ in state[1])

    def state_key(self, state: tuple) -> Hashable:
        return (self.inner.content_id(state[0]), tuple(c for c, _ in state[1]))

    def render_order(self, state: tuple) -> list[bytes]:
        return [c for c, _ in state[1]]

    def render_digest(self, state: tuple, base: int = 0) -> str:
        return self.inner.bag_digest([state[0]], base)


MUTANTS: dict[str, Callable[[Backend], Backend]] = {
    cls.mutant: cls
    for cls in (UnstableSort, NoTieBreak, NaiveFloatCompare, MergeKeepsDuplicates, OrderByArrival,
                RenderDependsOnMergeTree, IdentityDedup)
}


def plant(backend: Backend, name: str) -> Backend:
    """``backend`` with the named test-only bug planted."""
    return MUTANTS[name](backend)


def replay_planted(trace: dict[str, Any], base: Backend) -> Any:
    """Replay ``trace`` on ``base`` with the trace's test-only bug planted again (if any)."""
    from modelcheck.trace_replay import replay

    return replay(trace, plant(base, trace["mutant"]) if trace["mutant"] else base)


def planted_reference(name: str | None = None) -> Backend:
    """The reference backend, with the named test-only bug planted (if any): a factory a
    ``BackendRecipe`` can name, so pool and Ray workers build the same backend as this process."""
    from modelcheck.reference import ReferenceBackend

    return plant(ReferenceBackend(), name) if name else ReferenceBackend()
