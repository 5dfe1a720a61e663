"""The Ray scale benchmark's projection: its counts are the checker's closed forms, its costs the
measured ones, class by class."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

from modelcheck import coverage

spec = importlib.util.spec_from_file_location("bench_ray_scale", Path(__file__).parent.parent / "benchmarks" / "bench_ray_scale.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _cost(n: int, universe: str, per_shard: dict[int, float], bag: float, whole: float) -> dict:
    """A measured cost as ``per_shard`` reports it: each class of the arity's C3 shards with a CPU
    per shard, and the bag and universe shards' CPU."""
    from modelcheck.shards import c3_shards

    planned = c3_shards(n, 1)
    classes = [{"orderings": o, "shards_in_plan": sum(1 for _, k in planned if k == o), "cpu_per_shard": c}
               for o, c in per_shard.items()]
    cpu = sum(c["cpu_per_shard"] for c in classes)
    return {"n": n, "universe": universe, "classes": classes, "us_per_ordering": 1e6 * cpu / sum(per_shard),
            "largest_shard_orderings": max(per_shard), "whole_shards": {f"bag N={n}": bag, f"universe N={n}": whole}}


def test_the_nine_projection_sums_the_plan_class_by_class_from_measured_costs():
    cost = _cost(9, "specials9", {176_400: 12.0, 720: 0.06}, bag=20.0, whole=110.0)
    p = bench.project(cost, 64)
    assert p["plan"] == "check --max-arity 9 --universe specials9"
    assert p["n9_c3_orderings"] == sum(coverage.closed_forms(9, 1).values()) == 535_610_880
    assert p["n9_c3_cpu_seconds"] == round(3024 * 12.0 + 3024 * 0.06)
    lower = sum(sum(coverage.closed_forms(k, 1).values()) for k in range(1, 9))
    assert p["lower_arities_orderings"] == lower
    rate = cost["us_per_ordering"] / 1e6
    bag_lower = sum(math.factorial(k) for k in range(2, 9)) * 20.0 / math.factorial(9)
    assert p["lower_arities_cpu_seconds"] == round(lower * rate + bag_lower)
    assert p["bag_and_universe_cpu_seconds"] == 130
    cpu = 3024 * 12.06 + lower * rate + bag_lower + 130.0
    assert p["cpu_seconds"] == round(cpu)
    assert p["largest_task_cpu_seconds"] == 110.0 and p["wall_seconds"] == round(cpu / 64)
    assert bench.project(cost, 10_000)["wall_seconds"] == 110       # the universe shard bounds it
    assert "n8_orderings_all_universes" not in p


def test_the_eight_projection_keeps_every_universe_to_eight():
    cost = _cost(8, "specials", {55_560: 2.7, 51_600: 2.5, 19_200: 1.0}, bag=2.0, whole=12.0)
    p = bench.project(cost, 64)
    assert p["n8_orderings_all_universes"] == 20_762_917          # check --max-arity 8's orderings
    per = cost["us_per_ordering"] / 1e6
    assert p["n8_cpu_seconds"] == round(20_762_917 * per)
    assert p["n8_wall_seconds"] == round(max(20_762_917 * per / 64, 55_560 * per))


def test_fewer_cores_never_project_faster():
    cost = _cost(9, "specials9", {176_400: 12.0, 720: 0.06}, bag=20.0, whole=110.0)
    assert bench.project(cost, 8)["wall_seconds"] > bench.project(cost, 64)["wall_seconds"]


def test_the_draw_holds_every_class_and_is_fixed_by_its_seed():
    from modelcheck import properties as P
    from modelcheck.shards import Settings, plan

    settings = Settings(9, 1, "arrival", tuple(c.name for c in P.ALL), "realstate", None)
    nine = [s for s in plan(["specials9"], settings) if s.kind == "c3" and s.n == 9]
    drawn = bench.draw(nine, 6, 1)
    assert len(drawn) == 6 == len(set(drawn)) and {s.orderings for s in drawn} == {176_400, 720}
    assert drawn == bench.draw(nine, 6, 1) and drawn != bench.draw(nine, 6, 2)
    assert {s.orderings for s in bench.draw(nine, 1, 1)} == {176_400, 720}   # a class is never left out


def test_an_arity_the_universe_does_not_reach_is_refused_before_any_ray_starts():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ray_scale.py"
    done = subprocess.run([sys.executable, str(script), "--shard-arity", "9", "--universe", "specials"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--shard-arity 9: universe specials has 8 fragments" in done.stderr.splitlines()[-1]


def test_an_unwritable_json_path_is_refused_before_any_ray_starts(tmp_path):
    """A report path that cannot be written is an input error (exit 2, one line naming it), found
    before the cluster starts rather than as a traceback after the run."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ray_scale.py"
    done = subprocess.run([sys.executable, str(script), "--json", str(tmp_path / "missing" / "out.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--json" in done.stderr.splitlines()[-1] and "No such file" in done.stderr
