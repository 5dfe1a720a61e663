"""Benchmark: the exhaustive checker sharded on a multi-node Ray cluster, and the cost per shard
that projects the largest arities onto a bigger cluster.

A multi-node Ray cluster is started on this machine (``ray.cluster_utils.Cluster``: one head and
``--nodes - 1`` more nodes, each a separate raylet with ``--cpus-per-node`` CPUs), and

1. **measured end to end**: ``modelcheck.run`` with ``engine="ray"`` on that cluster at
   ``--max-arity`` (default 6), every check, canary and coverage count included; every row
   must hold, and the shards must have run on more than one worker process;
2. **measured per shard**: ``--sample`` of the N = ``--shard-arity`` (default 8) shards of
   ``--universe`` (default ``specials``, the one universe with 8 fragments), drawn with
   ``--seed``, run as Ray tasks through the same ``perform_remote`` every engine ends in; each
   must find no violation.  Their CPU seconds per C3 ordering give

3. **projections** (labelled as such): the CPU of the whole N <= 8 plan (every universe) from
   its closed-form orderings, and its wall time on ``--project-cores`` cores (the larger of
   CPU / cores and the largest shard); and the same for N = 9 per 9-fragment universe, with the
   cost per ordering scaled by 9/8 (a render's cost grows with the fragments it holds).  No
   universe has 9 fragments today, so N = 9 itself is not run.

Run:
    python benchmarks/bench_ray_scale.py [--nodes 2] [--cpus-per-node 1] [--max-arity 6] \
        [--sample 6] [--json OUT]
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


def per_shard(universe: str, n: int, sample: int, seed: int) -> dict:
    """A seeded sample of one arity's C3 shards, each a Ray task through ``perform_remote``."""
    from modelcheck import properties as P
    from modelcheck.executors import make_executor
    from modelcheck.shards import Settings, ShardTask, plan

    settings = Settings(n, 1, "arrival", tuple(c.name for c in P.ALL), "realstate", None)
    shards = [s for s in plan([universe], settings) if s.kind == "c3" and s.n == n]
    chosen = random.Random(seed).sample(shards, min(sample, len(shards)))
    executor = make_executor("ray", 0, None, RECIPE)
    results = []
    started = time.perf_counter()
    executor.run([ShardTask(settings, s) for s in chosen], lambda task, result: results.append(result))
    seconds = time.perf_counter() - started
    found = sum(t.found for r in results for t in r.tallies.values())
    checked = sum(r.shard.orderings for r in results)
    cpu = sum(r.cpu_seconds for r in results)
    return {"universe": universe, "n": n, "shards_in_plan": len(shards), "sampled": len(results),
            "violations": found, "orderings": checked, "cpu_seconds": round(cpu, 2), "seconds": round(seconds, 1),
            "us_per_ordering": round(1e6 * cpu / checked, 2),
            "largest_shard_orderings": max(s.orderings for s in shards),
            "worker_processes": len({r.worker for r in results})}


def project(cost: dict, cores: int) -> dict:
    """CPU and wall of N <= 8 (every universe's plan) and of N = 9 per 9-fragment universe."""
    from modelcheck import schedules as en
    from modelcheck.shards import PREFIX_LENGTH, c3_orderings, prefixes
    from modelcheck.universes import select

    per = cost["us_per_ordering"] / 1e6
    total8 = sum(c3_orderings(n, 1, p) for u in select(None) for n in range(1, min(8, len(u.fragments)) + 1)
                 for p in prefixes(n, PREFIX_LENGTH[n], 1))
    largest8 = cost["largest_shard_orderings"] * per
    nine = en.permutation_count(9) + en.tree_count(9) + en.redelivery_count(9, 1)
    largest9 = max(c3_orderings(9, 1, p) for p in prefixes(9, 4, 1)) * per * 9 / 8
    cpu9 = nine * per * 9 / 8
    return {"cores": cores, "n8_orderings_all_universes": total8, "n8_cpu_seconds": round(total8 * per),
            "n8_wall_seconds": round(max(total8 * per / cores, largest8)),
            "n9_orderings_per_universe": nine, "n9_cpu_seconds_per_universe": round(cpu9),
            "n9_wall_seconds_per_universe": round(max(cpu9 / cores, largest9)),
            "n9_prefix_length": 4, "n9_cost_scaled_by": "9/8 (assumption)"}


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
    print(f"N<=8 on {args.project_cores} cores (projected): {out['projection']['n8_wall_seconds']:,} s; "
          f"N=9 per universe: {out['projection']['n9_wall_seconds_per_universe']:,} s", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
