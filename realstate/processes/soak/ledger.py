"""The soak's own books: every acknowledged put, written by the client when it is acknowledged.

Why a file of its own, outside every store: the judge must compare each replica with what the
clients were told, never with what the stores say they hold.  A judge that read the acknowledged
set back from the stores after the fact could not see an acknowledged write that every store
lost.  So the driver that receives a put's acknowledgment appends one line to this file,
flushes and fsyncs it, before the acknowledgment counts; the file is append-only (``O_APPEND``),
and it may not lie inside any replica store."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from realstate.exchange.stores import same_or_inside
from spec import InstrumentError

INSTRUMENT = "soak ledger"


class Ledger:
    """Appends ``{"replica": LOC, "id": HEX}`` lines; one writer object per file, thread-safe."""

    def __init__(self, path: Path, replicas: list[str]) -> None:
        for location in replicas:
            if same_or_inside(str(path), location):
                raise InstrumentError(INSTRUMENT, f"{path} lies inside the replica {location}: the books must be "
                                                  f"independent of the stores")
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL, 0o644)
        self._lock = threading.Lock()
        self.lines = 0

    def acknowledge(self, replica: str, cid_hex: str) -> None:
        line = (json.dumps({"replica": replica, "id": cid_hex}, sort_keys=True) + "\n").encode("ascii")
        with self._lock:
            os.write(self._fd, line)
            os.fsync(self._fd)
            self.lines += 1

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read_ledger(path: Path) -> dict[str, set[str]]:
    """Replica location -> ids acknowledged there, from the file (never from memory)."""
    acknowledged: dict[str, set[str]] = {}
    try:
        text = path.read_text("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise InstrumentError(INSTRUMENT, f"{path}: cannot read the books: {exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        try:
            entry = json.loads(line)
            acknowledged.setdefault(str(entry["replica"]), set()).add(str(entry["id"]))
        except (ValueError, KeyError, TypeError):
            raise InstrumentError(INSTRUMENT, f"{path}: line {number} is not an entry of the books") from None
    return acknowledged
