"""The worker processes of a sharded gossip search, each behind a pipe: the coordinator's side
of the protocol (send a method and its arguments, read ``("ok", value)`` or ``("error", text)``),
and what it says when a worker is gone.

Why apart from the search: a worker killed from outside (the OOM killer, a signal) must be one
line naming the worker whichever the coordinator sees first, the pipe's end or the exit; that is
process plumbing, the same for any search the workers run."""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from spec.interrupts import start_forkserver_without_interrupts

# how long a worker whose pipe closed is given to be reaped, so that its line says how it ended
GONE_JOIN_S = 30.0


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class ShardError(RuntimeError):
    """A worker of the sharded search raised (its message says how): a bug, never bad input (a
    worker killed from outside is a ``ChildProcessError``, which the command reports in one line)."""


class Workers:
    """The worker processes of one sharded search, each behind a pipe."""

    def __init__(self, specs: list[Any], serve: Callable[[Connection, Any], None], preload: str) -> None:
        """One process per spec, each running ``serve(pipe, spec)``, forked from a fork server
        that has imported ``preload`` (the backend's module)."""
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([preload])
        start_forkserver_without_interrupts()
        self.connections: list[Connection] = []
        self.processes = []
        try:
            for spec in specs:
                mine, theirs = context.Pipe()
                process = context.Process(target=serve, args=(theirs, spec), daemon=True)
                process.start()
                theirs.close()
                self.connections.append(mine)
                self.processes.append(process)
            for i in range(len(specs)):
                self._answer(i)
        except BaseException:
            self.stop(at_once=True)
            raise

    def _answer(self, i: int) -> Any:
        try:
            status, value = self.connections[i].recv()
        except (EOFError, OSError):  # the pipe closed, whole or mid-message: the worker is gone
            raise self._gone(i) from None
        if status != "ok":
            raise ShardError(f"gossip shard worker {i}: {value}")
        return value

    def _send(self, i: int, message: tuple[str, tuple[Any, ...]]) -> None:
        try:
            self.connections[i].send(message)
        except OSError:  # a broken pipe: the worker is gone
            raise self._gone(i) from None

    def _gone(self, i: int) -> ChildProcessError:
        """A worker killed from outside (the OOM killer, a signal): the machine's doing, exit 2.
        Whichever the coordinator sees first, the pipe's end or the exit, it is one event: the
        pipe's end waits for the exit, so the line names the worker and how it ended."""
        process = self.processes[i]
        process.join(timeout=GONE_JOIN_S)
        code = process.exitcode
        if code is None:
            how = "closed its pipe and has not exited"
        elif code < 0:
            how = f"was killed by {signal_name(-code)}"
        else:
            how = f"exited with status {code}"
        return ChildProcessError(f"gossip shard worker {i} {how} before it answered (killed, or out of memory?)")

    def call(self, i: int, method: str, *args: Any) -> Any:
        self._send(i, (method, args))
        return self._answer(i)

    def all(self, method: str, per_worker: list[tuple[Any, ...]] | None = None) -> list[Any]:
        """``method`` on every worker at once (sent to all, then the answers read in order)."""
        for i in range(len(self.connections)):
            self._send(i, (method, per_worker[i] if per_worker is not None else ()))
        return [self._answer(i) for i in range(len(self.connections))]

    def stop(self, at_once: bool = False) -> None:
        """Stop every worker; ``at_once`` (error, Ctrl-C) kills them: a worker ends its round first."""
        for connection in self.connections:
            try:
                connection.send(("stop", ()))
            except (OSError, ValueError):
                pass
        for process in self.processes:
            process.join(timeout=0 if at_once else 10)
            if process.is_alive():
                process.kill()
                process.join()
        for connection in self.connections:
            connection.close()
