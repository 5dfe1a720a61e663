"""The replicated state: an immutable set of fragments keyed by content id.

Merge is set union by id, which makes the state a join-semilattice (claims C1, C2).  Equality,
ordering and hashing look only at ids: with hash-injectivity as premise (DESIGN.md), equal ids
mean equal fragments, so the payload kept on a collision does not matter.

Iteration is in id order by default, so that nothing downstream depends on arrival order by
accident.  That same default would also *hide* a render that forgets to sort (any function of
the id-sorted list is a function of the set), so checkers switch iteration to ``arrival``
(first-delivery order, which differs between schedules) or ``shuffled`` (a seeded random order)
with ``iteration_order``: a correct render must not care."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Generic, TypeVar

from spec.ids import require_content_id

T = TypeVar("T")

ITERATION_ORDERS = ("id", "arrival", "shuffled")
_iteration = "id"
_shuffle = random.Random(0)


def current_iteration_order() -> str:
    return _iteration


def reseed_shuffle(seed: object) -> None:
    """Restart the generator of the shuffled order.  Checkers reseed per schedule, so that a
    schedule and its replay see the same shuffles."""
    _shuffle.seed(repr(seed))


@contextmanager
def iteration_order(mode: str, seed: object = 0) -> Iterator[None]:
    """Iterate every FragmentSet in ``mode`` inside the block: ``id`` (the default), ``arrival``
    (first-delivery order) or ``shuffled`` (seeded random, fresh at every iteration)."""
    global _iteration
    if mode not in ITERATION_ORDERS:
        raise ValueError(f"unknown iteration order {mode!r}; known: {', '.join(ITERATION_ORDERS)}")
    previous = _iteration
    _iteration = mode
    reseed_shuffle(seed)
    try:
        yield
    finally:
        _iteration = previous


class FragmentSet(Generic[T]):
    """A finite set of payloads of type ``T`` indexed by their content id."""

    __slots__ = ("_by_id",)

    def __init__(self, by_id: Mapping[bytes, T] | None = None) -> None:
        table = dict(by_id or {})
        for cid in table:
            require_content_id(cid)
        self._by_id: dict[bytes, T] = table

    @classmethod
    def _validated(cls, table: dict[bytes, T]) -> FragmentSet[T]:
        """A set over ``table``, whose ids were all validated already (by ``of`` or by the sets
        a merge joins): the checker merges millions of times, validating each id once is enough."""
        made = cls.__new__(cls)
        made._by_id = table
        return made

    @classmethod
    def of(cls, items: Iterable[T], content_id: Callable[[T], bytes]) -> FragmentSet[T]:
        """Collect ``items``; a repeated id keeps the first payload (re-delivery is a no-op)."""
        table: dict[bytes, T] = {}
        for item in items:
            table.setdefault(require_content_id(content_id(item)), item)
        return cls._validated(table)

    @classmethod
    def of_ids(cls, ids: Iterable[bytes]) -> FragmentSet[bytes]:
        """A set whose payloads are the ids themselves (the abstract state)."""
        return FragmentSet.of(ids, lambda cid: cid)

    def merge(self, other: FragmentSet[T]) -> FragmentSet[T]:
        """Set union by id (the CvRDT join).  Keeps ``self``'s payload for shared ids; the
        arrival order is ``self``'s ids, then ``other``'s new ones."""
        if not isinstance(other, FragmentSet):
            return NotImplemented
        table = dict(self._by_id)
        for cid, item in other._by_id.items():
            table.setdefault(cid, item)
        return FragmentSet._validated(table)

    __or__ = merge

    def ids(self) -> frozenset[bytes]:
        return frozenset(self._by_id)

    def items(self) -> list[T]:
        """Payloads in ascending id order (or in the order ``iteration_order`` selects)."""
        if _iteration == "arrival":
            return list(self._by_id.values())
        if _iteration == "shuffled":
            return _shuffle.sample(list(self._by_id.values()), len(self._by_id))
        return [self._by_id[cid] for cid in sorted(self._by_id)]

    def get(self, cid: bytes) -> T | None:
        return self._by_id.get(cid)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items())

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, cid: object) -> bool:
        return cid in self._by_id

    def __le__(self, other: FragmentSet[T]) -> bool:
        if not isinstance(other, FragmentSet):
            return NotImplemented
        return self._by_id.keys() <= other._by_id.keys()

    def __lt__(self, other: FragmentSet[T]) -> bool:
        if not isinstance(other, FragmentSet):
            return NotImplemented
        return self._by_id.keys() < other._by_id.keys()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FragmentSet):
            return NotImplemented
        return self._by_id.keys() == other._by_id.keys()

    def __hash__(self) -> int:
        return hash(frozenset(self._by_id))

    def __repr__(self) -> str:
        shown = ", ".join(cid.hex()[:12] for cid in sorted(self._by_id))
        return f"FragmentSet({{{shown}}})"
