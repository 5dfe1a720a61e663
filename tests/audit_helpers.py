"""What the tests that run the product on scratch copies share: the rows a JSON report says do
not hold, and the processes still running in a copy's directory."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def failing_rows(stdout: str) -> set[tuple[str, str]]:
    """(claim, check) of every row of a ``canonmerge ... --json`` report that does not hold."""
    report = json.loads(stdout)
    return {(r["claim"], r["check"]) for part in report["parts"] for r in part["results"]
            if r["outcome"] != "holds"}


def running_in(directory: Path) -> list[int]:
    """Live processes whose working directory is ``directory`` or below it (a run and all it
    started)."""
    directory = directory.resolve()
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).is_relative_to(directory):
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def none_left_in(directory: Path, grace_s: float = 10.0) -> bool:
    """Whether every process in ``directory`` is gone within ``grace_s`` (a SIGKILL is not instant)."""
    deadline = time.monotonic() + grace_s
    while running_in(directory):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
