"""Benchmark: the gossip explorer (claim C7) in states per second and bytes held per state, on
realstate's backend, one process, one torch thread, symmetry reduction on (as ``canonmerge
check`` runs it).  Default configuration: 3 replicas x 3 fragments, in-flight <= 2 (the default
``check``); ``--replicas/--fragments/--in-flight`` pick another.

Each run is a fresh subprocess, so its peak resident memory (``ru_maxrss``) is its own; the
memory per state is (peak - the same process's resident memory just before exploring) / states.
``--baseline DIR`` runs the same configuration on another copy of the code, alternating with
this tree round by round so both see the same load; the ratios are medians of per-round ratios.
The two copies must reach the same number of states and transitions, except with ``--fold-drops``
(this tree folds drops, the baseline explores the full model: the before/after of the folding).
``--max-states`` bounds a run that would not finish (its figure then says "exhaustive": false).
Every run includes the explorer's controls (canary, reduction cross-check): their share is printed.
Run:
    python benchmarks/bench_gossip.py [--replicas 4 --fragments 4 --in-flight 1] [--rounds 3]
    python benchmarks/bench_gossip.py --baseline /tmp/before --rounds 3
    python benchmarks/bench_gossip.py --replicas 4 --fragments 4 --in-flight 2 --fold-drops --same-model \
        --search-only --max-states 400000 --baseline /tmp/before
    python benchmarks/bench_gossip.py --replicas 4 --fragments 4 --in-flight 2 --fold-drops --baseline /tmp/before
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


def measure(replicas: int, fragments: int, in_flight: int, universe: str, fold_drops: bool = False,
            max_states: int = 50_000_000, search_only: bool = False) -> dict:
    """One exhaustive exploration in this process (with ``search_only``, the search alone,
    ``gossip_search.search``, without the explorer's controls: its CPU and memory per state)."""
    import torch

    torch.set_num_threads(1)
    import modelcheck
    from modelcheck.gossip import GossipConfig, explore
    from modelcheck.universes import universe as universe_named
    from realstate.evidence.checker_backend import make_backend

    folding = {"fold_drops": True} if fold_drops else {}  # (a baseline copy may predate the option)
    config = GossipConfig(replicas=replicas, fragments=fragments, in_flight=in_flight,
                          max_states=max_states, symmetry=True, **folding)
    u, backend = universe_named(universe), make_backend()
    if search_only:
        from modelcheck.gossip_search import search as explore  # type: ignore[assignment]
    before = _rss_bytes()
    started, cpu = time.perf_counter(), time.process_time()
    result = explore(backend, u, config)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    blind = getattr(result, "blind", [])
    if result.violation is not None or blind:
        raise SystemExit(f"the exploration did not hold: {result.kind or blind}")
    controls = result.details.get("controls_seconds", 0.0)
    return {"states": result.states, "transitions": result.transitions, "renders": result.renders,
            "exhaustive": result.exhaustive, "fold_drops": fold_drops, "folded_moves": getattr(result, "folded_moves", 0),
            "merges": getattr(result, "merges", None), "seconds": round(seconds, 3), "search_seconds": round(result.seconds, 3),
            "controls_seconds": controls, "controls_share": round(controls / seconds, 4),
            "states_per_s": round(result.states / seconds, 1),
            "cpu_seconds": round(cpu, 3), "cpu_us_per_state": round(cpu / result.states * 1e6, 1),
            "search_only": search_only, "peak_rss_mb": round(peak / 2**20, 1),
            "bytes_per_state": round((peak - before) / result.states),
            # the visited table's own bytes (slots and rows) and the widest level, where the search has them
            "visited_bytes_per_state": (round(result.details["visited_bytes"] / result.states, 1)
                                        if "visited_bytes" in result.details else None),
            "widest_level": result.details.get("widest_level"),
            "code": str(Path(modelcheck.__file__).parent.parent)}


def child(root: Path, args: argparse.Namespace, fold_drops: bool) -> dict:
    argv = ["--replicas", str(args.replicas), "--fragments", str(args.fragments), "--in-flight", str(args.in_flight),
            "--universe", args.universe, "--max-states", str(args.max_states)] + (["--fold-drops"] if fold_drops else [])
    argv += ["--search-only"] if args.search_only else []
    return run_child(Path(__file__).resolve(), root, argv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--fragments", type=int, default=3)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--universe", default="ties")
    parser.add_argument("--fold-drops", action="store_true", help="explore with drop folding (check --fold-drops)")
    parser.add_argument("--max-states", type=int, default=50_000_000,
                        help="stop after this many states (the figure is then not exhaustive)")
    parser.add_argument("--search-only", action="store_true",
                        help="time the search alone (no controls): CPU microseconds and bytes per state")
    parser.add_argument("--same-model", action="store_true",
                        help="with --fold-drops and --baseline: the baseline folds drops too (the same state space)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="another copy of the code to compare with")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.replicas, args.fragments, args.in_flight, args.universe, args.fold_drops,
                                 args.max_states, args.search_only)))
        return
    rounds = []
    for _ in range(args.rounds):
        row = {"this": child(HERE, args, args.fold_drops)}
        if args.baseline is not None:
            row["baseline"] = base = child(args.baseline.resolve(), args, args.fold_drops and args.same_model)
            if (args.same_model or not args.fold_drops) and (base["states"], base["transitions"]) != (row["this"]["states"],
                                                                               row["this"]["transitions"]):
                raise SystemExit("the two copies explored different state spaces: not comparable")
            row["speedup"] = round(row["this"]["states_per_s"] / base["states_per_s"], 2)
            row["memory_ratio"] = round(base["bytes_per_state"] / row["this"]["bytes_per_state"], 2)
            row["time_ratio"] = round(base["seconds"] / row["this"]["seconds"], 2)
            row["cpu_ratio"] = round(base["cpu_us_per_state"] / row["this"]["cpu_us_per_state"], 2)
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
        summary["time_ratio_median"] = statistics.median(r["time_ratio"] for r in rounds)
        summary["cpu_ratio_median"] = statistics.median(r["cpu_ratio"] for r in rounds)
    summary["load_average"] = os.getloadavg()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
