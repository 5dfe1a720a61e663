"""The gossip search's visited set, compact: a 16-byte digest per state in a flat open-addressing
table, and each state's trace parent as a fixed-width row, never a Python object per state.

A state is a row, numbered in the order it was reached (breadth first, so each level's rows are
one contiguous range).  Per row the table keeps the digest of the state's key (BLAKE2b, 128 bits,
of an injective integer encoding: ``digest``), the row of its parent (``NO_PARENT`` at the root),
the move from the parent (``encode_action``) and, with the symmetry reduction, the 16-byte merge
proof (``Symmetry.relabelled``).  That is 24 bytes a row, 40 with proofs, in chunks of
``CHUNK`` rows (no copy of the whole as it grows), plus the slot table: one uint32 per slot,
at most ``MAX_LOAD`` full, so 6 to 12 bytes a row.

Two keys with equal digests are one state to the table: the chance that any two of n states
collide is at most n(n-1)/2 / 2^128 (the birthday bound), about 2.2e-24 for 39 M states."""

from __future__ import annotations

import hashlib
import itertools
from array import array
from collections.abc import Hashable, Iterator

import numpy as np

from modelcheck.gossip_model import Action

CHUNK = 1 << 16            # rows per chunk of the row arrays
MAX_LOAD = 0.65            # slots filled at most this share before the slot table doubles
NO_PARENT = 0xFFFFFFFF     # the root's parent row
MAX_ROWS = NO_PARENT       # rows are numbered in uint32

VERBS = ("publish", "send", "deliver", "duplicate", "drop", "resend")
_VERB = {v: i for i, v in enumerate(VERBS)}
_MARK_LIMIT = 1 << 21      # marks (and fragment numbers) an action code holds: 21 bits


def encode_action(action: Action) -> int:
    """A move as one uint32: verb (3 bits), two replicas (4 bits each), a mark or fragment (21 bits)."""
    verb = _VERB[action[0]]
    if verb == 0:
        a, b, c = 0, 0, action[1]
    elif verb == 1:
        a, b, c = action[1], action[2], 0
    else:
        a, b, c = action[1]
    if not (0 <= a < 16 and 0 <= b < 16 and 0 <= c < _MARK_LIMIT):
        raise ValueError(f"move {action!r} does not fit the visited table's 32-bit move record")
    return verb | a << 3 | b << 7 | c << 11


def decode_action(code: int) -> Action:
    """The move ``encode_action`` wrote."""
    verb, a, b, c = code & 7, code >> 3 & 15, code >> 7 & 15, code >> 11
    if verb == 0:
        return ("publish", c)
    if verb == 1:
        return ("send", a, b)
    return (VERBS[verb], (a, b, c))


def digest(key: Hashable) -> bytes:
    """The 16-byte digest of a visited-set key: an orbit key (bytes, already an injective
    encoding) as it is, a plain key (``plain_key``) written out as integers, every list after its
    length, so two different keys never write the same integers."""
    if isinstance(key, bytes):
        return hashlib.blake2b(key, digest_size=16).digest()
    marks, published, flight, dropped = key  # type: ignore[misc]
    fields = [len(marks), *marks, len(published), *sorted(published)]
    for pool in (flight, dropped):
        moved = sorted((src, dst, mark, count) for (src, dst, mark), count in pool)
        fields += [len(moved), *itertools.chain.from_iterable(moved)]
    return hashlib.blake2b(array("q", fields).tobytes(), digest_size=16).digest()


