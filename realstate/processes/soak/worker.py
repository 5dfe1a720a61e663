"""One soak process: an agent (publishes fragments into its replica) or an anti-entropy process
(merges one replica into another), driven by messages on a pipe.

Protocol: the worker sends ``{"ready": true}`` once started; then for each command it sends
``{"started": true}`` before doing anything (so the nemesis can kill it mid-operation) and one
reply: ``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``.  Commands:
``{"op": "put", "store": LOC, "agent": A, "index": J}`` and ``{"op": "merge", "dst": LOC, "src": LOC}``.
Everything goes through the product's own store code (``realstate.exchange.stores``).

A command with ``"crash_at": K`` is the nemesis's kill landing mid-operation for certain: at the
K-th step the store it writes reports (``FragmentStore.step``: after each write, around fsync,
around rename, around an upload) the worker sends ``{"crashed_at": STEP}`` and SIGKILLs itself,
running no cleanup, as a crashed process would.  An operation that ends before its K-th step
replies as usual (the harness then owes the kill to a later operation)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from realstate.exchange.stores import FragmentStore, no_step, open_store
from realstate.exchange.stores.anti_entropy import merge_stores
from realstate.processes.soak.synthetic import FragmentShape, soak_fragment
from spec import InputError, content_id_hex
from spec.interrupts import ignore_interrupts


class Replicas:
    """The stores this process has opened (each opened once: S3 opening costs requests)."""

    def __init__(self) -> None:
        self._open: dict[str, FragmentStore] = {}

    def __getitem__(self, location: str) -> FragmentStore:
        if location not in self._open:
            self._open[location] = open_store(location, create=True)
        return self._open[location]


def crash_at(conn: Connection, stop_at: int) -> Callable[[str], None]:
    """A step hook that kills this process at its ``stop_at``-th call (module doc)."""
    count = 0

    def step(name: str) -> None:
        nonlocal count
        count += 1
        if count == stop_at:
            conn.send({"crashed_at": name})
            os.kill(os.getpid(), signal.SIGKILL)

    return step


def execute(command: dict[str, Any], replicas: Replicas, seed: int, shape: FragmentShape,
            conn: Connection | None = None) -> dict[str, Any]:
    if command["op"] not in ("put", "merge"):
        raise InputError(f"unknown command {command['op']!r}")
    written = replicas[command["store"] if command["op"] == "put" else command["dst"]]
    stop_at = command.get("crash_at")
    written.step = crash_at(conn, stop_at) if conn is not None and stop_at else no_step
    if command["op"] == "put":
        fragment = soak_fragment(seed, command["agent"], command["index"], shape)
        added = written.put(fragment)
        return {"ok": True, "id": content_id_hex(fragment.content_id), "added": added}
    result = merge_stores(written, replicas[command["src"]])
    return {"ok": True, "added": result.added, "missing": result.missing, "bytes": result.bytes_copied}


def serve(conn: Connection, seed: int, shape: FragmentShape, env: dict[str, str]) -> None:
    """The process's main loop (the target of a forked ``multiprocessing`` process)."""
    os.environ.update(env)  # the loopback endpoint, read by boto3's standard chain in this process
    ignore_interrupts()  # Ctrl-C and SIGHUP are the parent's to handle: it stops us
    replicas = Replicas()
    conn.send({"ready": True})
    while True:
        try:
            command = conn.recv()
        except EOFError:
            return
        if command.get("op") == "stop":
            return
        conn.send({"started": True})
        try:
            reply = execute(command, replicas, seed, shape, conn)
        except (InputError, OSError) as exc:  # reported, not fatal: the harness retries or moves on
            reply = {"ok": False, "error": str(exc)[:500]}
        except Exception as exc:  # noqa: BLE001 (a bug: one line back to the harness, never a traceback here)
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        conn.send(reply)
