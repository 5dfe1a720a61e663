"""Benchmark: realstate's hot paths against the floor of the same work done plainly.

- render: ``canonical_render`` of N fragments vs. a plain ``torch.cat`` of the same key and value
  tensors (no sort, no re-encoding), at the chosen geometry; the same render on torch's
  operations only (``engine.unfused``: the path without the compiled kernel) as a second row;
- tiny render: the same at the qwen3-tiny geometry with fragments of 6..18 tokens, where a render
  is all per-call overhead (and on torch's operations only, the path before the compiled one);
- content id: ``content_id_of`` vs. ``hashlib.sha256`` over the same key and value bytes;
- order key: the exact m of each fragment vs. the previous exact path (``math.fsum`` per key
  vector) and a float32 ``torch.linalg.vector_norm(...).mean()`` (not exact; the speed floor).

Every figure is measured twice in one run, side by side: as the machine is ("quiet") and with
one busy-looping process per core ("loaded", ``cpu_hog``).  Within a repeat every measure is
sampled quiet, then every measure loaded, so a measure, its floor and both conditions see the
same background load; a ratio is the median of the per-repeat ratios.  Short calls are repeated
inside a sample.  ``benchmarks/bench_order_value.py`` times m alone at the
qwen3-1.7b middle-layer shape.  Run:
    python benchmarks/bench_realstate.py [--geometry qwen3-1.7b] [--tokens 64,128,256,512,1024]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_hog import CLOCKS, CpuHog, canary, columns, load_average, side_by_side  # noqa: E402

import realstate.kernel.rope as rope  # noqa: E402
from realstate.kernel import threads  # noqa: E402
from realstate.kernel.engine import CANONICAL, unfused  # noqa: E402
from realstate.kernel.fingerprint import Fingerprint  # noqa: E402
from realstate.kernel.fragment import Fragment, content_id_of, tensor_bytes  # noqa: E402
from realstate.kernel.order_value import exact_order_value, fsum_order_value  # noqa: E402
from realstate.kernel.render import canonical_render  # noqa: E402
from realstate.models.geometry import GEOMETRIES  # noqa: E402

TINY_TOKENS = [6, 9, 12, 15, 18]


def fragments_for(geometry: str, tokens: list[int], dtype: torch.dtype) -> list[Fragment]:
    g = GEOMETRIES[geometry]
    inv_freq = tuple(1.0 / (g.rope_theta ** (2 * i / g.head_dim)) for i in range(g.head_dim // 2))
    fp = Fingerprint("Qwen3ForCausalLM", g.layers, g.kv_heads, g.head_dim,
                     {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}[dtype],
                     inv_freq, g.rope_theta, g.max_positions, "synthetic:benchmark")
    gen = torch.Generator().manual_seed(0)

    def tensor(n: int) -> torch.Tensor:
        return torch.randn((g.layers, g.kv_heads, n, g.head_dim), generator=gen).to(dtype)

    return [Fragment(fp, 0, tensor(n), tensor(n)) for n in tokens]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--geometry", default="qwen3-1.7b", choices=sorted(GEOMETRIES))
    parser.add_argument("--tokens", default="64,128,256,512,1024")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help=threads.DEFAULT_HELP)
    parser.add_argument("--hog", type=int, default=None, help="busy processes for the loaded column "
                                                              "(default: one per core, os.cpu_count())")
    parser.add_argument("--split-all", action="store_true",
                        help="the thread policy off: every operation split between the threads, as torch does "
                             "on its own (for comparison)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time (default) or the measuring thread's CPU time (per-call cost without "
                             "other processes' share of the cores)")
    parser.add_argument("--only", default="", help="comma-separated groups to measure (default all): "
                                                   "render, render_torch_path, tiny, content_id, order_key")
    parser.add_argument("--chunk", type=int, default=0,
                        help="log2 of realstate.kernel.rope.CHUNK_ELEMENTS for this run (0 = the library's)")
    args = parser.parse_args()
    background = load_average()
    allowance = threads.configure(args.threads)
    if args.split_all:
        threads.ELEMENTS_PER_THREAD = 1
    if args.chunk:
        rope.CHUNK_ELEMENTS = 1 << args.chunk
    dtype = getattr(torch, args.dtype)
    frags = fragments_for(args.geometry, [int(x) for x in args.tokens.split(",")], dtype)
    tiny = fragments_for("qwen3-tiny", TINY_TOKENS, dtype)
    total_bytes = sum(f.keys.numel() * f.keys.element_size() * 2 for f in frags)
    torch_path = unfused(CANONICAL)

    def raw_hash() -> None:
        for f in frags:
            h = hashlib.sha256()
            h.update(tensor_bytes(f.keys))
            h.update(tensor_bytes(f.values))
            h.digest()

    def our_ids() -> None:
        for f in frags:
            content_id_of(f.fingerprint, f.start, f.keys, f.values)

    def cat(fragments: list[Fragment]) -> Callable[[], object]:
        keys, values = [f.keys for f in fragments], [f.values for f in fragments]
        return lambda: (torch.cat(keys, dim=2), torch.cat(values, dim=2))

    mids = [f.middle_layer_keys() for f in frags]
    # group -> its measures, and its rows: (measure, floor or None)
    groups: dict[str, tuple[dict[str, Callable[[], object]], list[tuple[str, str | None]]]] = {
        "render": ({"render": lambda: canonical_render(frags), "torch_cat": cat(frags)},
                   [("render", "torch_cat"), ("torch_cat", None)]),
        "render_torch_path": ({"render_torch_path": lambda: canonical_render(frags, engine=torch_path),
                               "torch_cat": cat(frags)}, [("render_torch_path", "torch_cat")]),
        "tiny": ({"tiny_render": lambda: canonical_render(tiny), "tiny_torch_cat": cat(tiny),
                  "tiny_render_torch_path": lambda: canonical_render(tiny, engine=torch_path)},
                 [("tiny_render", "tiny_torch_cat"), ("tiny_render_torch_path", "tiny_torch_cat"),
                  ("tiny_torch_cat", None)]),
        "content_id": ({"content_id": our_ids, "raw_sha256": raw_hash},
                       [("content_id", "raw_sha256"), ("raw_sha256", None)]),
        "order_key": ({"order_key_exact": lambda: [exact_order_value(m) for m in mids],
                       "order_key_fsum": lambda: [fsum_order_value(m) for m in mids],
                       "order_key_float32": lambda: [float(torch.linalg.vector_norm(m.float(), dim=-1).mean())
                                                     for m in mids]},
                      [("order_key_exact", "order_key_float32"), ("order_key_fsum", "order_key_exact"),
                       ("order_key_float32", None)]),
    }
    chosen = [g.strip() for g in args.only.split(",")] if args.only else list(groups)
    unknown = sorted(set(chosen) - set(groups))
    if unknown:
        raise SystemExit(f"--only: unknown groups {', '.join(unknown)}; known: {', '.join(groups)}")
    measures: dict[str, Callable[[], object]] = {"canary": canary}
    for name in chosen:
        measures.update(groups[name][0])
    with CpuHog(args.hog) as hog:
        samples = side_by_side(measures, args.repeats, hog, clock=CLOCKS[args.clock])
    result = {
        "geometry": args.geometry, "dtype": args.dtype, "tokens": args.tokens, "fragments": len(frags),
        "bytes": total_bytes, "threads": allowance, "split_all": args.split_all, "cpu_count": os.cpu_count(),
        "hog_processes": hog.count, "load_average_before": background, "repeats": args.repeats,
        "clock": args.clock, "chunk_elements": rope.CHUNK_ELEMENTS,
        "compiled_kernel": rope.fused_kernel(frags[0].keys) is not None, "tiny_tokens": TINY_TOKENS,
        "hog_felt_by_canary": columns(samples, "canary"),
    }
    for name in chosen:
        for measure, floor in groups[name][1]:
            result[measure] = columns(samples, measure, floor)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
