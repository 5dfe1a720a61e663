"""Benchmark: the checker's throughput in C3 orderings per second at N = 5 (default), on
realstate's backend, the same universes and the same per-ordering checks (permutations, merge
trees, re-deliveries, each render compared with the independent oracle) — in this process,
one core, no gossip.

``--baseline DIR`` measures the same thing on another copy of the code (e.g. a checkout of the
commit before a change): each round runs this script once on DIR and once on this tree, in
fresh subprocesses, alternating, so both see the same machine load; the ratios reported are the
medians of the per-round ratios, by wall time and by CPU time of the process (the latter is the
steadier figure on a shared machine).  Run:
    python benchmarks/bench_check.py [--max-arity 5] [--universe ties ...] [--rounds 3]
    python benchmarks/bench_check.py --baseline /tmp/before --rounds 3
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def measure(max_arity: int, universes: list[str] | None) -> dict:
    """One in-process run of the per-ordering checks; orderings/s over its wall time."""
    import torch

    torch.set_num_threads(1)
    import modelcheck
    from modelcheck import properties as P
    from realstate.evidence.checker_backend import make_backend

    checks = [P.PERMUTATIONS, P.MERGE_TREES, P.REDELIVERIES, P.ORACLE]
    kwargs = dict(max_arity=max_arity, universes=universes, gossip=False, checks=checks, trace_dir=None)
    if "workers" in inspect.signature(modelcheck.run).parameters:
        kwargs["workers"] = 1                     # in this process (older code always is)
    backend = make_backend()
    started, cpu = time.perf_counter(), time.process_time()
    report = modelcheck.run(backend, **kwargs)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    failed = [r.check for r in report.results if r.outcome.name != "HOLDS"]
    if failed:
        raise SystemExit(f"checks did not hold: {failed}")
    orderings = report.data["orderings_checked"]
    return {"orderings": orderings, "renders": report.data["renders"], "seconds": round(seconds, 3),
            "orderings_per_s": round(orderings / seconds, 1), "cpu_seconds": round(cpu, 3),
            "orderings_per_cpu_s": round(orderings / cpu, 1), "code": str(Path(modelcheck.__file__).parent.parent)}


def run_child(script: Path, root: Path, argv: list[str]) -> dict:
    """``script --child argv`` in a fresh interpreter on the copy of the code at ``root``: the
    JSON it prints (benchmarks/bench_gossip.py alternates its runs the same way)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, str(script), "--child", *argv], env=env, cwd=root,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def child(root: Path, args: argparse.Namespace) -> dict:
    argv = ["--max-arity", str(args.max_arity)]
    for u in args.universe or []:
        argv += ["--universe", u]
    return run_child(Path(__file__).resolve(), root, argv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-arity", type=int, default=5)
    parser.add_argument("--universe", action="append")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="another copy of the code to compare with")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.max_arity, args.universe)))
        return
    rounds = []
    for _ in range(args.rounds):
        row = {"this": child(HERE, args)}
        if args.baseline is not None:
            row["baseline"] = child(args.baseline.resolve(), args)
            if row["baseline"]["orderings"] != row["this"]["orderings"]:
                raise SystemExit("the two copies checked different numbers of orderings: not comparable")
            row["speedup"] = round(row["this"]["orderings_per_s"] / row["baseline"]["orderings_per_s"], 2)
            row["cpu_speedup"] = round(row["this"]["orderings_per_cpu_s"] / row["baseline"]["orderings_per_cpu_s"], 2)
        rounds.append(row)
    summary = {"max_arity": args.max_arity, "universes": args.universe or "all", "rounds": rounds,
               "orderings_per_s_median": statistics.median(r["this"]["orderings_per_s"] for r in rounds)}
    if args.baseline is not None:
        summary["baseline"] = str(args.baseline)
        summary["baseline_orderings_per_s_median"] = statistics.median(
            r["baseline"]["orderings_per_s"] for r in rounds)
        summary["speedup_median"] = statistics.median(r["speedup"] for r in rounds)
        summary["cpu_speedup_median"] = statistics.median(r["cpu_speedup"] for r in rounds)
    summary["load_average"] = os.getloadavg()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
