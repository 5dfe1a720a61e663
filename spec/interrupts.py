"""Ctrl-C around child processes: the parent handles it, children never print a traceback.

Why: a terminal sends SIGINT to the whole process group, so every pool worker, rank and fork
server gets it too; each would print its own ``KeyboardInterrupt`` traceback, and a worker whose
start was cut short prints another when its parent is gone.  Children therefore ignore SIGINT
(the disposition is inherited across ``exec``, so a fork server started with it ignored, and
every process it forks, ignore it from their first instruction), and the parent holds a Ctrl-C
back while it starts them, raising it once it can stop them cleanly.

SIGTERM (a supervisor, ``kill``) and SIGHUP (a closed terminal) are treated exactly as Ctrl-C:
the command line raises ``Interrupted``, a ``KeyboardInterrupt`` carrying the signal's number,
so every clean-up written for Ctrl-C (pools stopped, temporaries removed) runs for them too.
Children ignore SIGINT and SIGHUP (a terminal sends both to the whole group) and leave their
stopping to the parent; they keep SIGTERM's default, which is how a pool stops its workers."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# the signals that stop a command cleanly: a terminal's Ctrl-C, a supervisor's SIGTERM, a hang-up
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# what children ignore: the terminal's signals (SIGTERM stays theirs: a pool terminates with it)
CHILDREN_IGNORE = (signal.SIGINT, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP (or a Ctrl-C held back and raised later), raised where Ctrl-C raises
    ``KeyboardInterrupt``: one clean-up path for every stopping signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_number(interruption: KeyboardInterrupt) -> int:
    """The signal an interruption came from (a plain ``KeyboardInterrupt`` is Ctrl-C's)."""
    return getattr(interruption, "signum", int(signal.SIGINT))


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(signum)


@contextmanager
def stopping_signals() -> Iterator[None]:
    """Inside: SIGTERM and SIGHUP raise ``Interrupted`` in the main thread, as SIGINT raises
    ``KeyboardInterrupt``; the previous handlers come back after.  Outside the main thread a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def raise_held(seen: list[int]) -> None:
    """Raise the first stopping signal ``deferred_interrupts`` held back, if one was."""
    if seen:
        raise Interrupted(seen[0])


def start_forkserver_without_interrupts() -> None:
    """Start the fork server with Ctrl-C ignored: the disposition is inherited across exec, so
    it and every worker forked from it ignore SIGINT from the start (a Ctrl-C while it imports
    torch would otherwise print its traceback); the parent, which handles Ctrl-C, stops them."""
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()  # no handler can be set here
        return
    held: list[int] = []  # a SIGTERM meanwhile is held and raised once the server runs
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in CHILDREN_IGNORE}
    previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, lambda number, frame: held.append(number))
    try:
        forkserver.ensure_running()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    raise_held(held)


@contextmanager
def deferred_interrupts() -> Iterator[list[int]]:
    """Record a Ctrl-C instead of raising it (whichever thread the signal lands on); the caller
    raises it where it can clean up.  Outside the main thread (no handler can be set) a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    seen: list[int] = []
    previous = {s: signal.signal(s, lambda number, frame: seen.append(number)) for s in STOPPING_SIGNALS}
    try:
        yield seen
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def ignore_interrupts() -> None:
    """A pool worker leaves Ctrl-C and SIGHUP to the parent, which stops it: no worker prints a
    traceback.  SIGTERM keeps its default: the parent's pool stops workers with it."""
    for s in CHILDREN_IGNORE:
        signal.signal(s, signal.SIG_IGN)
