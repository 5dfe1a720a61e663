"""Benchmark: the gossip explorer (claim C7) in states per second and bytes held per state, on
realstate's backend, one process, one torch thread, symmetry reduction on (as ``canonmerge
check`` runs it).  Default configuration: 3 replicas x 3 fragments, in-flight <= 2 (the default
``check``); ``--replicas/--fragments/--in-flight`` pick another.

Each run is a fresh subprocess, so its peak resident memory (``ru_maxrss``) is its own; the
memory per state is (peak - the same process's resident memory just before exploring) / states.
``--baseline DIR`` runs the same configuration on another copy of the code, alternating with
this tree round by round so both see the same load; the ratios are medians of per-round ratios.
The two copies must reach the same number of states and transitions.  Run:
    python benchmarks/bench_gossip.py [--replicas 4 --fragments 4 --in-flight 1] [--rounds 3]
    python benchmarks/bench_gossip.py --baseline /tmp/before --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from pathlib import Path

from bench_check import HERE, run_child  # this folder is on sys.path when run as a script


def _rss_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(replicas: int, fragments: int, in_flight: int, universe: str) -> dict:
    """One exhaustive exploration in this process."""
    import torch

    torch.set_num_threads(1)
    import modelcheck
    from modelcheck.gossip import GossipConfig, explore
    from modelcheck.universes import universe as universe_named
    from realstate.evidence.checker_backend import make_backend

    config = GossipConfig(replicas=replicas, fragments=fragments, in_flight=in_flight,
                          max_states=50_000_000, symmetry=True)
    u, backend = universe_named(universe), make_backend()
    before = _rss_bytes()
    started, cpu = time.perf_counter(), time.process_time()
    result = explore(backend, u, config)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if result.violation is not None or not result.exhaustive:
        raise SystemExit(f"the exploration did not hold or was cut short: {result.kind or 'not exhaustive'}")
    return {"states": result.states, "transitions": result.transitions, "renders": result.renders,
            "seconds": round(seconds, 3), "states_per_s": round(result.states / seconds, 1),
            "cpu_seconds": round(cpu, 3), "peak_rss_mb": round(peak / 2**20, 1),
            "bytes_per_state": round((peak - before) / result.states),
            "code": str(Path(modelcheck.__file__).parent.parent)}


def child(root: Path, args: argparse.Namespace) -> dict:
    argv = ["--replicas", str(args.replicas), "--fragments", str(args.fragments), "--in-flight", str(args.in_flight),
            "--universe", args.universe]
    return run_child(Path(__file__).resolve(), root, argv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--fragments", type=int, default=3)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--universe", default="ties")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="another copy of the code to compare with")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.replicas, args.fragments, args.in_flight, args.universe)))
        return
    rounds = []
    for _ in range(args.rounds):
        row = {"this": child(HERE, args)}
        if args.baseline is not None:
            row["baseline"] = base = child(args.baseline.resolve(), args)
            if (base["states"], base["transitions"]) != (row["this"]["states"], row["this"]["transitions"]):
                raise SystemExit("the two copies explored different state spaces: not comparable")
            row["speedup"] = round(row["this"]["states_per_s"] / base["states_per_s"], 2)
            row["memory_ratio"] = round(base["bytes_per_state"] / row["this"]["bytes_per_state"], 2)
        rounds.append(row)
    this = [r["this"] for r in rounds]
    summary = {"replicas": args.replicas, "fragments": args.fragments, "in_flight": args.in_flight,
               "universe": args.universe, "states": this[0]["states"], "rounds": rounds,
               "states_per_s_median": statistics.median(t["states_per_s"] for t in this),
               "bytes_per_state_median": statistics.median(t["bytes_per_state"] for t in this)}
    if args.baseline is not None:
        summary["baseline"] = str(args.baseline)
        summary["speedup_median"] = statistics.median(r["speedup"] for r in rounds)
        summary["memory_ratio_median"] = statistics.median(r["memory_ratio"] for r in rounds)
    summary["load_average"] = os.getloadavg()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
