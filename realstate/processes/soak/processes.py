"""Worker processes as the harness sees them: start, send a command, wait, SIGKILL, replace.

Workers are forked by a ``multiprocessing`` fork server that has imported torch and the store
code once, so a worker killed by the nemesis is replaced in milliseconds, not an interpreter
start-up.  Each is a real OS process with its own pipe, killed with SIGKILL."""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any

from realstate.processes.soak.synthetic import FragmentShape
from realstate.processes.soak.worker import serve
from spec import InputError

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["realstate.processes.soak.worker"])


class WorkerDied(Exception):
    """The worker process exited (killed by the nemesis, or crashed) before replying."""


class Worker:
    """One worker process and a thread reading its messages."""

    def __init__(self, seed: int, shape: FragmentShape, env: dict[str, str]) -> None:
        self.conn, child = _CONTEXT.Pipe()
        self.process = _CONTEXT.Process(target=serve, args=(child, seed, shape, env), daemon=True)
        self.process.start()
        child.close()
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, args=(self.conn,), daemon=True).start()

    @property
    def pid(self) -> int:
        return int(self.process.pid or 0)

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                self.messages.put(conn.recv())
            except (EOFError, OSError):
                self.messages.put(None)  # the process is gone
                return

    def next_message(self, timeout_s: float) -> dict[str, Any]:
        try:
            message = self.messages.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(f"worker {self.pid}: no answer in {timeout_s:.0f} s") from None
        if message is None:
            self.messages.put(None)
            raise WorkerDied(f"worker {self.pid} exited with {self.process.exitcode}")
        return message

    def wait_ready(self, timeout_s: float) -> None:
        if self.next_message(timeout_s) != {"ready": True}:
            raise InputError(f"worker {self.pid}: unexpected start-up message")

    def send(self, command: dict[str, Any]) -> None:
        try:
            self.conn.send(command)
        except OSError:
            raise WorkerDied(f"worker {self.pid} is gone") from None

    def has_message(self) -> bool:
        return not self.messages.empty()

    def kill(self) -> None:
        if self.process.is_alive():
            os.kill(self.pid, signal.SIGKILL)
        self.process.join()
        self.conn.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the worker to exit (closing our end would not wake it while our reader thread is
        blocked on that end); SIGKILL it if it does not."""
        if self.process.is_alive():
            try:
                self.conn.send({"op": "stop"})
            except OSError:
                pass
            self.process.join(timeout_s)
        if self.process.is_alive():
            os.kill(self.pid, signal.SIGKILL)
            self.process.join()
        self.conn.close()


class WorkerPool:
    """Hands out ready workers; keeps ``spares`` more started in advance."""

    def __init__(self, seed: int, shape: FragmentShape, env: dict[str, str], start_timeout_s: float,
                 spares: int = 1) -> None:
        self.seed, self.shape, self.env = seed, shape, env
        self.start_timeout_s, self.spares = start_timeout_s, spares
        self._spare: queue.Queue[Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._all: list[Worker] = []
        self.started = 0

    def _start(self) -> Worker:
        worker = Worker(self.seed, self.shape, self.env)
        with self._lock:
            self._all.append(worker)
            self.started += 1
        return worker

    def fill(self) -> None:
        for _ in range(self.spares):
            self._spare.put(self._start())

    def take(self) -> Worker:
        """A ready worker (a spare if one is there), and a new spare started in its place."""
        try:
            worker = self._spare.get_nowait()
        except queue.Empty:
            worker = self._start()
        self._spare.put(self._start())
        worker.wait_ready(self.start_timeout_s)
        return worker

    def stop_all(self) -> None:
        with self._lock:
            workers = list(self._all)
        for worker in workers:
            worker.stop()
