"""A census of the gossip model (claim C7): its reachable states counted exactly, at sizes the
explorer cannot search, and apart from it.

The explorer (``gossip_search``) holds backend state objects and renders them, a few hundred
microseconds per state in Python; this module holds nothing but the abstract model, every state
packed into one 64-bit integer, and expands a whole breadth-first level at once with numpy:

- a replica's state is the set of fragments it holds, a bit mask (what the explorer's marks
  number, one to one, for a backend whose states are the sets they hold);
- the publications are a mask; a message is its endpoints and its snapshot's mask, coded as
  ``1 + packed`` (0: an empty slot), and each pool (in flight; dropped, unless drops are folded)
  is its messages' codes sorted, largest first, in ``in_flight`` slots;
- the moves are the model's documented ones (``gossip_model``; ``gossip_reference`` enumerates
  the same ones, a state at a time): publish, send while fewer than ``in_flight`` messages wait,
  and per distinct waiting message deliver, duplicate, drop (not with folding) and re-send;
- with symmetry, a state is counted once per orbit of the replica relabellings that keep every
  unpublished fragment's home: its key is the least packing over those relabellings (the
  explorer's key is its own signature encoding, ``gossip_symmetry``; written apart).

It counts, it checks nothing about renders: it is the size of the search a configuration asks
for, and, where both run, an independent count of the explorer's ``states``, ``transitions`` and
``depth`` (which must be equal: every move the explorer takes from every state it reaches is a
move here).  A configuration whose packing needs more than 63 bits is refused, naming it, and so
are more than five replicas with symmetry (every relabelling is tried on every state)."""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from spec import ArgumentError, Progress, no_progress
from spec.arguments import integer

BITS = 63  # a packed state is a non-negative int64
# with symmetry every state is packed under every relabelling of the replicas: 5! at most (six
# replicas would be 720 numpy passes per move, minutes for a configuration the explorer does in seconds)
MAX_RELABELLINGS_REPLICAS = 5
MAX_RELABELLINGS = math.factorial(MAX_RELABELLINGS_REPLICAS)


@dataclass(frozen=True)
class Census:
    """An exhaustive breadth-first count of one configuration."""

    replicas: int
    fragments: int
    in_flight: int
    symmetry: bool
    fold_drops: bool
    states: int
    transitions: int                 # moves from every state counted, into new states or known ones
    depth: int
    levels: tuple[int, ...]          # states first reached at depth 0, 1, ...
    seconds: float


