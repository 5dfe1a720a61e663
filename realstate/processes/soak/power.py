"""Power loss of a directory replica, modelled the way crash-consistency tools (ALICE,
CrashMonkey) model it: record a put's durable operations, build every state a POSIX file system
may come back in when the power fails after each of them, and check the invariants on each.

The record is the store's own steps (``FragmentStore.step``), each reported once the operation
it names has returned: the temporary opened, each block written, flushed, the file fsynced,
renamed over the final name, the directory fsynced (``DirectoryStore._fsync_directory`` reports
it only after the fsync).  Why a model and not a kill: a killed process leaves the kernel's page
cache behind, which still holds every write and rename; only the power failing loses what was
not synced.  What POSIX guarantees then, and so all this model keeps for certain: a file's
bytes once the file was fsynced after they were written; a rename once its directory was
fsynced after it.  Anything not synced may or may not have reached the disk, so the crash states
after a step are the rename kept or lost (unless synced) and the file holding any whole-block
prefix of what was written (from what was synced up to all of it).  Writers' temporaries and
their removal are the crash table's business (``crashes``) and are left out.

Each crash state is written into a fresh directory store and read back through the product's
``DirectoryStore``.  The invariants:

- an acknowledged put survives: in every state after the put returned, the fragment is listed
  and reads back whole and valid;
- no torn fragment: in every state after every step, a fragment-named file reads back whole.

The model proves it could see: four negative controls go through the same record, states and
invariants, and each must be reported — a store that never fsyncs its directory and one that
fsyncs it before the rename instead of after (the acknowledged fragment lost either way), one
that renames before it fsyncs the file (a torn file under the final name), and one that fsyncs
the file only after renaming it.  The last is torn only while its rename is not yet durable
(from the directory's fsync on, the file's blocks are all synced): it is the control that shows
the model keeps the renamed branch of a rename that may still be lost."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from realstate.exchange.fragment_file import FormatError, fragment_to_bytes
from realstate.exchange.stores import MARKER_NAME, MARKER_TEXT, DirectoryStore, fragment_name
from realstate.kernel.fragment import Fragment

BLOCKS = 4  # the put writes the fragment in this many blocks here, so states fall between writes
NO_DIRECTORY_SYNC = "a store that never fsyncs its directory"
SYNC_BEFORE_RENAME = "a store that fsyncs its directory before the rename"
RENAME_BEFORE_SYNC = "a store that renames before it fsyncs the file"
SYNC_AFTER_RENAME = "a store that fsyncs the file only after renaming it"
TORN, LOST = "torn", "lost"  # the two invariants: no torn file under the final name; the acknowledged put kept
# what each control's wrong order breaks, and nothing else: a directory never synced, or synced
# before the rename, loses the acknowledged put but never tears it (the file was fsynced first);
# a rename before the file's fsync, or a file fsynced only after it, tears the file but keeps the
# put (the directory is synced last).  A control that broke more than its own would still be
# reported while no longer showing the one thing it is there for.
EXPECTED = {NO_DIRECTORY_SYNC: {LOST}, SYNC_BEFORE_RENAME: {LOST}, RENAME_BEFORE_SYNC: {TORN},
            SYNC_AFTER_RENAME: {TORN}}


class _NoDirectorySyncStore(DirectoryStore):
    """Negative control only: the directory is never fsynced (nor reported synced)."""

    def _fsync_directory(self) -> None:
        return None


class _ControlStore(DirectoryStore):
    """Negative controls only: a put written in a wrong order (``_write_atomic``), each control
    with its own temporary name."""

    digit = "0"

    def _write_temp(self, chunks: Iterable[bytes], fsync: bool) -> Path:
        """The temporary written block by block and flushed, fsynced only when ``fsync``."""
        temp = self.path / f".tmp-{os.getpid()}-{self.digit * 16}"
        with open(temp, "xb") as handle:
            self.step("temporary opened")
            for chunk in chunks:
                handle.write(chunk)
                self.step("block written")
            handle.flush()
            self.step("flushed")
            if fsync:
                os.fsync(handle.fileno())
                self.step("fsynced")
        return temp


class _RenameBeforeSyncStore(_ControlStore):
    """The temporary is written and renamed, then the directory synced, but the file itself is
    never fsynced."""

    def _write_atomic(self, name: str, chunks: Iterable[bytes]) -> None:
        os.replace(self._write_temp(chunks, fsync=False), self.path / name)
        self.step("renamed")
        self._fsync_directory()


class _SyncBeforeRenameStore(_ControlStore):
    """The file is written and fsynced, the directory fsynced, and only then renamed, so the
    rename itself is never made durable."""

    digit = "1"

    def _write_atomic(self, name: str, chunks: Iterable[bytes]) -> None:
        temp = self._write_temp(chunks, fsync=True)
        self._fsync_directory()
        os.replace(temp, self.path / name)
        self.step("renamed")


class _SyncAfterRenameStore(_ControlStore):
    """The temporary is written and renamed, then the file fsynced under its final name and the
    directory synced: every block is durable before the rename is, so only a state with the
    rename kept but not yet durable holds a torn file."""

    digit = "2"

    def _write_atomic(self, name: str, chunks: Iterable[bytes]) -> None:
        final = self.path / name
        os.replace(self._write_temp(chunks, fsync=False), final)
        self.step("renamed")
        with open(final, "rb+") as handle:
            os.fsync(handle.fileno())
        self.step("fsynced")
        self._fsync_directory()


@dataclass(frozen=True, order=True)
class CrashState:
    """What the disk holds after a power loss: the final name or not, and the whole blocks of
    the fragment's bytes its file holds."""

    renamed: bool
    blocks: int


