"""Checkpoints of the gossip search: after every completed level, what a later process needs to
go on from there (``canonmerge check --checkpoint DIR``, ``--resume DIR``).

A level is complete when every state of its frontier has been expanded and every state reached
has been checked.  Then the rows the level added to the visited table (``gossip_visited``) go
to a file of their own, and the manifest (the run's identity, every level file with its size
and SHA-256, the counts, the frontier as a range of rows, and per state mark a row holding that
state, so a resumed process numbers the states as this one did) replaces the previous one.
Every file is written to a temporary name, fsynced and renamed, the directory fsynced after:
a process killed at any moment leaves the previous checkpoint or the next, whole.

A resumed run reads the rows back, rebuilds the frontier's nodes by replaying each one's moves
from the root (the same nodes: the model is deterministic), and goes on.  It refuses, naming
the difference, a directory written for another configuration, universe, backend or check, by
another version of the search code (a hash of its modules' source), or one whose files do not
match their manifest (a torn write), or whose last level was written before it was complete."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_visited import Visited
from spec import ArgumentError
from spec.store_marker import refuse_inside_store

FORMAT = "canonmerge gossip checkpoint 1"
MANIFEST = "manifest.json"
# the modules whose source decides what a checkpoint holds and how a search goes on from it
SEARCH_MODULES = ("gossip_search", "gossip_visited", "gossip_checkpoint", "gossip_model", "gossip_symmetry",
                  "gossip_verdict")
_KINDS = (np.uint64, np.uint64, np.uint32, np.uint32, np.uint64, np.uint64)


def code_hash() -> str:
    """SHA-256 over the search modules' source, in ``SEARCH_MODULES`` order."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in SEARCH_MODULES:
        h.update(name.encode() + b"\0" + (here / f"{name}.py").read_bytes() + b"\0")
    return h.hexdigest()


def identity(config: GossipConfig, universe: str, backend: str, mutant: str | None, fair_exchange: bool) -> dict:
    """What a checkpoint must have been written for to be resumed here."""
    fields = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()}
    return {**fields, "universe": universe, "backend": backend, "mutant": mutant, "fair_exchange": fair_exchange}


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Checkpoint:
    """One run's checkpoint directory: ``write`` after each level, ``load`` to go on."""

    def __init__(self, directory: Path, ident: dict, argument: str) -> None:
        self.directory, self.identity, self.argument = Path(directory), ident, argument
        self.code = code_hash()
        self.levels: list[dict[str, Any]] = []
        self.written_rows = 0

    def _refuse(self, problem: str) -> ArgumentError:
        return ArgumentError(self.argument, str(self.directory), problem)

    def start(self) -> None:
        """A fresh run: the directory is made, and must hold no checkpoint already."""
        refuse_inside_store(self.directory, f"--{self.argument}")
        if (self.directory / MANIFEST).exists():
            raise self._refuse("holds a checkpoint already: continue it with --resume, or give another directory")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self._refuse(f"cannot be made ({e.strerror or e})") from None

    def write(self, visited: Visited, level: dict[str, Any], counts: dict[str, Any], marks: list[list[int]]) -> None:
        """The rows added since the last write, then the manifest naming them (both atomic)."""
        start, stop = self.written_rows, visited.rows
        name = f"level-{len(self.levels):06d}.bin"
        data = b"".join(c.tobytes() for c in visited.columns(start, stop))
        _write_atomic(self.directory / name, data)
        self.levels.append({"file": name, "rows": [start, stop], "bytes": len(data),
                            "sha256": hashlib.sha256(data).hexdigest()})
        self.written_rows = stop
        manifest = {"format": FORMAT, "identity": self.identity, "code": self.code, "levels": self.levels,
                    "level": level, "counts": counts, "marks": marks}
        _write_atomic(self.directory / MANIFEST, json.dumps(manifest, sort_keys=True).encode())

    def load(self, visited: Visited) -> dict[str, Any]:
        """Read a checkpoint back into ``visited`` (empty); the manifest, every refusal first."""
        refuse_inside_store(self.directory, f"--{self.argument}")
        path = self.directory / MANIFEST
        try:
            manifest = json.loads(path.read_bytes())
        except FileNotFoundError:
            raise self._refuse(f"holds no checkpoint ({MANIFEST} not found)") from None
        except OSError as e:
            raise self._refuse(f"{MANIFEST}: cannot be read ({e.strerror or e})") from None
        except ValueError:
            raise self._refuse(f"{MANIFEST}: torn write or not a checkpoint (not JSON)") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise self._refuse(f"{MANIFEST}: not a {FORMAT!r} manifest")
        theirs = manifest.get("identity") or {}
        differ = [k for k in sorted(set(theirs) | set(self.identity)) if theirs.get(k) != self.identity.get(k)]
        if differ:
            shown = "; ".join(f"{k} {theirs.get(k)!r} there, {self.identity.get(k)!r} here" for k in differ)
            raise self._refuse(f"was written by another configuration ({shown})")
        if manifest.get("code") != self.code:
            raise self._refuse(f"was written by another version of the search code (source hash "
                               f"{str(manifest.get('code'))[:12]} there, {self.code[:12]} here)")
        level, counts = manifest["level"], manifest["counts"]
        if level["expanded"] != level["size"] or counts["checked"] != level["rows"]:
            raise self._refuse(f"its last level was written before it was complete ({level['expanded']:,} of "
                               f"{level['size']:,} states expanded, {counts['checked']:,} of {level['rows']:,} checked)")
        width = 6 if visited.proofs else 4
        for entry in manifest["levels"]:
            start, stop = entry["rows"]
            try:
                data = (self.directory / entry["file"]).read_bytes()
            except OSError as e:
                raise self._refuse(f"{entry['file']}: cannot be read ({e.strerror or e})") from None
            if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise self._refuse(f"{entry['file']}: torn write ({len(data):,} bytes, not the {entry['bytes']:,} "
                                   "with the SHA-256 its manifest names)")
            if start != visited.rows:
                raise self._refuse(f"{entry['file']}: rows {start:,}.. do not follow the {visited.rows:,} before them")
            count, offset, columns = stop - start, 0, []
            for kind in _KINDS[:width]:
                size = count * np.dtype(kind).itemsize
                columns.append(np.frombuffer(data, dtype=kind, count=count, offset=offset).copy())
                offset += size
            if offset != len(data):
                raise self._refuse(f"{entry['file']}: {len(data):,} bytes for {count:,} rows of {width} columns")
            visited.extend(columns)
        if visited.rows != level["rows"]:
            raise self._refuse(f"its level files hold {visited.rows:,} rows, its manifest counts {level['rows']:,}")
        visited.rebuild()
        self.levels = list(manifest["levels"])
        self.written_rows = visited.rows
        return manifest