class Packing:
    """Where each field of a state lies in its 64-bit integer."""

    def __init__(self, replicas: int, fragments: int, in_flight: int, fold_drops: bool) -> None:
        self.r, self.f, self.i, self.fold = replicas, fragments, in_flight, fold_drops
        self.end = max(1, (replicas - 1).bit_length())        # bits of a replica number
        self.msg = 1 + 2 * self.end + fragments                 # bits of a message code (0: empty)
        self.pub_at = replicas * fragments
        self.flight_at = self.pub_at + fragments
        self.dropped_at = self.flight_at + in_flight * self.msg
        self.bits = self.dropped_at + (0 if fold_drops else in_flight * self.msg)

    def code(self, src: np.ndarray, dst: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return 1 + ((src << (self.end + self.f)) | (dst << self.f) | mask)

    def parts(self, code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = code - 1
        low = (1 << self.end) - 1
        return (c >> (self.end + self.f)) & low, (c >> self.f) & low, c & ((1 << self.f) - 1)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        fmask, mmask = (1 << self.f) - 1, (1 << self.msg) - 1
        reps = np.stack([(x >> (r * self.f)) & fmask for r in range(self.r)], 1)
        pub = (x >> self.pub_at) & fmask
        flight = np.stack([(x >> (self.flight_at + j * self.msg)) & mmask for j in range(self.i)], 1)
        dropped = (np.zeros((len(x), 0), np.int64) if self.fold else
                   np.stack([(x >> (self.dropped_at + j * self.msg)) & mmask for j in range(self.i)], 1))
        return reps, pub, flight, dropped

    def pack(self, reps: np.ndarray, pub: np.ndarray, flight: np.ndarray, dropped: np.ndarray) -> np.ndarray:
        x = pub << self.pub_at
        for r in range(reps.shape[1]):
            x |= reps[:, r] << (r * self.f)
        for j in range(flight.shape[1]):
            x |= flight[:, j] << (self.flight_at + j * self.msg)
        for j in range(dropped.shape[1]):
            x |= dropped[:, j] << (self.dropped_at + j * self.msg)
        return x


def _sorted(pool: np.ndarray) -> np.ndarray:
    """A pool's codes largest first (empty slots, 0, last): the multiset's one packing.  A pool has
    a few slots, so a compare-exchange network over its columns (numpy's sort along a row of three
    is mostly per-row overhead)."""
    columns = [pool[:, j] for j in range(pool.shape[1])]
    for top in range(len(columns) - 1, 0, -1):
        for j in range(top):
            a, b = columns[j], columns[j + 1]
            columns[j], columns[j + 1] = np.maximum(a, b), np.minimum(a, b)
    return np.stack(columns, 1) if columns else pool


class _Census:
    def __init__(self, replicas: int, fragments: int, in_flight: int, homes: tuple[int, ...] | None,
                 symmetry: bool, fold_drops: bool, tables: bool = True) -> None:
        self.p = Packing(replicas, fragments, in_flight, fold_drops)
        self.homes = list(homes) if homes is not None else [f % replicas for f in range(fragments)]
        perms = list(itertools.permutations(range(replicas))) if symmetry else [tuple(range(replicas))]
        self.perms = np.array(perms, np.int64)
        # allowed[pub, k]: relabelling k keeps the home of every fragment pub has not published
        self.allowed = np.zeros((1 << fragments, len(perms)), bool)
        for pub in range(1 << fragments):
            fixed = {self.homes[f] for f in range(fragments) if not pub >> f & 1}
            for k, perm in enumerate(perms):
                self.allowed[pub, k] = all(perm[r] == r for r in fixed)
        # codes[k][code]: a message code with both endpoints relabelled by relabelling k
        every = np.arange(1 << self.p.msg, dtype=np.int64)
        src, dst, mask = self.p.parts(np.maximum(every, 1))
        src, dst = np.minimum(src, replicas - 1), np.minimum(dst, replicas - 1)  # codes no message has
        self.codes = [np.where(every == 0, 0, self.p.code(self.perms[k][src], self.perms[k][dst], mask))
                      for k in range(len(perms))]
        # replica_fields[k][packed replica sets]: the same sets under relabelling k, packed (when the
        # table is small: up to 2**16 entries per relabelling)
        self.replica_fields: list[np.ndarray] | None = None
        if tables and replicas * fragments <= 16:
            every = np.arange(1 << (replicas * fragments), dtype=np.int64)
            sets = [(every >> (r * fragments)) & ((1 << fragments) - 1) for r in range(replicas)]
            self.replica_fields = [sum((sets[r] << (int(perm[r]) * fragments) for r in range(replicas)),
                                       np.zeros_like(every)) for perm in self.perms]

    def key(self, reps: np.ndarray, pub: np.ndarray, flight: np.ndarray, dropped: np.ndarray) -> np.ndarray:
        """The least packing over the relabellings each state allows (its orbit's key); the pools
        come in any slot order (a move writes a free slot or empties one) and are sorted here once
        per relabelling, which relabels their codes."""
        best = np.full(len(pub), np.iinfo(np.int64).max, np.int64)
        empty = np.zeros_like(pub)
        packed_sets = self.p.pack(reps, empty, flight[:, :0], dropped[:, :0])
        for k, perm in enumerate(self.perms):
            ok = self.allowed[pub, k]
            if not ok.any():
                continue
            if self.replica_fields is not None:
                moved_sets = self.replica_fields[k][packed_sets]
            else:
                moved = np.empty_like(reps)
                moved[:, perm] = reps
                moved_sets = self.p.pack(moved, empty, flight[:, :0], dropped[:, :0])
            x = self.p.pack(reps[:, :0], pub, _sorted(self.codes[k][flight]),
                            _sorted(self.codes[k][dropped]) if dropped.shape[1] else dropped)
            x |= moved_sets
            best = np.minimum(best, x, out=best) if ok.all() else np.where(ok, np.minimum(best, x), best)
        return best

    def successors(self, x: np.ndarray) -> np.ndarray:
        reps, pub, flight, dropped = self.p.unpack(x)
        waiting = (flight > 0).sum(1) + (dropped > 0).sum(1)
        out = []
        for f in range(self.p.f):  # (a selection may be empty: its key is then empty too)
            at = ((pub >> f) & 1) == 0
            r2 = reps[at].copy()
            r2[:, self.homes[f]] |= 1 << f
            out.append(self.key(r2, pub[at] | (1 << f), flight[at], dropped[at]))
        last = self.p.i - 1
        for s in range(self.p.r):
            for d in range(self.p.r):
                at = (waiting < self.p.i) & (reps[:, s] > 0)
                if s == d:
                    continue
                f2 = flight[at].copy()
                f2[:, last] = self.p.code(np.int64(s), np.int64(d), reps[at][:, s])  # a free slot: sorted, so the last
                out.append(self.key(reps[at], pub[at], f2, dropped[at]))
        for j in range(self.p.i):
            # each distinct message in flight once: its slot holds one and the slot before another
            at = flight[:, j] > 0
            if j:
                at &= flight[:, j] != flight[:, j - 1]
            _, dst, mask = self.p.parts(flight[at][:, j])
            r2 = reps[at].copy()
            r2[np.arange(len(r2)), dst] |= mask
            out.append(self.key(r2, pub[at], flight[at], dropped[at]))                 # duplicate
            f2 = flight[at].copy()
            f2[:, j] = 0
            out.append(self.key(r2, pub[at], f2, dropped[at]))                         # deliver
            if not self.p.fold:                                                        # drop
                d2 = dropped[at].copy()
                d2[:, last] = flight[at][:, j]
                out.append(self.key(reps[at], pub[at], f2, d2))
        for j in range(0 if self.p.fold else self.p.i):                                # re-send
            at = dropped[:, j] > 0
            if j:
                at &= dropped[:, j] != dropped[:, j - 1]
            d2 = dropped[at].copy()
            d2[:, j] = 0
            f2 = flight[at].copy()
            f2[:, last] = dropped[at][:, j]
            out.append(self.key(reps[at], pub[at], f2, d2))
        return np.concatenate(out)  # a publish entry per fragment, so never empty


def fits(replicas: int, fragments: int, in_flight: int, fold_drops: bool, symmetry: bool) -> bool:
    """Whether the census takes this configuration: a state packs into its 63 bits, and with
    symmetry the relabellings it tries on every state number at most ``MAX_RELABELLINGS``."""
    return (Packing(replicas, fragments, in_flight, fold_drops).bits <= BITS
            and (not symmetry or math.factorial(replicas) <= MAX_RELABELLINGS))


def census(replicas: int, fragments: int, in_flight: int, homes: tuple[int, ...] | None = None, *,
           symmetry: bool = True, fold_drops: bool = True, tables: bool = True,
           progress: Progress = no_progress) -> Census:
    """Every reachable state (with ``symmetry``, orbit) of the configuration, level by level.
    ``tables=False`` relabels replica sets field by field even where a table would fit (the path
    larger configurations take; the controls run it on small ones)."""
    integer("replicas", replicas, 2, 8)
    integer("fragments", fragments, 1, 16)
    integer("in_flight", in_flight, 1, 6)
    if homes is not None and (len(homes) != fragments or any(not 0 <= h < replicas for h in homes)):
        raise ArgumentError("homes", homes, "must name one replica per fragment")
    if symmetry and math.factorial(replicas) > MAX_RELABELLINGS:
        raise ArgumentError("replicas", replicas, f"with symmetry the census tries every relabelling of the replicas "
                            f"on every state: at most {MAX_RELABELLINGS} ({MAX_RELABELLINGS_REPLICAS} replicas)")
    if not fits(replicas, fragments, in_flight, fold_drops, symmetry):
        bits = Packing(replicas, fragments, in_flight, fold_drops).bits
        raise ArgumentError("configuration", f"{replicas} x {fragments}, in-flight <= {in_flight}"
                            + ("" if fold_drops else ", drops not folded"),
                            f"needs {bits} bits per state; the census packs a state into {BITS}")
    started = time.perf_counter()
    c = _Census(replicas, fragments, in_flight, homes, symmetry, fold_drops, tables)
    none = np.zeros((1, replicas), np.int64)
    empty = np.zeros((1, in_flight), np.int64)
    frontier = c.key(none, np.zeros(1, np.int64), empty, empty[:, :0] if fold_drops else empty)
    seen, levels, transitions = frontier, [1], 0
    while True:
        kids = c.successors(frontier)
        transitions += len(kids)
        kids = np.unique(kids)
        at = np.minimum(np.searchsorted(seen, kids), len(seen) - 1)
        frontier = kids[seen[at] != kids]
        if not len(frontier):
            break
        seen = np.union1d(seen, frontier)
        levels.append(len(frontier))
        progress(f"gossip census {replicas} x {fragments}, in-flight <= {in_flight}: states by depth {len(levels) - 1}",
                 len(seen), 0)
    return Census(replicas, fragments, in_flight, symmetry, fold_drops, len(seen), transitions, len(levels) - 1,
                  tuple(levels), round(time.perf_counter() - started, 3))
