"""Benchmark: realstate's hot paths against the floor of the same work done plainly.

- render: ``canonical_render`` of N fragments vs. a plain ``torch.cat`` of the same key and value
  tensors (no sort, no re-encoding), at the chosen geometry; the same render on torch's
  operations only (``engine.unfused``: the path without the compiled kernel) as a second row;
- tiny render: the same at the qwen3-tiny geometry with fragments of 6..18 tokens, where a render
  is all per-call overhead;
- content id: ``content_id_of`` vs. ``hashlib.sha256`` over the same key and value bytes;
- order key: the exact m of each fragment vs. the previous exact path (``math.fsum`` per key
  vector) and a float32 ``torch.linalg.vector_norm(...).mean()`` (not exact; the speed floor).

Each measure and its floor are timed in alternation (sample of the measure, sample of the floor,
…), so both see the same machine load; a ratio is the median of the per-pair ratios.  Short
calls are repeated inside a sample.  ``benchmarks/bench_order_value.py`` times m alone at the
qwen3-1.7b middle-layer shape.  Run:
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

import realstate.kernel.rope as rope
from realstate.kernel.engine import CANONICAL, Engine, unfused
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, content_id_of, tensor_bytes
from realstate.kernel.order_value import exact_order_value, fsum_order_value
from realstate.kernel.render import canonical_render
from realstate.models.geometry import GEOMETRIES

TINY_TOKENS = [6, 9, 12, 15, 18]


def paired(measure: Callable[[], object], floor: Callable[[], object], repeats: int,
           min_sample_s: float = 0.002) -> dict[str, float]:
    """Median seconds per call of ``measure`` and ``floor`` and the median of their ratios, from
    samples taken in alternation; a call shorter than ``min_sample_s`` is repeated in a sample."""
    measure()
    floor()
    start = time.perf_counter()
    floor()
    inner = max(1, int(min_sample_s / max(time.perf_counter() - start, 1e-9)))

    def sample(fn: Callable[[], object]) -> float:
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t) / inner

    pairs = [(sample(measure), sample(floor)) for _ in range(repeats)]
    return {"s": statistics.median(m for m, _ in pairs), "floor_s": statistics.median(f for _, f in pairs),
            "ratio": statistics.median(m / f for m, f in pairs), "calls_per_sample": inner}


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


def render_case(frags: list[Fragment], repeats: int, engine: Engine = CANONICAL) -> dict[str, float]:
    keys, values = [f.keys for f in frags], [f.values for f in frags]
    return paired(lambda: canonical_render(frags, engine=engine),
                  lambda: (torch.cat(keys, dim=2), torch.cat(values, dim=2)), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--geometry", default="qwen3-1.7b", choices=sorted(GEOMETRIES))
    parser.add_argument("--tokens", default="64,128,256,512,1024")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--tiny-repeats", type=int, default=41, help="pairs for the tiny-fragment render")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    parser.add_argument("--chunk", type=int, default=0,
                        help="log2 of realstate.kernel.rope.CHUNK_ELEMENTS for this run (0 = the library's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.chunk:
        rope.CHUNK_ELEMENTS = 1 << args.chunk
    dtype = getattr(torch, args.dtype)
    frags = fragments_for(args.geometry, [int(x) for x in args.tokens.split(",")], dtype)
    tiny = fragments_for("qwen3-tiny", TINY_TOKENS, dtype)
    total_bytes = sum(f.keys.numel() * f.keys.element_size() * 2 for f in frags)

    def raw_hash() -> None:
        for f in frags:
            h = hashlib.sha256()
            h.update(tensor_bytes(f.keys))
            h.update(tensor_bytes(f.values))
            h.digest()

    def our_ids() -> None:
        for f in frags:
            content_id_of(f.fingerprint, f.start, f.keys, f.values)

    mids = [f.middle_layer_keys() for f in frags]
    render = render_case(frags, args.repeats)
    render_torch = render_case(frags, args.repeats, unfused(CANONICAL))
    tiny_render = render_case(tiny, args.tiny_repeats)
    ids = paired(our_ids, raw_hash, args.repeats)
    f32 = lambda: [float(torch.linalg.vector_norm(m.float(), dim=-1).mean()) for m in mids]  # noqa: E731
    key_vs_f32 = paired(lambda: [exact_order_value(m) for m in mids], f32, args.repeats)
    key_vs_fsum = paired(lambda: [exact_order_value(m) for m in mids], lambda: [fsum_order_value(m) for m in mids],
                         args.repeats)
    result = {
        "geometry": args.geometry, "dtype": args.dtype, "tokens": args.tokens, "fragments": len(frags),
        "bytes": total_bytes, "torch_threads": torch.get_num_threads(), "repeats": args.repeats,
        "chunk_elements": rope.CHUNK_ELEMENTS,
        "render_s": render["s"], "torch_cat_s": render["floor_s"], "render_over_cat": render["ratio"],
        "compiled_kernel": rope.fused_kernel(frags[0].keys) is not None,
        "render_torch_path_s": render_torch["s"], "render_torch_path_over_cat": render_torch["ratio"],
        "tiny_tokens": TINY_TOKENS, "tiny_render_s": tiny_render["s"], "tiny_torch_cat_s": tiny_render["floor_s"],
        "tiny_render_over_cat": tiny_render["ratio"],
        "content_id_s": ids["s"], "raw_sha256_s": ids["floor_s"], "content_id_over_sha256": ids["ratio"],
        "sha256_MB_per_s": total_bytes / ids["floor_s"] / 1e6,
        "order_key_exact_s": key_vs_f32["s"], "order_key_float32_s": key_vs_f32["floor_s"],
        "order_key_exact_over_float32": key_vs_f32["ratio"],
        "order_key_fsum_s": key_vs_fsum["floor_s"], "order_key_fsum_over_exact": 1.0 / key_vs_fsum["ratio"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
