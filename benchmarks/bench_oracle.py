"""Benchmark: the independent oracle against the product's render of the same fragments.

For a SmolLM2-135M-sized geometry (30 layers, 3 KV heads, head dim 64) and three bfloat16
fragments of ~100 tokens each (about 300 rendered tokens), it times, as medians over repeats:

- bridge: turning the fragments into the oracle's plain bytes (``fragment_data``);
- m: the oracle's exact-integer order values (computed fresh each repeat);
- render: the oracle's canonical render from bytes (rotation, layout, digest; m already known);
- product: realstate's ``canonical_render`` of the same set (the floor the ratios are against).

Run:  python benchmarks/bench_oracle.py [--tokens 100,100,100] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json

import torch
from bench_realstate import median_seconds  # this folder is on sys.path when run as a script

import oracle
from realstate.evidence.oracle_bridge import fragment_data
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import canonical_render


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="100,100,100")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    layers, heads, head_dim = 30, 3, 64
    inv_freq = tuple(1.0 / (100000.0 ** (2 * i / head_dim)) for i in range(head_dim // 2))
    fp = Fingerprint("bench-smollm2-like", layers, heads, head_dim, "bfloat16", inv_freq, 100000.0, 8192, "bench")
    fragments = []
    for i, n in enumerate(int(t) for t in args.tokens.split(",")):
        g = torch.Generator().manual_seed(i)
        fragments.append(Fragment(fp, 7 * i, torch.randn(layers, heads, n, head_dim, generator=g).bfloat16(),
                                  torch.randn(layers, heads, n, head_dim, generator=g).bfloat16()))
    data = [fragment_data(f) for f in fragments]
    for d in data:
        _ = d.order_value_bits  # cached: the render timing below excludes m

    def fresh_m() -> list[int]:
        return [oracle.order_value_bits(d.format, d.key_bits()[d.layers // 2]) for d in data]

    figures = {
        "tokens": sum(f.tokens for f in fragments),
        "bridge_s": median_seconds(lambda: [fragment_data(f) for f in fragments], args.repeats),
        "m_s": median_seconds(fresh_m, args.repeats),
        "render_s": median_seconds(lambda: oracle.canonical_render(data, inv_freq, 5), args.repeats),
        "product_s": median_seconds(lambda: canonical_render(fragments, 5), args.repeats),
    }
    total = figures["bridge_s"] + figures["m_s"] + figures["render_s"]
    figures["oracle_total_s"] = total
    figures["oracle_over_product"] = total / figures["product_s"]
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name:22s} {value:.4f}" if isinstance(value, float) else f"{name:22s} {value}")


if __name__ == "__main__":
    main()
