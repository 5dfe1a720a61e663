"""Benchmark: the exhaustive checker sharded on a multi-node Ray cluster, and the cost per shard
that projects the largest arities onto a bigger cluster.

A multi-node Ray cluster is started on this machine (``ray.cluster_utils.Cluster``: one head and
``--nodes - 1`` more nodes, each a separate raylet with ``--cpus-per-node`` CPUs), and

1. **measured end to end**: ``modelcheck.run`` with ``engine="ray"`` on that cluster at
   ``--max-arity`` (default 6), every check, canary and coverage count included; every row
   must hold, and the shards must have run on more than one worker process;
2. **measured per shard**: ``--sample`` of the N = ``--shard-arity`` C3 shards of ``--universe``
   (default N = 8 of ``specials``; N = 9 needs ``--universe specials9``, the one universe of 9
   fragments), drawn with ``--seed`` with at least one shard of each class (shards of one
   orderings count cost alike), plus that arity's BagMerge shard and, at the universe's top
   arity, its whole-universe shard — all as Ray tasks through the same ``perform_remote`` every
   engine ends in; no ALWAYS check may find a violation.  Their CPU gives

3. **projections** (labelled as such): the CPU of the whole plan of ``check --max-arity N
   --universe U`` — the arity's C3 shards class by class at their measured CPU per shard, its
   bag and universe shards as measured, its lower arities at the measured rates — and its wall
   on ``--project-cores`` cores (the larger of CPU / cores and the largest task); at N = 8 also
   every default universe's plan to N = 8.

Run:
    python benchmarks/bench_ray_scale.py [--nodes 2] [--cpus-per-node 1] [--max-arity 6] \
        [--shard-arity 9 --universe specials9] [--sample 20] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from modelcheck.shards import BackendRecipe  # noqa: E402

# realstate's backend, built in each worker as `canonmerge check` builds it
RECIPE = BackendRecipe("realstate.evidence.checker_backend:make_worker_backend", (None,), name="realstate")


def pin_loopback() -> None:
    """Keep every Ray address on loopback.  Ray rewrites a loopback address the driver connects
    to into the machine's routable one (``resolve_ip_for_localhost``), which a sandboxed machine
    may not reach from itself; the cluster here is on one machine, so loopback is the address."""
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host


def start_cluster(nodes: int, cpus: int):
    """A head and ``nodes - 1`` more raylets on this machine, loopback only, no dashboard."""
    from ray.cluster_utils import Cluster

    pin_loopback()
    args = dict(num_cpus=cpus, include_dashboard=False, node_ip_address="127.0.0.1")
    cluster = Cluster(initialize_head=True, head_node_args=args)
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=cpus, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    return cluster


def end_to_end(max_arity: int) -> dict:
    """``check --max-arity N --engine ray`` on the running cluster (the driver is connected)."""
    import modelcheck
    started = time.perf_counter()
    report = modelcheck.run(None, max_arity=max_arity, engine="ray", workers=0, recipe=RECIPE)
    seconds = time.perf_counter() - started
    failed = [r.check for r in report.results if r.outcome.name != "HOLDS"]
    workers = sorted({c["worker"] for c in report.data["shard_costs"]})
    return {"max_arity": max_arity, "holds": not failed, "failed": failed, "seconds": round(seconds, 1),
            "cpu_seconds": report.data["cpu_seconds"], "shards": report.data["shards"],
            "orderings": report.data["orderings_checked"], "worker_processes": len(workers),
            "canary_share_of_cpu": report.data["canary"]["share_of_cpu"]}


def draw(shards: list, sample: int, seed: int) -> list:
    """``sample`` of an arity's C3 shards drawn with ``seed``, at least one of each class (shards
    of one orderings count have one composition of permutations, trees and re-deliveries, so one
    cost): at N = 9, R = 1, 3,024 shards of 176,400 orderings and 3,024 of 720."""
    rng = random.Random(seed)
    classes: dict[int, list] = {}
    for s in shards:
        classes.setdefault(s.orderings, []).append(s)
    chosen = [rng.choice(members) for _, members in sorted(classes.items())]
    rest = [s for s in shards if s not in chosen]
    return chosen + rng.sample(rest, max(0, min(sample, len(shards)) - len(chosen)))


def per_shard(universe: str, n: int, sample: int, seed: int) -> dict:
    """A seeded sample of one arity's C3 shards, and the arity's bag shard and (at the universe's
    top arity) its universe shard, each a Ray task through ``perform_remote``."""
    from modelcheck import properties as P
    from modelcheck.executors import make_executor
    from modelcheck.shards import Settings, ShardTask, plan

    settings = Settings(n, 1, "arrival", tuple(c.name for c in P.ALL), "realstate", None)
    whole = plan([universe], settings)
    shards = [s for s in whole if s.kind == "c3" and s.n == n]
    others = [s for s in whole if s.kind != "c3" and s.n == n]
    chosen = draw(shards, sample, seed)
    executor = make_executor("ray", 0, None, RECIPE)
    results = []
    started = time.perf_counter()
    executor.run([ShardTask(settings, s) for s in chosen + others], lambda task, result: results.append(result))
    seconds = time.perf_counter() - started
    c3 = [r for r in results if r.shard.kind == "c3"]
    # C3 finds no violation on the real render; the bag check finds BagMerge's order dependence,
    # which is its expectation (SOMETIMES), so only the ALWAYS checks count as violations here
    found = sum(t.found for r in results for t in r.tallies.values() if t.check.expect.name == "ALWAYS")
    checked = sum(r.shard.orderings for r in c3)
    cpu = sum(r.cpu_seconds for r in c3)
    classes: dict[int, dict] = {}
    for s in shards:
        classes.setdefault(s.orderings, {"orderings": s.orderings, "shards_in_plan": 0, "sampled": 0,
                                         "cpu_seconds": 0.0})
        classes[s.orderings]["shards_in_plan"] += 1
    for r in c3:
        classes[r.shard.orderings]["sampled"] += 1
        classes[r.shard.orderings]["cpu_seconds"] += r.cpu_seconds
    for c in classes.values():
        c["cpu_per_shard"] = round(c["cpu_seconds"] / c["sampled"], 4)
        c["us_per_ordering"] = round(1e6 * c["cpu_seconds"] / (c["sampled"] * c["orderings"]), 2)
        c["cpu_seconds"] = round(c["cpu_seconds"], 2)
    return {"universe": universe, "n": n, "shards_in_plan": len(shards), "sampled": len(c3),
            "violations": found, "orderings": checked, "cpu_seconds": round(cpu, 2), "seconds": round(seconds, 1),
            "us_per_ordering": round(1e6 * cpu / checked, 2),
            "classes": sorted(classes.values(), key=lambda c: -c["orderings"]),
            "largest_shard_orderings": max(s.orderings for s in shards),
            "whole_shards": {f"{r.shard.kind} N={r.shard.n}": round(r.cpu_seconds, 2)
                             for r in results if r.shard.kind != "c3"},
            "worker_processes": len({r.worker for r in results})}


def project(cost: dict, cores: int) -> dict:
    """CPU and wall on ``cores`` of the whole plan of ``check --max-arity N --universe U`` for the
    measured arity N and universe U: its N C3 shards class by class at their measured CPU per
    shard, its bag and universe shards at their measured CPU, and its lower arities' C3 orderings
    and BagMerge orders at the measured N rates (an upper bound: fewer fragments render faster).
    The wall is the larger of CPU / cores and the largest single task.  At N = 8 also the plan of
    every default universe to N = 8 (``check --max-arity 8``) at the measured rate."""
    from modelcheck.shards import PREFIX_LENGTH, c3_orderings, prefixes
    from modelcheck.universes import select, universe

    n, per = cost["n"], cost["us_per_ordering"] / 1e6
    top = len(universe(cost["universe"]).fragments)
    c3_top = sum(c["shards_in_plan"] * c["cpu_per_shard"] for c in cost["classes"])
    lower = sum(c3_orderings(k, 1, p) for k in range(1, n) for p in prefixes(k, PREFIX_LENGTH[k], 1))
    bag = cost["whole_shards"].get(f"bag N={n}", 0.0)
    bag_lower = sum(math.factorial(k) for k in range(2, n)) * bag / math.factorial(n)
    whole = cost["whole_shards"].get(f"universe N={n}", 0.0) if n == top else 0.0
    cpu = c3_top + lower * per + bag + bag_lower + whole
    largest = max([bag, whole, *(c["cpu_per_shard"] for c in cost["classes"])])
    out = {"cores": cores, "plan": f"check --max-arity {n} --universe {cost['universe']}",
           f"n{n}_c3_orderings": sum(c["shards_in_plan"] * c["orderings"] for c in cost["classes"]),
           f"n{n}_c3_cpu_seconds": round(c3_top), "lower_arities_orderings": lower,
           "lower_arities_cpu_seconds": round(lower * per + bag_lower),
           "bag_and_universe_cpu_seconds": round(bag + whole),
           "cpu_seconds": round(cpu), "largest_task_cpu_seconds": round(largest, 1),
           "wall_seconds": round(max(cpu / cores, largest))}
    if n == 8:
        total8 = sum(c3_orderings(k, 1, p) for u in select(None) for k in range(1, min(8, len(u.fragments)) + 1)
                     for p in prefixes(k, PREFIX_LENGTH[k], 1))
        out |= {"n8_orderings_all_universes": total8, "n8_cpu_seconds": round(total8 * per),
                "n8_wall_seconds": round(max(total8 * per / cores, cost["largest_shard_orderings"] * per))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--cpus-per-node", type=int, default=1)
    parser.add_argument("--max-arity", type=int, default=6)
    parser.add_argument("--shard-arity", type=int, default=8)
    parser.add_argument("--universe", default="specials")
    parser.add_argument("--sample", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--project-cores", type=int, default=64)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.nodes < 2 or args.cpus_per_node < 1 or args.sample < 1:
        parser.error("--nodes must be at least 2, --cpus-per-node and --sample at least 1")
    from modelcheck.shards import PREFIX_LENGTH
    from modelcheck.universes import universe
    from spec import InputError

    try:
        fragments = len(universe(args.universe).fragments)
    except InputError as exc:
        parser.error(f"--universe: {exc}")
    if args.shard_arity not in PREFIX_LENGTH or args.shard_arity > fragments:
        parser.error(f"--shard-arity {args.shard_arity}: universe {args.universe} has {fragments} fragments "
                     f"and check splits N = 1..{max(PREFIX_LENGTH)}")
    report = None
    if args.json:  # opened before the run, so a path that cannot be written costs nothing
        try:
            report = args.json.open("w", encoding="utf-8")
        except OSError as exc:
            parser.error(f"--json {ascii(str(args.json))}: {exc.strerror or exc}")
    import ray
    import torch

    torch.set_num_threads(1)
    cluster = start_cluster(args.nodes, args.cpus_per_node)
    try:
        ray.init(address=cluster.address, log_to_driver=False, _node_ip_address="127.0.0.1")
        nodes = [n for n in ray.nodes() if n["Alive"]]
        out = {"machine": f"{socket.gethostname()}, nproc {os.cpu_count()}", "load": os.getloadavg(),
               "ray": ray.__version__, "ray_nodes": len(nodes),
               "cpus": int(ray.cluster_resources().get("CPU", 0)),
               "end_to_end": end_to_end(args.max_arity),
               "per_shard": per_shard(args.universe, args.shard_arity, args.sample, args.seed)}
        out["projection"] = project(out["per_shard"], args.project_cores)
    finally:
        ray.shutdown()
        cluster.shutdown()
    out["load_after"] = os.getloadavg()
    ok = (out["ray_nodes"] == args.nodes and out["end_to_end"]["holds"] and out["per_shard"]["violations"] == 0
          and out["end_to_end"]["worker_processes"] > 1)
    text = json.dumps(out, indent=2)
    print(text)
    if report is not None:
        with report:
            report.write(text + "\n")
    if not ok:
        raise SystemExit("the Ray run did not hold on every node (see the JSON)")
    p = out["projection"]
    print(f"{p['plan']} on {args.project_cores} cores (projected from the measured shards): {p['cpu_seconds']:,} "
          f"CPU-s, {p['wall_seconds']:,} s", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
