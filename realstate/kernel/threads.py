"""How many threads tensor work runs on: one for small work, the user's allowance for large.

Why small work gets one thread: torch splits any operation above 32,768 elements between its
OpenMP threads, which wait for each other at the end of every operation.  On a machine whose
cores are busy (a laptop, CI, a cluster node shared with other jobs) a waiting thread spins
while the one it waits for is descheduled, and an operation that takes 25 µs on one thread takes
a millisecond and more on two: measured, the exact order value of one qwen3-1.7b middle layer
went from 2 ms on one thread to 360 ms on two under load.  Work is worth splitting only when each
thread gets several milliseconds of it, so ``threads_for`` gives a thread per
``ELEMENTS_PER_THREAD`` elements, at least one and at most the allowance.

The allowance is torch's intra-op thread count: ``configure`` sets it for the process (the
command line's ``--threads``; by default the cores this process may run on, at most
``DEFAULT_CAP``), and ``limited`` lowers it around one piece of work.  Thread counts never change
a result: every kernel that reads it gives the same bits on any number of threads (tested).
Lowering is not coordinated between Python threads that render at the same time (torch's count
is per process or per OS thread, by build): there, one thread's block can leave another's count
lowered, which costs speed and never changes a bit.

This module imports torch only when it has to act on it, so that a command that never touches
a tensor (proofs, the claim index) can take ``--threads`` without paying for torch."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from spec.arguments import integer

# elements of work that pay for one more thread on a loaded machine (a few ms of copying)
ELEMENTS_PER_THREAD = 1 << 22
# the default allowance's ceiling: the kernels are bound by memory bandwidth well before this
DEFAULT_CAP = 8
MAX_THREADS = 1024
# torch never splits an operation this small (at::internal::GRAIN_SIZE): nothing to lower
_TORCH_GRAIN = 1 << 15


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS reports one: a
    container or ``taskset`` limit counts, unlike ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """The allowance when the user names none: the usable cores, at most ``DEFAULT_CAP``."""
    return min(usable_cores(), DEFAULT_CAP)


# the command line's help for --threads (machine-independent: docs/CLI.md is generated from it)
DEFAULT_HELP = (f"threads for large tensor work, 1..{MAX_THREADS} (small work always runs on one); "
                f"default: the cores this process may use, at most {DEFAULT_CAP}")


def check_threads(threads: int) -> int:
    """``threads`` if it is an allowance in 1..``MAX_THREADS``, else ``ArgumentError('threads')``."""
    return integer("threads", threads, 1, MAX_THREADS, " threads")


def configure(threads: int | None = None) -> int:
    """Make ``threads`` (default ``default_threads()``) the process's allowance and return it.
    Where torch is not loaded yet, ``OMP_NUM_THREADS`` carries it to torch's start-up (and to
    the processes this one starts), so a command that never loads torch never pays for it."""
    chosen = default_threads() if threads is None else check_threads(threads)
    torch = sys.modules.get("torch")
    if torch is None:
        os.environ["OMP_NUM_THREADS"] = str(chosen)
    else:
        torch.set_num_threads(chosen)
    return chosen


def allowed() -> int:
    """The allowance: torch's intra-op thread count."""
    import torch

    return torch.get_num_threads()


def threads_for(elements: int, allowance: int | None = None) -> int:
    """Threads for one piece of work of ``elements`` elements: one per ``ELEMENTS_PER_THREAD``,
    at least one and at most ``allowance`` (default ``allowed()``)."""
    cap = allowed() if allowance is None else allowance
    return max(1, min(cap, elements // ELEMENTS_PER_THREAD))


class _Lowered:
    """Torch's thread count lowered to ``wanted`` inside a ``with`` block (a plain class: a
    render enters one per call, and a generator-based context manager costs a few µs)."""

    __slots__ = ("wanted", "previous", "apply")

    def __init__(self, wanted: int, previous: int, apply: Callable[[int], None]) -> None:
        self.wanted, self.previous, self.apply = wanted, previous, apply

    def __enter__(self) -> int:
        if self.wanted != self.previous:
            self.apply(self.wanted)
        return self.wanted

    def __exit__(self, *exc: object) -> None:
        if self.wanted != self.previous:
            self.apply(self.previous)


_UNCHANGED = nullcontext()


def limited(elements: int) -> AbstractContextManager[object]:
    """A ``with`` block whose torch operations run on ``threads_for(elements)`` threads (never
    more than the allowance already is); the allowance is restored after.  Work that torch
    never splits anyway leaves the count alone."""
    if elements <= _TORCH_GRAIN:
        return _UNCHANGED
    import torch

    current = torch.get_num_threads()
    return _Lowered(threads_for(elements, current), current, torch.set_num_threads)


def pinned(threads: int) -> AbstractContextManager[object]:
    """A ``with`` block whose torch operations run on exactly ``threads`` threads, the allowance
    restored after: for a reduction whose bits must not depend on how many threads summed it
    (a composition's deviation scores decide which tokens it recomputes)."""
    import torch

    return _Lowered(check_threads(threads), torch.get_num_threads(), torch.set_num_threads)