class Visited:
    """States by digest: ``add`` a new one or find the row of one already reached."""

    def __init__(self, proofs: bool) -> None:
        self.proofs = proofs
        self.rows = 0
        self._slots = np.zeros(1 << 10, dtype=np.uint32)   # row + 1 per slot; 0: empty
        self._slot_view = memoryview(self._slots)
        self._mask = len(self._slots) - 1
        # per chunk: digest (two uint64), parent row, move code, and the proof (two uint64)
        self._columns: list[list[np.ndarray]] = []
        self._views: list[list[memoryview]] = []

    # -- rows ---------------------------------------------------------------------------------
    def _chunk(self) -> None:
        width = 6 if self.proofs else 4
        kinds = (np.uint64, np.uint64, np.uint32, np.uint32, np.uint64, np.uint64)[:width]
        columns = [np.zeros(CHUNK, dtype=k) for k in kinds]
        self._columns.append(columns)
        self._views.append([memoryview(c) for c in columns])

    def digest_of(self, row: int) -> tuple[int, int]:
        views = self._views[row >> 16]
        at = row & (CHUNK - 1)
        return views[0][at], views[1][at]

    def parent(self, row: int) -> tuple[int, Action] | None:
        """The parent row and the move from it (None at the root)."""
        views = self._views[row >> 16]
        at = row & (CHUNK - 1)
        up = views[2][at]
        return None if up == NO_PARENT else (up, decode_action(views[3][at]))

    def proof(self, row: int) -> bytes:
        views = self._views[row >> 16]
        at = row & (CHUNK - 1)
        return views[4][at].to_bytes(8, "little") + views[5][at].to_bytes(8, "little") if self.proofs else b""

    def path(self, row: int) -> list[Action]:
        """The moves from the root to ``row``."""
        moves: list[Action] = []
        step = self.parent(row)
        while step is not None:
            row, move = step
            moves.append(move)
            step = self.parent(row)
        return moves[::-1]

    # -- the digest table ---------------------------------------------------------------------
    def find(self, d: bytes) -> int | None:
        """The row whose digest is ``d``, or None."""
        lo, hi = int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")
        slots, mask = self._slot_view, self._mask
        i = lo & mask
        while True:
            held = slots[i]
            if held == 0:
                return None
            row = held - 1
            views = self._views[row >> 16]
            at = row & (CHUNK - 1)
            if views[0][at] == lo and views[1][at] == hi:
                return row
            i = (i + 1) & mask

    def add(self, d: bytes, parent: int, action: int, proof: bytes = b"") -> int:
        """A new row for digest ``d`` (not in the table: ``find`` first); its number."""
        row = self.rows
        if row >= MAX_ROWS:
            raise ValueError(f"the visited table holds at most {MAX_ROWS:,} states")
        if row & (CHUNK - 1) == 0:
            self._chunk()
        lo, hi = int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")
        views = self._views[-1]
        at = row & (CHUNK - 1)
        views[0][at], views[1][at], views[2][at], views[3][at] = lo, hi, parent, action
        if self.proofs:
            views[4][at] = int.from_bytes(proof[:8], "little")
            views[5][at] = int.from_bytes(proof[8:], "little")
        self.rows = row + 1
        if self.rows > MAX_LOAD * len(self._slots):
            self._grow()
        else:
            self._place(lo, row)
        return row

    def _place(self, lo: int, row: int) -> None:
        slots, mask = self._slot_view, self._mask
        i = lo & mask
        while slots[i] != 0:
            i = (i + 1) & mask
        slots[i] = row + 1

    def _grow(self, size: int | None = None) -> None:
        """A slot table of at least ``size`` (default: twice this one) under ``MAX_LOAD``, every
        row placed again (vectorised, in order of rows)."""
        size = size or len(self._slots) * 2
        while self.rows > MAX_LOAD * size:
            size *= 2
        self._slots = np.zeros(size, dtype=np.uint32)
        self._slot_view = memoryview(self._slots)
        self._mask = size - 1
        self._rehash()

    def _rehash(self) -> None:
        """Place rows 0..rows-1 in an empty slot table: each at its home slot, or the next free
        one (the order of placing is the order of rows, as ``add`` would have placed them)."""
        mask = self._mask
        placed = 0
        for columns in self._columns:
            count = min(CHUNK, self.rows - placed)
            if count <= 0:
                break
            homes = (columns[0][:count] & np.uint64(mask)).astype(np.int64)
            rows = np.arange(placed, placed + count, dtype=np.int64)
            while len(rows):  # rounds: every row whose slot is free and first among its rivals takes it
                free = self._slots[homes] == 0
                _, first = np.unique(homes, return_index=True)
                take = np.zeros(len(rows), dtype=bool)
                take[first] = True
                take &= free
                self._slots[homes[take]] = (rows[take] + 1).astype(np.uint32)
                rows, homes = rows[~take], (homes[~take] + 1) & mask
            placed += count

    # -- checkpoints --------------------------------------------------------------------------
    def columns(self, start: int, stop: int) -> Iterator[np.ndarray]:
        """Rows ``start``..``stop``-1, column by column (the order ``load`` reads them back)."""
        width = 6 if self.proofs else 4
        for c in range(width):
            parts = []
            row = start
            while row < stop:
                at = row & (CHUNK - 1)
                count = min(CHUNK - at, stop - row)
                parts.append(self._columns[row >> 16][c][at:at + count])
                row += count
            kind = (np.uint64, np.uint64, np.uint32, np.uint32, np.uint64, np.uint64)[c]
            yield np.concatenate(parts) if parts else np.zeros(0, dtype=kind)

    def extend(self, columns: list[np.ndarray]) -> None:
        """Append rows read back from a checkpoint (``columns``' order), then rebuild the slots."""
        count = len(columns[0])
        done = 0
        while done < count:
            row = self.rows
            if row & (CHUNK - 1) == 0:
                self._chunk()
            at = row & (CHUNK - 1)
            n = min(CHUNK - at, count - done)
            for target, source in zip(self._columns[-1], columns):
                target[at:at + n] = source[done:done + n]
            self.rows += n
            done += n

    def rebuild(self) -> None:
        """The slot table for the rows held (after ``extend``)."""
        self._grow(1 << 10)

    def nbytes(self) -> int:
        """Bytes the table holds: slots and row columns."""
        return self._slots.nbytes + sum(c.nbytes for columns in self._columns for c in columns)

