"""Progress for long runs, on stderr so that ``--json`` output on stdout stays clean.

On a terminal it is a live bar; elsewhere (CI logs, pipes) a throttled line per task, so logs
show that work moves without drowning in updates."""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class ProgressPrinter:
    def __init__(self, enabled: bool = True, min_interval: float = 2.0) -> None:
        self._enabled = enabled
        self._interval = min_interval
        self._console = Console(stderr=True, emoji=False)
        self._live: Progress | None = None
        self._tasks: dict[str, int] = {}
        self._last_line: dict[str, float] = {}
        self._first: dict[str, tuple[float, int]] = {}   # task -> (time, done) when first seen

    def __enter__(self) -> ProgressPrinter:
        if self._enabled and self._console.is_terminal:
            self._live = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), console=self._console, transient=True,
            )
            self._live.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def __call__(self, task: str, done: int, total: int) -> None:
        if not self._enabled:
            return
        if self._live is not None:
            if task not in self._tasks:
                self._tasks[task] = self._live.add_task(task, total=total or None)
            self._live.update(self._tasks[task], completed=done, total=total or None)
            return
        now = time.monotonic()
        first = self._first.setdefault(task, (now, done))
        finished = total and done >= total
        if finished or now - self._last_line.get(task, -1e9) >= self._interval:
            self._last_line[task] = now
            counts = f"{done}/{total}" if total else str(done)
            print(f"[progress] {task}: {counts}{_eta(first, now, done, total)}", file=sys.stderr, flush=True)


def _eta(first: tuple[float, int], now: float, done: int, total: int) -> str:
    """An estimate of the time left at the rate seen so far (nothing until there is a rate)."""
    began, done_then = first
    if not total or done >= total or done <= done_then or now <= began:
        return ""
    left = (total - done) * (now - began) / (done - done_then)
    return f" (ETA {int(left) // 60}:{int(left) % 60:02d})"
