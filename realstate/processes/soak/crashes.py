"""Crash consistency of a directory replica, checked the way crash-consistency tools check a
file system: record the steps of an operation, then run it again in a child process SIGKILLed
at step k, for every k, and check the invariants on what the child left behind.

The operations are a ``put`` (a temporary opened, each block written, flushed, fsynced, renamed,
the directory synced) and a ``clean`` of writers' temporaries (listed, each removed, the
directory synced); the steps are the store's own ``FragmentStore.step`` calls.  The invariants:

- no torn file under a final name: every fragment-named file is a whole, valid fragment;
- no live writer's temporary removed (a clean only removes what is older than its age);
- recovery complete: after a crash, cleaning stale temporaries and retrying the put leaves the
  store holding exactly the fragment, valid, with no temporary left, and a second clean removes
  every stale temporary and keeps the live one.

Why in a child process and why SIGKILL: a crashed writer runs no ``finally`` and no cleanup, so an
exception thrown at a step would hide exactly the leftovers the invariants are about.  The
children are plain forks (milliseconds each), so the table runs before its caller starts threads.

Each table proves it could see: it needs every kind of step to be reached, every child to have
died at its step, some crash to have left a temporary behind; and two negative controls run
through the same children and the same invariants — a store that writes under the final name
(crashed mid-write) and a clean given age 0 (a live writer is then stale) — must each be
reported."""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from realstate.exchange.fragment_file import FormatError, fragment_to_bytes
from realstate.exchange.stores import DEFAULT_TEMP_AGE_S, DirectoryStore, fragment_name
from realstate.kernel.fragment import Fragment
from spec.output_files import replace_atomically

PUT_STEPS = ("temporary opened", "block written", "flushed", "fsynced", "renamed", "directory synced")
CLEAN_STEPS = ("temporaries listed", "temporary removed", "directory synced")
BLOCKS = 4  # a put writes the fragment in this many blocks here, so crashes land between writes
STALE = 2  # stale temporaries a clean finds (each removal is a step)


class _FinalNameStore(DirectoryStore):
    """Negative control only: writes straight under the final name (no temporary, no rename)."""

    def _write_atomic(self, name: str, chunks: Any) -> None:
        replace_atomically(self.path / name, self.path / name, chunks, self.step)


@dataclass
class Crash:
    operation: str  # put | clean (a control: put under the final name | clean with age 0)
    number: int  # the step the child was killed at, 1-based; 0: it ran to completion
    step: str
    killed: bool
    temporaries_left: int
    violations: list[str] = field(default_factory=list)


@dataclass
class CrashTable:
    steps: dict[str, list[str]]
    crashes: list[Crash]
    controls: list[Crash]
    blind: list[str]  # why the table could not have seen a violation (empty: it could)

    @property
    def violations(self) -> list[str]:
        return [f"{c.operation} crashed at step {c.number} ({c.step}): {v}"
                for c in self.crashes for v in c.violations]

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "crashes": len(self.crashes), "violations": self.violations[:20],
                "controls": {c.operation: c.violations[:3] for c in self.controls}, "blind": self.blind}


