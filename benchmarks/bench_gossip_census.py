"""Benchmark: the size of a gossip configuration the explorer cannot search, and what searching it
would cost.

1. **Census** (``modelcheck.gossip_census``) of the target configuration (default 4 replicas x 4
   fragments, in-flight <= 3, drops folded, symmetry on): its exact count of reachable orbits,
   the moves between them, the depth and the states first reached at each depth; the census's
   own wall time and peak memory.
2. **The explorer measured** (``benchmarks/bench_gossip.py``'s measurement, in a fresh process, one
   torch thread, realstate's backend, every control) on a smaller configuration it finishes
   (``--measure``, default 4 x 4, in-flight <= 1, folded); its states must equal that
   configuration's census, and its CPU seconds per state are the cost the projection uses.
3. **Projection** (labelled as such, not measured): the target's states times that cost, in CPU
   hours, and its wall time on ``--cores`` cores *if* the search were split evenly between them.
   The explorer is one process: no split of it is built.  A state of the target holds more
   messages than one of the measured configuration (its key tries more relabellings), so the
   cost per state is, if anything, low.

Run:
    python benchmarks/bench_gossip_census.py [--replicas 4 --fragments 4 --in-flight 3] \
        [--measure 4,4,1] [--cores 2 --cores 64] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

from bench_check import HERE, run_child  # this folder is on sys.path when run as a script

sys.path.insert(0, str(HERE))


def census_figures(replicas: int, fragments: int, in_flight: int, fold_drops: bool) -> dict:
    from modelcheck.gossip_census import census

    started = time.perf_counter()
    c = census(replicas, fragments, in_flight, fold_drops=fold_drops,
               progress=lambda label, done, total: print(f"[census] {label}: {done:,}", file=sys.stderr, flush=True))
    return {"replicas": replicas, "fragments": fragments, "in_flight": in_flight, "fold_drops": fold_drops,
            "symmetry": True, "states": c.states, "transitions": c.transitions, "depth": c.depth,
            "levels": list(c.levels), "seconds": round(time.perf_counter() - started, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def explorer_cost(replicas: int, fragments: int, in_flight: int, fold_drops: bool) -> dict:
    argv = ["--replicas", str(replicas), "--fragments", str(fragments), "--in-flight", str(in_flight)]
    return run_child(HERE / "benchmarks" / "bench_gossip.py", HERE, argv + (["--fold-drops"] if fold_drops else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--fragments", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=3)
    parser.add_argument("--no-fold", action="store_true", help="count the full model (drops and re-sends as moves)")
    parser.add_argument("--measure", default="4,4,1", help="R,F,I: the configuration the explorer is timed on")
    parser.add_argument("--cores", type=int, action="append", help="project the wall time on this many cores")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    fold = not args.no_fold
    try:
        small = tuple(int(x) for x in args.measure.split(","))
        if len(small) != 3:
            raise ValueError
    except ValueError:
        parser.error(f"--measure {args.measure!r}: must be R,F,I (three integers)")
    measured_census = census_figures(*small, fold)
    explorer = explorer_cost(*small, fold)
    target = census_figures(args.replicas, args.fragments, args.in_flight, fold)  # last: the process's peak is its own
    out = figures(target, measured_census, explorer, args.measure, args.cores or [2, 64])
    text = json.dumps(out, indent=2)
    if args.json is not None:
        args.json.write_text(text)
    print(text)


def figures(target: dict, measured_census: dict, explorer: dict, measure: str, cores: list[int]) -> dict:
    """The report; refused when the explorer and the census disagree on the measured configuration
    (then the cost per state is not that of the states the census counts)."""
    if explorer["states"] != measured_census["states"]:
        raise SystemExit(f"the explorer reached {explorer['states']:,} states on {measure}, "
                         f"the census counts {measured_census['states']:,}: not comparable")
    per_state = explorer["cpu_seconds"] / explorer["states"]
    cpu = target["states"] * per_state
    return {"target": target, "measured": {"configuration": measure, "census": measured_census,
                                           "explorer": explorer, "cpu_us_per_state": round(per_state * 1e6, 1)},
            "projection": {"cpu_hours": round(cpu / 3600, 2),
                           "wall_minutes_if_split_evenly": {str(c): round(cpu / c / 60, 1) for c in cores},
                           "note": "projected, not measured: the explorer is one process"},
            "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


if __name__ == "__main__":
    main()
