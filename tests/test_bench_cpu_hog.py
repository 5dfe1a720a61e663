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


def test_the_hog_burns_cpu_only_while_running_and_is_gone_after():
    with CpuHog(processes=1, settle_s=0.0) as hog:
        (child,) = hog.children
        time.sleep(0.3)  # started, then stopped at once: a few ticks of start-up at most
        stopped = cpu_ticks(child.pid)
        time.sleep(0.5)
        assert cpu_ticks(child.pid) == stopped
        with hog.running():
            time.sleep(0.5)
        burned = cpu_ticks(child.pid) - stopped
        assert burned >= 5, burned  # 50 ms of CPU in 0.5 s even on a crowded machine
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
