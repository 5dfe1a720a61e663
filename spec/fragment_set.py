"""The replicated state: an immutable set of fragments keyed by content id.

Merge is set union by id, which makes the state a join-semilattice (claims C1, C2).  Equality,
ordering and hashing look only at ids: with hash-injectivity as premise (DESIGN.md), equal ids
mean equal fragments, so the payload kept on a collision does not matter.  Iteration is in id
order so that nothing downstream can depend on arrival order by accident."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from spec.ids import require_content_id

T = TypeVar("T")


class FragmentSet(Generic[T]):
    """A finite set of payloads of type ``T`` indexed by their content id."""

    __slots__ = ("_by_id",)

    def __init__(self, by_id: Mapping[bytes, T] | None = None) -> None:
        table = dict(by_id or {})
        for cid in table:
            require_content_id(cid)
        self._by_id: dict[bytes, T] = table

    @classmethod
    def of(cls, items: Iterable[T], content_id: Callable[[T], bytes]) -> FragmentSet[T]:
        """Collect ``items``; a repeated id keeps the first payload (re-delivery is a no-op)."""
        table: dict[bytes, T] = {}
        for item in items:
            table.setdefault(require_content_id(content_id(item)), item)
        return cls(table)

    @classmethod
    def of_ids(cls, ids: Iterable[bytes]) -> FragmentSet[bytes]:
        """A set whose payloads are the ids themselves (the abstract state)."""
        return FragmentSet.of(ids, lambda cid: cid)

    def merge(self, other: FragmentSet[T]) -> FragmentSet[T]:
        """Set union by id (the CvRDT join). Keeps ``self``'s payload for shared ids."""
        if not isinstance(other, FragmentSet):
            return NotImplemented
        table = dict(other._by_id)
        table.update(self._by_id)
        return FragmentSet(table)

    __or__ = merge

    def ids(self) -> frozenset[bytes]:
        return frozenset(self._by_id)

    def items(self) -> list[T]:
        """Payloads in ascending id order."""
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
