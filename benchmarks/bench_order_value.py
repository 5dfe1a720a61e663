"""Benchmark: the exact order value m at a model's middle-layer key shape (default qwen3-1.7b:
8 KV heads x 2000 tokens x 128 dims), against the previous exact path (``math.fsum`` per key
vector, then ``math.fsum`` of the norms) and a float32 torch reduction (not exact: the speed
floor).  Keys are seeded normal values x 3 in each storage dtype; every run first checks that
the two exact paths give the same bits.

Every figure is measured twice in one run, side by side: as the machine is ("quiet"), and with
one busy-looping process per core (``cpu_hog``: "loaded").  The targets checked are that the
loaded exact m stays within 2x of the quiet one and at least 3x faster than the fsum path under
load (for the first dtype, bfloat16 by default).

Quiet and loaded samples of every measure are taken in alternation (``cpu_hog.side_by_side``:
the same background load for both); ratios are medians of the per-repeat ratios.  Run:
    python benchmarks/bench_order_value.py [--geometry qwen3-1.7b] [--tokens 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_hog import CONDITIONS, CpuHog, canary, columns, load_average, ratio, side_by_side  # noqa: E402

from realstate.kernel import threads  # noqa: E402
from realstate.kernel.order_value import exact_order_value, fsum_order_value  # noqa: E402
from realstate.models.geometry import GEOMETRIES  # noqa: E402

# loaded exact m at most this many times the quiet one; exact m at least this many times faster
# than the fsum path under load
LOADED_OVER_QUIET_MAX = 2.0
EXACT_SPEEDUP_UNDER_LOAD_MIN = 3.0


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--geometry", default="qwen3-1.7b", choices=sorted(GEOMETRIES))
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help=threads.DEFAULT_HELP)
    parser.add_argument("--hog", type=int, default=None, help="busy processes for the loaded column "
                                                              "(default: one per core, os.cpu_count())")
    parser.add_argument("--split-all", action="store_true",
                        help="the thread policy off: every operation split between the threads, as torch does "
                             "on its own (for comparison)")
    args = parser.parse_args()
    background = load_average()
    allowance = threads.configure(args.threads)
    if args.split_all:
        threads.ELEMENTS_PER_THREAD = 1
    g = GEOMETRIES[args.geometry]
    rows = []
    with CpuHog(args.hog) as hog:
        for name in args.dtypes.split(","):
            keys = (torch.randn(g.kv_heads, args.tokens, g.head_dim, generator=torch.Generator().manual_seed(0))
                    * 3).to(getattr(torch, name))
            exact, old = exact_order_value(keys), fsum_order_value(keys)
            if bits(exact) != bits(old):
                raise SystemExit(f"{name}: the exact paths disagree ({exact.hex()} vs {old.hex()})")
            samples = side_by_side({
                "canary": canary, "exact": lambda: exact_order_value(keys),
                "fsum": lambda: fsum_order_value(keys),
                "float32": lambda: float(torch.linalg.vector_norm(keys.float(), dim=-1).mean()),
            }, args.repeats, hog)
            rows.append({"dtype": name, "m": exact.hex(), "hog_felt_by_canary": columns(samples, "canary"),
                         "exact": columns(samples, "exact"), "fsum": columns(samples, "fsum"),
                         "float32": columns(samples, "float32"),
                         "fsum_over_exact": {c: ratio(samples, (c, "fsum"), (c, "exact")) for c in CONDITIONS}})
        hogs = hog.count
    first = rows[0]
    targets = {
        f"exact m loaded within {LOADED_OVER_QUIET_MAX:g}x of quiet ({first['dtype']})":
            first["exact"]["loaded_over_quiet"] <= LOADED_OVER_QUIET_MAX,
        f"exact m at least {EXACT_SPEEDUP_UNDER_LOAD_MIN:g}x faster than fsum under load ({first['dtype']})":
            first["fsum_over_exact"]["loaded"] >= EXACT_SPEEDUP_UNDER_LOAD_MIN,
    }
    print(json.dumps({"geometry": args.geometry, "shape": [g.kv_heads, args.tokens, g.head_dim],
                      "threads": allowance, "split_all": args.split_all, "cpu_count": os.cpu_count(),
                      "hog_processes": hogs,
                      "load_average_before": background, "repeats": args.repeats, "results": rows,
                      "targets": targets}, indent=2))


if __name__ == "__main__":
    main()
