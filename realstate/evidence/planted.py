"""Planted bugs: engines that each get exactly one piece of CanonicalMerge wrong.

They exist to prove the replay can fail (a check that cannot fail is a defect).  Each is a
mistake real merging code makes; the replay's negative tests run every one and expect a
violation.  Never use these to merge anything."""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch

from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment
from realstate.kernel.rope import reencode_reference, rotate_half
from spec import order_key, total_order_bits


def _m_only(fragment: Fragment) -> int:
    return total_order_bits(fragment.order_value)


def _heapsort(items: Sequence[Fragment], key: Callable[[Fragment], Any]) -> list[Fragment]:
    """Unstable: equal keys come out in an order that depends on the input order."""
    heap = [(key(f), -i, f) for i, f in enumerate(items)]  # -i: ties pop latest-first
    heapq.heapify(heap)
    return [heapq.heappop(heap)[2] for _ in range(len(heap))]


def _value_returning_sort(items: Sequence[Fragment], key: Callable[[Fragment], Any]) -> list[Fragment]:
    """Sorts the m values, then maps each value back to 'the' fragment that has it."""
    values = torch.tensor([f.order_value for f in items], dtype=torch.float64)
    ordered_values = torch.sort(values).values.tolist()
    def same(m: float, v: float) -> bool:
        return m == v or (m != m and v != v)  # the first fragment "with" that value, NaN included

    return [next(f for f in items if same(f.order_value, v)) for v in ordered_values]


def _reduced_precision_key(fragment: Fragment) -> bytes:
    """m from a float32 torch reduction: not exact, and not the same bits on every machine."""
    mid = fragment.middle_layer_keys().float()
    m = float(torch.linalg.vector_norm(mid, dim=-1).mean())
    return order_key(m, fragment.content_id)


def _wrong_sign_reencode(dest: torch.Tensor, keys: torch.Tensor, delta: int, inv_freq: Sequence[float]) -> None:
    """Rotates with -rotate_half: the angle runs the wrong way."""
    dest.copy_(reencode_reference(keys, delta, inv_freq, rotate=lambda x: -rotate_half(x)))


def _frequencies_from_theta(fp: Fingerprint) -> tuple[float, ...]:
    """Recomputes 1/theta^(2i/D) instead of reading the frequencies the model really uses."""
    return tuple(1.0 / (fp.rope_theta ** (2 * i / fp.head_dim)) for i in range(fp.head_dim // 2))


class IdentitySet:
    """Dedups by Python object identity: a re-delivered copy counts as a new fragment."""

    def __init__(self, items: Iterable[Fragment] = ()) -> None:
        self._items = {id(f): f for f in items}

    def merge(self, other: IdentitySet) -> IdentitySet:
        merged = IdentitySet()
        merged._items = {**other._items, **self._items}
        return merged

    def __iter__(self) -> Iterator[Fragment]:
        return iter(self._items.values())


class ArrivalList:
    """Dedups by content id but keeps arrival order: the 'first come, first placed' replica."""

    def __init__(self, items: Iterable[Fragment] = ()) -> None:
        self._items: dict[bytes, Fragment] = {}
        for f in items:
            self._items.setdefault(f.content_id, f)

    def merge(self, other: ArrivalList) -> ArrivalList:
        return ArrivalList([*self._items.values(), *other._items.values()])

    def __iter__(self) -> Iterator[Fragment]:
        return iter(self._items.values())


def _arrival_order(items: Sequence[Fragment], key: Callable[[Fragment], Any]) -> list[Fragment]:
    return list(items)


MUTANTS: dict[str, Engine] = {
    e.name: e
    for e in (
        dataclasses.replace(CANONICAL, name="unstable-sort", key=_m_only, sort=_heapsort),
        dataclasses.replace(CANONICAL, name="value-returning-sort", sort=_value_returning_sort),
        dataclasses.replace(CANONICAL, name="reduced-precision-key", key=_reduced_precision_key),
        dataclasses.replace(CANONICAL, name="no-tie-break", key=_m_only),
        dataclasses.replace(CANONICAL, name="wrong-rope-sign", reencode=_wrong_sign_reencode),
        dataclasses.replace(CANONICAL, name="theta-frequencies", frequencies=_frequencies_from_theta),
        dataclasses.replace(CANONICAL, name="identity-dedup", collect=IdentitySet),
        dataclasses.replace(CANONICAL, name="order-by-arrival", collect=ArrivalList, sort=_arrival_order),
    )
}


def engine_named(name: str) -> Engine:
    """The planted-bug engine called ``name`` (an ``InputError`` naming the known ones otherwise)."""
    try:
        return MUTANTS[name]
    except KeyError:
        from spec import InputError

        raise InputError(f"unknown planted bug {name!r}; known: {', '.join(MUTANTS)}") from None


# --- planted bugs in a composition's selection (realstate.composition.ranking) ---------------

def _anchored_by_arrival(layout: Sequence[Any], state: Iterable[Fragment]) -> list[Any]:
    """Anchors every fragment but the first to *arrive* (the state's iteration order), which is
    what a composition built on an arrival-order cache does."""
    arrived = list(state)
    by_id = {p.fragment.content_id: p for p in layout}
    return [by_id[f.content_id] for f in arrived[1:] if f.content_id in by_id]


def _selectors() -> dict[str, Any]:
    from realstate.composition.ranking import Selector

    return {"select-by-arrival": Selector("select-by-arrival", anchored=_anchored_by_arrival)}


def selector_named(name: str) -> Any:
    """The planted-bug selection called ``name`` (an ``InputError`` naming the known ones otherwise)."""
    selectors = _selectors()
    try:
        return selectors[name]
    except KeyError:
        from spec import InputError

        raise InputError(f"unknown planted selection {name!r}; known: {', '.join(selectors)}") from None
