"""Ctrl-C around child processes: the parent handles it, children never print a traceback.

Why: a terminal sends SIGINT to the whole process group, so every pool worker, rank and fork
server gets it too; each would print its own ``KeyboardInterrupt`` traceback, and a worker whose
start was cut short prints another when its parent is gone.  Children therefore ignore SIGINT
(the disposition is inherited across ``exec``, so a fork server started with it ignored, and
every process it forks, ignore it from their first instruction), and the parent holds a Ctrl-C
back while it starts them, raising it once it can stop them cleanly."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def start_forkserver_without_interrupts() -> None:
    """Start the fork server with Ctrl-C ignored: the disposition is inherited across exec, so
    it and every worker forked from it ignore SIGINT from the start (a Ctrl-C while it imports
    torch would otherwise print its traceback); the parent, which handles Ctrl-C, stops them."""
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()  # no handler can be set here
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def deferred_interrupts() -> Iterator[list[int]]:
    """Record a Ctrl-C instead of raising it (whichever thread the signal lands on); the caller
    raises it where it can clean up.  Outside the main thread (no handler can be set) a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: seen.append(number))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def ignore_interrupts() -> None:
    """A pool worker leaves Ctrl-C to the parent, which stops it: no worker prints a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