def crash_states(trace: list[str]) -> list[set[CrashState]]:
    """Every state the file system may come back in when the power fails after the k-th step
    of ``trace`` (k = 0: before the first), by the POSIX rules of the module doc."""
    written = synced = 0  # blocks written; of those, made durable by an fsync of the file
    renamed = durable_rename = False
    points = []
    for k in range(len(trace) + 1):
        name = trace[k - 1] if k else ""
        if name == "block written":
            written += 1
        elif name == "fsynced":
            synced = written
        elif name == "renamed":
            renamed = True
        elif name == "directory synced" and renamed:
            durable_rename = True
        names = {True} if durable_rename else {False, True} if renamed else {False}
        points.append({CrashState(n, b if n else 0) for n in names for b in range(synced, written + 1)})
    return points


@dataclass
class PowerLoss:
    """One put under the model: its trace, and the invariants it broke."""

    store: str  # "directory store", or one of the negative controls
    trace: list[str]
    states: int  # distinct crash states checked
    violations: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)  # TORN and/or LOST: which invariants it broke


def _record(store_class: type[DirectoryStore], path: Path, fragment: Fragment, block: int) -> list[str]:
    store = store_class(path, create=True)
    store.write_block = block
    trace: list[str] = []
    store.step = trace.append
    store.put(fragment)
    return trace


def _materialise(path: Path, state: CrashState, fragment: Fragment, data: bytes, block: int) -> None:
    """The disk after the power loss: a store holding its marker and, if the rename survived,
    the fragment's file with the bytes that survived."""
    path.mkdir(parents=True)
    (path / MARKER_NAME).write_text(MARKER_TEXT, encoding="ascii")
    if state.renamed:
        (path / fragment_name(fragment.content_id)).write_bytes(data[: state.blocks * block])


def _read_back(path: Path, fragment: Fragment) -> tuple[bool, str | None]:
    """(whether the fragment is listed, why a fragment-named file does not read back whole)."""
    store = DirectoryStore(path)
    listing = store.listing()
    for cid in listing:
        try:
            store.get(cid)
        except (FormatError, KeyError) as exc:
            return fragment.content_id in listing, str(exc)[:200]
    return fragment.content_id in listing, None


def check_put(workdir: Path, label: str, store_class: type[DirectoryStore], fragment: Fragment) -> PowerLoss:
    """Record one put through ``store_class``, then every crash state after every step, judged
    by the invariants (module doc)."""
    data = fragment_to_bytes(fragment)
    block = max(1, -(-len(data) // BLOCKS))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = _record(store_class, workdir / "record", fragment, block)
    points = crash_states(trace)
    seen: dict[CrashState, tuple[bool, str | None]] = {}
    result = PowerLoss(label, trace, 0)
    for k, states in enumerate(points):
        step = f"after step {k} ({trace[k - 1]})" if k else "before the first step"
        for state in sorted(states):
            if state not in seen:
                where = workdir / f"state-{int(state.renamed)}-{state.blocks}"
                _materialise(where, state, fragment, data, block)
                seen[state] = _read_back(where, fragment)
            listed, torn = seen[state]
            if torn is not None:
                result.kinds.add(TORN)
                result.violations.append(f"power lost {step}: torn file under the final name "
                                         f"({state.blocks} of {BLOCKS} blocks on disk): {torn}")
            if k == len(trace) and not listed:
                result.kinds.add(LOST)
                result.violations.append("power lost after the put returned: the acknowledged fragment is gone "
                                         "(the rename was never made durable)")
    result.states = len(seen)
    return result


@dataclass
class PowerTable:
    put: PowerLoss
    controls: list[PowerLoss]

    @property
    def violations(self) -> list[str]:
        return self.put.violations

    @property
    def blind(self) -> list[str]:
        """Why the model could not have seen a lost or torn put (empty: it could): a control not
        reported, or reported for another invariant than its own wrong order breaks."""
        return [f"negative control '{c.store}' was not reported by the invariants" if not c.violations else
                f"negative control '{c.store}' was reported {' and '.join(sorted(c.kinds))}, where its wrong "
                f"order is {' and '.join(sorted(EXPECTED[c.store]))} alone"
                for c in self.controls if c.kinds != EXPECTED[c.store]]

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.put.trace, "states": self.put.states, "violations": self.put.violations[:20],
                "controls": {c.store: c.violations[:3] for c in self.controls}, "blind": self.blind}


def power_table(workdir: Path, fragment: Fragment) -> PowerTable:
    """The store's put and the four negative controls under the power-loss model."""
    workdir.mkdir(parents=True, exist_ok=True)
    put = check_put(workdir / "put", "directory store", DirectoryStore, fragment)
    controls = [check_put(workdir / "no-directory-sync", NO_DIRECTORY_SYNC, _NoDirectorySyncStore, fragment),
                check_put(workdir / "sync-before-rename", SYNC_BEFORE_RENAME, _SyncBeforeRenameStore, fragment),
                check_put(workdir / "rename-before-sync", RENAME_BEFORE_SYNC, _RenameBeforeSyncStore, fragment),
                check_put(workdir / "sync-after-rename", SYNC_AFTER_RENAME, _SyncAfterRenameStore, fragment)]
    return PowerTable(put, controls)
