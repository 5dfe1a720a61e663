"""Benchmark: the exact order value m at a model's middle-layer key shape (default qwen3-1.7b:
8 KV heads x 2000 tokens x 128 dims), against the previous exact path (``math.fsum`` per key
vector, then ``math.fsum`` of the norms) and a float32 torch reduction (not exact: the speed
floor).  Keys are seeded normal values x 3 in each storage dtype; every run first checks that
the two exact paths give the same bits.

Each pair of measures is timed in alternation (the same machine load for both); ratios are
medians of the per-pair ratios.  Run:
    python benchmarks/bench_order_value.py [--geometry qwen3-1.7b] [--tokens 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_realstate import paired  # noqa: E402

from realstate.kernel.order_value import exact_order_value, fsum_order_value  # noqa: E402
from realstate.models.geometry import GEOMETRIES  # noqa: E402


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--geometry", default="qwen3-1.7b", choices=sorted(GEOMETRIES))
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    g = GEOMETRIES[args.geometry]
    rows = []
    for name in args.dtypes.split(","):
        keys = (torch.randn(g.kv_heads, args.tokens, g.head_dim, generator=torch.Generator().manual_seed(0))
                * 3).to(getattr(torch, name))
        exact, old = exact_order_value(keys), fsum_order_value(keys)
        if bits(exact) != bits(old):
            raise SystemExit(f"{name}: the exact paths disagree ({exact.hex()} vs {old.hex()})")
        vs_fsum = paired(lambda: exact_order_value(keys), lambda: fsum_order_value(keys), args.repeats)
        vs_f32 = paired(lambda: exact_order_value(keys),
                        lambda: float(torch.linalg.vector_norm(keys.float(), dim=-1).mean()), args.repeats)
        rows.append({"dtype": name, "m": exact.hex(), "exact_s": vs_fsum["s"], "fsum_s": vs_fsum["floor_s"],
                     "fsum_over_exact": 1.0 / vs_fsum["ratio"], "float32_s": vs_f32["floor_s"],
                     "exact_over_float32": vs_f32["ratio"]})
    print(json.dumps({"geometry": args.geometry, "shape": [g.kv_heads, args.tokens, g.head_dim],
                      "torch_threads": torch.get_num_threads(), "repeats": args.repeats, "results": rows},
                     indent=2))


if __name__ == "__main__":
    main()
