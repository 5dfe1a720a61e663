"""A CPU hog for the benchmarks' loaded column: one busy-looping process per core, so every
figure is shown as measured quiet and as measured with every core contended (what a CI
runner, a laptop in use or a shared cluster node looks like), side by side in one run.

The hog processes are plain ``python -c 'while True: pass'`` children, started once and kept
stopped (SIGSTOP) except while a loaded sample is taken (SIGCONT): quiet and loaded samples
alternate, so both see the same background load of the machine, and the ratio of the two
columns is the hog's effect alone.  The children are stopped by their own ids at the end."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

BUSY_LOOP = "while True: pass"
CONDITIONS = ("quiet", "loaded")


class CpuHog:
    """``processes`` (default ``os.cpu_count()``) busy-looping children, stopped except inside
    ``running()``."""

    def __init__(self, processes: int | None = None, settle_s: float = 0.05) -> None:
        self.count = (os.cpu_count() or 1) if processes is None else processes
        self.settle_s = settle_s
        self.children: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuHog:
        self.children = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdin=subprocess.DEVNULL)
                         for _ in range(self.count)]
        self._signal(signal.SIGSTOP)
        return self

    def __exit__(self, *exc: object) -> None:
        for child in self.children:
            child.kill()
        for child in self.children:
            child.wait()

    def _signal(self, sig: signal.Signals) -> None:
        for child in self.children:
            child.send_signal(sig)

    @contextmanager
    def running(self) -> Iterator[None]:
        """The hog busy on every core for the block (after ``settle_s``, so the scheduler sees it)."""
        self._signal(signal.SIGCONT)
        try:
            time.sleep(self.settle_s)
            yield
        finally:
            self._signal(signal.SIGSTOP)


def canary() -> int:
    """A fixed single-threaded pure-Python loop, sampled with the measures: its loaded over quiet
    figure shows in every run that the hog was there to be felt (about 1.5x on an otherwise idle
    machine, where three busy processes share two cores; less where other load already shares them)."""
    return sum(range(200_000))


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages (what ``uptime`` shows), taken before the hog starts."""
    return [round(x, 2) for x in os.getloadavg()]


Samples = dict[str, dict[str, list[float]]]  # condition -> measure -> seconds per call, per repeat


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


def side_by_side(measures: dict[str, Callable[[], object]], repeats: int, hog: CpuHog,
                 min_sample_s: float = 0.05, clock: Callable[[], float] = time.perf_counter) -> Samples:
    """Seconds per call of each measure, quiet and loaded, sampled in alternation: each repeat
    takes every measure quiet, then every measure with the hog running.  A call shorter than
    ``min_sample_s`` (timed quiet, once) is repeated inside a sample.  ``clock`` is wall time by
    default; ``time.thread_time`` counts only the CPU time of the measuring thread (the cost of a
    call with other processes' share of the cores left out: the loaded column then shows only
    what contention does to caches and memory)."""
    inner = {}
    for name, fn in measures.items():
        fn()  # warm-up: first-call costs are not the figure
        start = time.perf_counter()
        fn()
        inner[name] = max(1, int(min_sample_s / max(time.perf_counter() - start, 1e-9)))

    def sample(name: str) -> float:
        fn, n = measures[name], inner[name]
        t = clock()
        for _ in range(n):
            fn()
        return (clock() - t) / n

    samples: Samples = {c: {name: [] for name in measures} for c in CONDITIONS}
    for _ in range(repeats):
        for name in measures:
            samples["quiet"][name].append(sample(name))
        with hog.running():
            for name in measures:
                samples["loaded"][name].append(sample(name))
    return samples


def median(samples: Samples, condition: str, name: str) -> float:
    return statistics.median(samples[condition][name])


def ratio(samples: Samples, top: tuple[str, str], bottom: tuple[str, str]) -> float:
    """Median over repeats of (condition, measure) ``top`` over ``bottom`` (taken in the same repeat)."""
    return statistics.median(a / b for a, b in zip(samples[top[0]][top[1]], samples[bottom[0]][bottom[1]]))


def columns(samples: Samples, name: str, floor: str | None = None) -> dict[str, float]:
    """One measure's figures side by side: seconds quiet and loaded, loaded over quiet, and with
    ``floor`` the measure over its floor in each condition."""
    row = {"quiet_s": median(samples, "quiet", name), "loaded_s": median(samples, "loaded", name),
           "loaded_over_quiet": ratio(samples, ("loaded", name), ("quiet", name))}
    if floor is not None:
        row["quiet_over_floor"] = ratio(samples, ("quiet", name), ("quiet", floor))
        row["loaded_over_floor"] = ratio(samples, ("loaded", name), ("loaded", floor))
    return row


def run_loaded(command: list[str], processes: int | None = None) -> int:
    """``command`` run to its end with the hog busy on every core (a test suite's verdict must not
    change under it); its exit status is returned."""
    with CpuHog(processes) as hog, hog.running():
        return subprocess.run(command).returncode


if __name__ == "__main__":
    # python benchmarks/cpu_hog.py COMMAND...: the command under one busy loop per core
    if len(sys.argv) < 2:
        print("usage: python benchmarks/cpu_hog.py COMMAND [ARG...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(run_loaded(sys.argv[1:]))
