"""The gossip census benchmark: its projection stands on an explorer run the census agrees with."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from modelcheck.gossip_census import census

ROOT = Path(__file__).parent.parent
spec = importlib.util.spec_from_file_location("bench_gossip_census", ROOT / "benchmarks" / "bench_gossip_census.py")
bench = importlib.util.module_from_spec(spec)
sys.path.insert(0, str(ROOT / "benchmarks"))
spec.loader.exec_module(bench)


def test_the_script_measures_the_explorer_where_the_census_agrees_and_projects():
    out = subprocess.run([sys.executable, "benchmarks/bench_gossip_census.py", "--replicas", "3", "--fragments", "2",
                          "--in-flight", "2", "--measure", "3,2,1", "--cores", "4"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    got = json.loads(out.stdout)
    target, small = census(3, 2, 2).states, census(3, 2, 1).states
    assert got["target"]["states"] == target and got["measured"]["explorer"]["states"] == small
    cost = got["measured"]["explorer"]["cpu_seconds"] / small
    assert got["projection"]["cpu_hours"] == round(target * cost / 3600, 2)
    assert set(got["projection"]["wall_minutes_if_split_evenly"]) == {"4"}


def test_an_explorer_count_the_census_does_not_share_is_refused():
    counted = {"states": 153}
    with pytest.raises(SystemExit, match="not comparable"):
        bench.figures({"states": 1033}, counted, {"states": 154, "cpu_seconds": 1.0}, "3,2,1", [2])
    assert bench.figures({"states": 1033}, counted, {"states": 153, "cpu_seconds": 1.53}, "3,2,1", [2])[
        "measured"]["cpu_us_per_state"] == 10_000.0
