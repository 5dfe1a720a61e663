"""Anti-entropy between any two replica stores: add to DST every fragment of SRC it lacks.

Why this converges and is safe to interrupt: the state is a grow-only set and every fragment is
written by one atomic conditional create, so a merge killed at any point leaves DST holding a
subset of the union made only of whole, validated fragments; running it again lists both sides
afresh and copies what is still missing (resumable), and once nothing is missing it writes
nothing (idempotent).  Merges in any order, duplicated or interleaved, reach the same union.

Every fragment copied is read through the strict reader (its content id recomputed against its
key) and its fingerprint checked against DST's before anything is written: within a batch
(``batch_bytes``, 256 MiB by default) nothing is written unless everything validated, so a
corrupt or foreign source leaves DST unchanged unless the merge spans several batches, and then
only whole, valid fragments of the batches before the bad one are present.  Fragments present
on both sides are not re-read (``store verify`` re-hashes a whole store)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from realstate.exchange.fragment_file import DEFAULT_LIMITS
from realstate.exchange.stores.base import FragmentStore, require_one_fingerprint
from realstate.exchange.stores.locations import open_store, same_or_inside
from realstate.kernel.fragment import Fragment
from spec import FormatError, Progress, no_progress

DEFAULT_BATCH_BYTES = 256 << 20
DEFAULT_WORKERS = 8  # concurrent transfers: an object store's latency, not its bandwidth, dominates

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class MergeResult:
    dst: str
    src: str
    listed: int  # fragments in SRC
    missing: int  # of those, absent from DST when listed
    added: int  # written by this merge
    raced: int  # absent when listed, present when written (another writer got there first)
    bytes_copied: int
    seconds: float


def refuse_nested(dst: str, src: str) -> None:
    """A store inside another is a foreign entry of it: merging them would make one unreadable
    (and merging a store into itself is always a mistake)."""
    if same_or_inside(dst, src) and same_or_inside(src, dst):
        raise FormatError(dst, "merge", f"the destination is the source ({src})")
    if same_or_inside(dst, src):
        raise FormatError(dst, "merge", f"the destination lies inside the source {src}")
    if same_or_inside(src, dst):
        raise FormatError(dst, "merge", f"the source {src} lies inside the destination")


def _parallel(work: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(work, items))


def _batches(missing: list[tuple[bytes, int]], batch_bytes: int) -> list[list[tuple[bytes, int]]]:
    batches: list[list[tuple[bytes, int]]] = [[]]
    size = 0
    for cid, n in missing:
        if batches[-1] and size + n > batch_bytes:
            batches.append([])
            size = 0
        batches[-1].append((cid, n))
        size += n
    return [b for b in batches if b]


def merge_stores(dst: FragmentStore | str, src: FragmentStore, *, batch_bytes: int = DEFAULT_BATCH_BYTES,
                 workers: int = DEFAULT_WORKERS, progress: Progress = no_progress) -> MergeResult:
    """Copy into ``dst`` every fragment of ``src`` that ``dst`` lacks (module doc).  ``dst`` may
    be the location of a store not made yet: it is created only once the first batch has
    validated, so a merge that fails on bad input creates nothing."""
    started = time.perf_counter()
    location = dst if isinstance(dst, str) else dst.location
    refuse_nested(location, src.location)
    listed = src.listing()
    store: FragmentStore | None = None if isinstance(dst, str) else dst
    present = {} if store is None else store.listing()
    missing = sorted((cid, size) for cid, size in listed.items() if cid not in present)
    if store is not None:
        store.step("merge listed")  # a crash here has listed both sides and copied nothing
    added = raced = copied = 0
    progress("merge", 0, len(missing))

    def fetch(item: tuple[bytes, int]) -> Fragment:
        cid, size = item
        try:
            return src.get(cid, size)
        except KeyError:
            raise FormatError(src.where(cid), "file", "vanished from the source while it was "
                                                              "merged (a grow-only store never loses a "
                                                              "fragment)") from None

    for batch in _batches(missing, batch_bytes):
        incoming = _parallel(fetch, batch, workers)  # all validated before any write
        require_one_fingerprint(incoming)
        if store is None:
            store = _create(location)
        store.check_fingerprints((f, src.where(f.content_id)) for f in incoming)
        target = store
        written = _parallel(lambda f: target.put(f, checked=True), incoming, workers)
        added += sum(written)
        raced += len(written) - sum(written)
        copied += sum(size for (cid, size), new in zip(batch, written) if new)
        progress("merge", added + raced, len(missing))
    if store is None:
        store = _create(location)  # an empty source: the destination is still made, empty
    return MergeResult(store.location, src.location, len(listed), len(missing), added, raced, copied,
                       time.perf_counter() - started)


def _create(location: str) -> FragmentStore:
    return open_store(location, create=True, limits=DEFAULT_LIMITS)


def describe(result: MergeResult) -> str:
    return (f"merged {result.src} into {result.dst}: {result.added} added, "
            f"{result.listed - result.added} already present"
            + (f" ({result.raced} written meanwhile by another writer)" if result.raced else ""))


