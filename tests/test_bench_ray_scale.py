"""The Ray scale benchmark's projection: its counts are the checker's closed forms."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

from modelcheck import schedules as en

spec = importlib.util.spec_from_file_location("bench_ray_scale", Path(__file__).parent.parent / "benchmarks" / "bench_ray_scale.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_projection_counts_are_the_closed_forms():
    cost = {"us_per_ordering": 50.0, "largest_shard_orderings": 55_560}
    p = bench.project(cost, 64)
    assert p["n8_orderings_all_universes"] == 20_762_917          # check --max-arity 8's orderings
    assert p["n9_orderings_per_universe"] == (math.factorial(9) + math.factorial(16) // math.factorial(8)
                                              + en.redelivery_count(9, 1))
    assert p["n8_cpu_seconds"] == round(20_762_917 * 50e-6)
    assert p["n8_wall_seconds"] == round(max(20_762_917 * 50e-6 / 64, 55_560 * 50e-6))


def test_fewer_cores_never_project_faster():
    cost = {"us_per_ordering": 50.0, "largest_shard_orderings": 55_560}
    assert bench.project(cost, 8)["n9_wall_seconds_per_universe"] > bench.project(cost, 64)["n9_wall_seconds_per_universe"]


def test_an_unwritable_json_path_is_refused_before_any_ray_starts(tmp_path):
    """A report path that cannot be written is an input error (exit 2, one line naming it), found
    before the cluster starts rather than as a traceback after the run."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ray_scale.py"
    done = subprocess.run([sys.executable, str(script), "--json", str(tmp_path / "missing" / "out.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--json" in done.stderr.splitlines()[-1] and "No such file" in done.stderr
