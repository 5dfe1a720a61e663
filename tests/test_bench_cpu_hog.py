"""The benchmarks' loaded column is real and their quiet column is not: the hog's processes
burn CPU exactly while a loaded sample is taken, and are gone after the run."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from cpu_hog import CpuHog, columns, side_by_side  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads CPU time from /proc")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def wait_for(condition, what: str, guard_s: float = 300.0) -> None:
    """Poll an event; the guard is against a hang only, and says so."""
    deadline = time.monotonic() + guard_s
    while not condition():
        assert time.monotonic() < deadline, f"hung: {what} not seen in {guard_s:.0f} s"
        time.sleep(0.02)


def test_the_hog_burns_cpu_only_while_running_and_is_gone_after():
    """Each step waits on what it checks (the child's state, its CPU ticks), never on time: a
    crowded machine makes it slower, not wrong."""
    with CpuHog(processes=1, settle_s=0.0) as hog:
        (child,) = hog.children
        wait_for(lambda: state(child.pid) == "T", "the child stopped")
        stopped = cpu_ticks(child.pid)
        time.sleep(0.3)
        assert cpu_ticks(child.pid) == stopped  # a stopped process burns nothing, however loaded
        with hog.running():
            wait_for(lambda: cpu_ticks(child.pid) - stopped >= 5, "5 ticks of CPU while running")
        wait_for(lambda: state(child.pid) == "T", "the child stopped again")
        burned = cpu_ticks(child.pid) - stopped
        time.sleep(0.3)
        assert cpu_ticks(child.pid) - stopped == burned  # stopped again after the block
    assert child.poll() is not None  # killed and reaped


def test_side_by_side_samples_every_measure_in_both_conditions():
    calls: list[str] = []
    with CpuHog(processes=1, settle_s=0.0) as hog:
        samples = side_by_side({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, hog,
                               min_sample_s=0.0)
    assert {len(v) for c in samples.values() for v in c.values()} == {3}
    row = columns(samples, "a", "b")
    assert set(row) == {"quiet_s", "loaded_s", "loaded_over_quiet", "quiet_over_floor", "loaded_over_floor"}


def test_a_command_run_loaded_keeps_its_exit_status():
    from cpu_hog import run_loaded

    assert run_loaded([sys.executable, "-c", "raise SystemExit(3)"], processes=1) == 3
