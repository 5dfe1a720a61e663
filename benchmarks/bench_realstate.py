"""Benchmark: realstate's hot paths against the floor of the same work done plainly.

- render: ``canonical_render`` of N fragments vs. a plain ``torch.cat`` of the same key and value
  tensors (no sort, no re-encoding);
- content id: ``content_id_of`` vs. ``hashlib.sha256`` over the same key and value bytes;
- order key: the exact m (fsum/sqrt) vs. a float32 ``torch.linalg.vector_norm(...).mean()``.

Figures are medians over repeats; ratios are what docs/RESULTS.md reports.  Run:
    python benchmarks/bench_realstate.py [--geometry qwen3-1.7b] [--tokens 64,128,256,512,1024]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections.abc import Callable

import torch

from realstate.fingerprint import Fingerprint
from realstate.fragment import Fragment, content_id_of, tensor_bytes
from realstate.geometry import GEOMETRIES
from realstate.order_value import exact_order_value
from realstate.render import canonical_render


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


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
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    frags = fragments_for(args.geometry, [int(x) for x in args.tokens.split(",")], dtype)
    keys, values = [f.keys for f in frags], [f.values for f in frags]
    total_bytes = sum(k.numel() * k.element_size() * 2 for k in keys)

    render = median_seconds(lambda: canonical_render(frags), args.repeats)
    concat = median_seconds(lambda: (torch.cat(keys, dim=2), torch.cat(values, dim=2)), args.repeats)

    def raw_hash() -> None:
        for f in frags:
            h = hashlib.sha256()
            h.update(tensor_bytes(f.keys))
            h.update(tensor_bytes(f.values))
            h.digest()

    def our_ids() -> None:
        for f in frags:
            content_id_of(f.fingerprint, f.start, f.keys, f.values)

    ids = median_seconds(our_ids, args.repeats)
    raw = median_seconds(raw_hash, args.repeats)
    mids = [f.middle_layer_keys() for f in frags]
    key_exact = median_seconds(lambda: [exact_order_value(m) for m in mids], args.repeats)
    key_f32 = median_seconds(lambda: [float(torch.linalg.vector_norm(m.float(), dim=-1).mean()) for m in mids],
                             args.repeats)
    result = {
        "geometry": args.geometry, "dtype": args.dtype, "tokens": args.tokens, "fragments": len(frags),
        "bytes": total_bytes, "torch_threads": torch.get_num_threads(),
        "render_s": render, "torch_cat_s": concat, "render_over_cat": render / concat,
        "content_id_s": ids, "raw_sha256_s": raw, "content_id_over_sha256": ids / raw,
        "sha256_MB_per_s": total_bytes / raw / 1e6,
        "order_key_exact_s": key_exact, "order_key_float32_s": key_f32,
        "order_key_exact_over_float32": key_exact / key_f32,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
