"""Negative controls that every ``check`` run sends through its own pipeline.

A checker whose instruments go blind (an enumerator that stops enumerating, shard verdicts that
are never compared, a union fed in the wrong order) still prints "holds".  So each run plans a
few extra shards, on one tiny universe, whose backend is the backend under check with one
mechanic swapped for a known violation of C3; they run on the same engine, through the same
``UniverseCheck.c3`` with its shared unions and schedule watcher, and their results are merged
by the same ``shards.merge``.  ``modelcheck.instruments`` then requires each violation to have
been reported, and fails the run naming the instrument that missed it.

- ``arrival``: the render lays the fragments out in arrival order (first delivery of each
  content id), the schedules of N = 3 split by their first arrival into three shards: every C3
  family must report it, in each of them, and the union of shard results must add up their
  violations (a union that kept one shard's count would otherwise pass every run, no real
  check violating anything).
- ``shards``: the render is correct but salted by the shard it runs in — one digest per shard,
  so no shard sees a violation and only the union of shard verdicts across shards can; the
  schedules of N = 3 are split by their first arrival into three shards.
- ``bag``: the BagMerge orders of N = 3 alone, on the backend under check — a bag plan one arity
  short (its N = 2 shard never planned): the comparison that holds the real BagMerge orders to
  the sum of n! must find this count equal to 3! and short of 2! + 3!.

The canary backends keep no state between calls and build nothing the backend under check does
not build itself."""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from modelcheck.backend import Backend, FragmentDesc, Geometry
from modelcheck.coverage import closed_forms
from spec import FragmentSet

UNIVERSE = "random"             # distinct fragments whose BagMerge depends on the order
ARITY = 3
ARRIVAL, SHARDS = "arrival", "shards"
NAMES = (ARRIVAL, SHARDS)                # the C3 canaries: each runs every C3 schedule of its arity
BAG = "bag"                              # a BagMerge canary: one bag shard, N = ARITY
PREFIX_LENGTH = {ARRIVAL: 1, SHARDS: 1}
WATCHES = {ARRIVAL: "every C3 family's comparison of each schedule's render with the index-order fold",
           SHARDS: "the union of shard verdicts: digests of one set compared across shards and engines",
           BAG: "the BagMerge orders' comparison with their closed form, the sum of n!"}


class _Forward:
    """The fragment-level primitives of the backend under check, unchanged."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name

    def build(self, geometry: Geometry, desc: FragmentDesc) -> Any:
        return self.inner.build(geometry, desc)

    def copy(self, fragment: Any) -> Any:
        return self.inner.copy(fragment)

    def content_id(self, fragment: Any) -> bytes:
        return self.inner.content_id(fragment)

    def order_value(self, fragment: Any) -> float:
        return self.inner.order_value(fragment)

    def order_key(self, fragment: Any) -> bytes:
        return self.inner.order_key(fragment)

    def order_of(self, fragments: Sequence[Any]) -> list[bytes]:
        return self.inner.order_of(fragments)

    def bag_digest(self, fragments: Sequence[Any], base: int = 0) -> str:
        return self.inner.bag_digest(fragments, base)

    def render_as_fragment(self, fragments: Sequence[Any]) -> Any:
        return self.inner.render_as_fragment(fragments)


class Arrivals:
    """A replica that keeps its fragments in first-delivery order (a re-delivery is a no-op)."""

    __slots__ = ("ids", "fragments")

    def __init__(self, ids: tuple[bytes, ...], fragments: tuple[Any, ...]) -> None:
        self.ids, self.fragments = ids, fragments

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fragments)


class ArrivalOrderBackend(_Forward):
    """Renders BagMerge of the fragments in arrival order: order-dependent, so C3 must fail."""

    def singleton(self, fragment: Any) -> Arrivals:
        return Arrivals((self.inner.content_id(fragment),), (fragment,))

    def merge(self, a: Arrivals, b: Arrivals) -> Arrivals:
        known = set(a.ids)
        new = [(cid, f) for cid, f in zip(b.ids, b.fragments) if cid not in known]
        return Arrivals(a.ids + tuple(c for c, _ in new), a.fragments + tuple(f for _, f in new))

    def abstract(self, state: Arrivals) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(state.ids)

    def state_key(self, state: Arrivals) -> Hashable:
        return frozenset(state.ids)      # order-blind, like a set's: order shows only by iteration

    def render_order(self, state: Arrivals) -> list[bytes]:
        return list(state.ids)

    def render_digest(self, state: Arrivals, base: int = 0) -> str:
        return self.inner.bag_digest(list(state.fragments), base)


class ShardSaltedBackend(_Forward):
    """The backend's own states, rendered to a digest of the set salted by the shard: one digest
    per set in each shard, another in each other shard (a render that differs between
    processes)."""

    def __init__(self, inner: Backend, salt: str) -> None:
        super().__init__(inner)
        self.salt = salt.encode()

    def singleton(self, fragment: Any) -> Any:
        return self.inner.singleton(fragment)

    def merge(self, a: Any, b: Any) -> Any:
        return self.inner.merge(a, b)

    def abstract(self, state: Any) -> FragmentSet[bytes]:
        return self.inner.abstract(state)

    def state_key(self, state: Any) -> Hashable:
        return self.inner.state_key(state)

    def render_order(self, state: Any) -> list[bytes]:
        return self.inner.render_order(state)

    def render_digest(self, state: Any, base: int = 0) -> str:
        h = hashlib.sha256(self.salt + base.to_bytes(8, "little", signed=True))
        for cid in sorted(self.inner.abstract(state).ids()):
            h.update(cid)
        return h.hexdigest()


def canary_backend(name: str, inner: Backend, shard: str) -> Backend:
    """The backend a canary shard runs: ``inner`` with the canary's violation (``shard`` names
    the shard, the salt of ``shards``)."""
    if name == ARRIVAL:
        return ArrivalOrderBackend(inner)  # type: ignore[return-value]
    if name == SHARDS:
        return ShardSaltedBackend(inner, shard)  # type: ignore[return-value]
    if name == BAG:
        return inner                     # its violation is in the plan (an arity never planned)
    raise ValueError(f"unknown canary {name!r}; known: {', '.join(NAMES)}")


def arrival_violations(inner: Backend, objects: Mapping[int, Any], n: int, prefix: Sequence[int],
                       redeliveries: int, base: int) -> dict[str, int]:
    """The violations the arrival canary must report in its shard of ``prefix``, per C3 family,
    counted without the search: the arrival orders of the n fragments that start with ``prefix``
    and whose BagMerge digest (``inner.bag_digest``, the canary's render) differs from index
    order's, each times the family's schedules whose first deliveries are that order — one
    permutation, and 1/n! of the trees and of the re-delivery sequences (``closed_forms``): a
    relabelling of the fragments maps the schedules of one first-delivery order onto another's."""
    ref = inner.bag_digest([objects[i] for i in range(n)], base)
    wrong = sum(1 for order in itertools.permutations(range(n)) if order[:len(prefix)] == tuple(prefix)
                and inner.bag_digest([objects[i] for i in order], base) != ref)
    return {unit: wrong * count // math.factorial(n) for unit, count in closed_forms(n, redeliveries).items()}
