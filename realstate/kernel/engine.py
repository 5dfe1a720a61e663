"""The mechanics a render is made of, gathered in one place so a test can swap exactly one.

``CANONICAL`` is what canonmerge runs.  The replay's negative tests (and ``realstate.evidence.planted``)
replace a single field — the sort, the key, the frequencies, the re-encoding, the dedup — to show
the replay catches that planted bug.  Nothing else in realstate hard-codes these choices."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch

from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, fragment_set
from realstate.kernel.rope import reencode_into
from spec import canonical_order


class FragmentCollection(Protocol):
    """What a replica state must offer: a join and its members."""

    def merge(self, other: Any) -> Any: ...

    def __iter__(self) -> Any: ...


@dataclass(frozen=True)
class Engine:
    name: str
    key: Callable[[Fragment], Any]
    sort: Callable[[Sequence[Fragment], Callable[[Fragment], Any]], list[Fragment]]
    frequencies: Callable[[Fingerprint], Sequence[float]]
    reencode: Callable[[torch.Tensor, torch.Tensor, int, Sequence[float]], None]  # (dest, keys, delta, inv_freq)
    collect: Callable[[Iterable[Fragment]], FragmentCollection]
    # where a batched render switches to its chunked path (None: realstate.kernel.rope.CHUNK_ELEMENTS)
    chunk_elements: int | None = None
    # the largest render (in key elements) that shares its torch calls with the other renders of
    # a canonical_renders call (None: realstate.kernel.render.BATCH_ELEMENTS)
    batch_elements: int | None = None
    # whether the chunked path may use realstate.kernel.fused's compiled kernel where it applies (CPU keys in
    # bfloat16 or float32, numba installed); False: torch's operations only.  The bytes are the same
    fused: bool = True
    # the threads the compiled kernel splits a render's (layer, head) blocks between (None: torch's
    # thread count); the bytes are the same on any number
    threads: int | None = None

    def order(self, fragments: Sequence[Fragment]) -> list[Fragment]:
        return self.sort(list(fragments), self.key)


def _full_key(fragment: Fragment) -> bytes:
    return fragment.order_key


def model_frequencies(fingerprint: Fingerprint) -> Sequence[float]:
    """The frequencies the loaded model uses, as recorded in the fingerprint."""
    return fingerprint.inv_freq


CANONICAL = Engine(
    name="canonical",
    key=_full_key,
    sort=canonical_order,
    frequencies=model_frequencies,
    reencode=reencode_into,
    collect=fragment_set,
)


def chunked(engine: Engine, elements: int) -> Engine:
    """``engine`` with renders above ``elements`` key elements taking the chunked path.  The bytes
    are the same on either path; verify's inputs are tiny, so without this the path every
    real-size render takes (realstate.kernel.rope._write_spans) would never run inside verify."""
    return replace(engine, name=f"{engine.name}/chunk={elements}", chunk_elements=elements)


def unfused(engine: Engine) -> Engine:
    """``engine`` with the chunked path on torch's operations only: where the compiled kernel
    applies, a render above the chunk size would otherwise never reach them."""
    return replace(engine, name=f"{engine.name}/torch", fused=False)


def batched_up_to(engine: Engine, elements: int) -> Engine:
    """``engine`` with renders above ``elements`` key elements written alone inside a call that
    renders several states.  The bytes are the same either way; verify's renders are all small,
    so without this the path a large render takes there would never run inside verify."""
    return replace(engine, name=f"{engine.name}/batch={elements}", batch_elements=elements)