def _block(data: bytes) -> int:
    return max(1, -(-len(data) // BLOCKS))


def _child(path: str, operation: str, payload: bytes, cid: bytes, stop_at: int) -> None:
    """The crashed process: the operation on the store at ``path``, SIGKILLed at step ``stop_at``.
    A put goes through the backend's write primitive with bytes encoded beforehand, so the child
    touches files only (no tensor library state crosses the fork)."""
    store = (_FinalNameStore if operation == "put under the final name" else DirectoryStore)(path)
    store.write_block = _block(payload)
    count = 0

    def stop(name: str) -> None:
        nonlocal count
        count += 1
        if count == stop_at:
            os.kill(os.getpid(), signal.SIGKILL)

    store.step = stop
    if operation.startswith("put"):
        store._create(cid, payload)
    else:
        store.clean_temporaries(0.0 if operation == "clean with age 0" else DEFAULT_TEMP_AGE_S)


def _run_child(path: Path, operation: str, payload: bytes, cid: bytes, stop_at: int) -> bool:
    """Whether the child died of SIGKILL (``stop_at`` 0: whether it ran to completion).  A plain
    fork: the caller runs the table before it starts any thread."""
    pid = os.fork()
    if pid == 0:  # the child: whatever happens, it never returns into the caller's code
        code = 1
        try:
            _child(str(path), operation, payload, cid, stop_at)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if stop_at:
        return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _temporary(store: DirectoryStore, data: bytes, age_s: float) -> str:
    """A writer's temporary with ``data``, last modified ``age_s`` seconds ago."""
    name = f".tmp-{4_100_000 + secrets.randbelow(1000)}-{secrets.token_hex(8)}"
    (store.path / name).write_bytes(data)
    then = time.time() - age_s
    os.utime(store.path / name, (then, then))
    return name


def _put_invariants(path: Path, fragment: Fragment, completed: bool) -> tuple[int, list[str]]:
    problems: list[str] = []
    store = DirectoryStore(path)
    listing = store.listing()
    for cid in listing:
        try:
            store.get(cid)
        except FormatError as exc:
            problems.append(f"torn file under the final name {fragment_name(cid)}: {exc.problem}")
    if set(listing) - {fragment.content_id}:
        problems.append("a fragment that was never put is listed")
    if completed and fragment.content_id not in listing:
        problems.append("the put completed but the fragment is absent")
    left = len(store.temporaries())
    store.clean_temporaries(0.0)  # recovery: the killed writer's leftovers, then the put again
    store.put(fragment)
    if store.temporaries():
        problems.append(f"recovery incomplete: {len(store.temporaries())} temporary file(s) left")
    report = store.verify()
    if not report.ok or set(store.listing()) != {fragment.content_id}:
        problems.append("recovery incomplete: the store does not hold exactly the fragment, valid "
                        f"({'; '.join(p for _, p in report.corrupt[:2]) or 'wrong set'})")
    return left, problems


def _clean_setup(path: Path, fragment: Fragment, data: bytes) -> tuple[DirectoryStore, list[str], str]:
    store = DirectoryStore(path, create=True)
    store.put(fragment)
    stale = [_temporary(store, data[: len(data) // 2], 2 * DEFAULT_TEMP_AGE_S) for _ in range(STALE)]
    live = _temporary(store, data[: len(data) // 3], 0.0)
    return store, stale, live


def _clean_invariants(path: Path, fragment: Fragment, stale: list[str], live: str) -> tuple[int, list[str]]:
    problems: list[str] = []
    store = DirectoryStore(path)
    live_kept = live in store.temporaries()
    if not live_kept:
        problems.append("a live writer's temporary was removed")
    try:
        store.get(fragment.content_id)
    except (FormatError, KeyError) as exc:
        problems.append(f"the fragment is no longer readable: {exc}")
    left = sum(name in store.temporaries() for name in stale)
    store.clean_temporaries()  # recovery: the same clean again, uncrashed
    remaining = store.temporaries()
    if any(name in remaining for name in stale):
        problems.append("recovery incomplete: a stale temporary survived a second clean")
    if live_kept and live not in remaining:
        problems.append("a live writer's temporary was removed by the second clean")
    return left, problems


def _record(path: Path, operation: str, fragment: Fragment) -> list[str]:
    """The operation's steps, in order, run once in this process with a recording hook."""
    steps: list[str] = []
    if operation == "put":
        store = DirectoryStore(path, create=True)
        store.write_block = _block(fragment_to_bytes(fragment))
        store.step = steps.append
        store.put(fragment)
    else:
        store = _clean_setup(path, fragment, fragment_to_bytes(fragment))[0]
        store.step = steps.append
        store.clean_temporaries()
    return steps


def _case(workdir: Path, operation: str, fragment: Fragment, data: bytes, number: int,
          steps: list[str]) -> Crash:
    path = workdir / f"{operation.replace(' ', '-')}-{number}"
    if operation.startswith("put"):
        DirectoryStore(path, create=True)
        killed = _run_child(path, operation, data, fragment.content_id, number)
        left, problems = _put_invariants(path, fragment, completed=number == 0)
    else:
        _, stale, live = _clean_setup(path, fragment, data)
        killed = _run_child(path, operation, data, fragment.content_id, number)
        left, problems = _clean_invariants(path, fragment, stale, live)
    step = steps[number - 1] if 0 < number <= len(steps) else "ran to completion"
    return Crash(operation, number, step, killed, left, problems)


def crash_table(workdir: Path, fragment: Fragment) -> CrashTable:
    """Crash a put and a clean at each of their steps in turn (module doc)."""
    workdir.mkdir(parents=True, exist_ok=True)
    data = fragment_to_bytes(fragment)
    steps = {op: _record(workdir / f"record-{op}", op, fragment) for op in ("put", "clean")}
    crashes = [_case(workdir, op, fragment, data, k, steps[op])
               for op in ("put", "clean") for k in [*range(1, len(steps[op]) + 1), 0]]
    controls = [_case(workdir, "put under the final name", fragment, data, 2, steps["put"]),
                _case(workdir, "clean with age 0", fragment, data, 0, steps["clean"])]
    blind = [f"{op}: the store never reports the step '{name}', so no crash lands there"
             for op, required in (("put", PUT_STEPS), ("clean", CLEAN_STEPS)) for name in required
             if name not in steps[op]]
    if steps["put"].count("block written") < 2:
        blind.append("put: written in one block, so no crash lands between two writes")
    blind += [f"{c.operation}: the child was not stopped at step {c.number} ({c.step})"
              for c in crashes + controls if not c.killed]
    if not any(c.temporaries_left for c in crashes if c.operation == "put"):
        blind.append("put: no crash left a killed writer's temporary (none landed mid-write)")
    if not any(c.temporaries_left for c in crashes if c.operation == "clean" and c.number):
        blind.append("clean: no crash left a stale temporary behind (none landed mid-clean)")
    blind += [f"negative control '{c.operation}' was not reported by the invariants"
              for c in controls if not c.violations]
    return CrashTable(steps, crashes, controls, blind)
