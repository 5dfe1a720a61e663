"""Shared fixtures for the realstate tests: tiny fingerprints and fragments from bit patterns."""

from __future__ import annotations

import torch

from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment


def tiny_fingerprint(dtype: str = "bfloat16", layers: int = 2, heads: int = 2, head_dim: int = 4,
                     weights: str = "synthetic:test", max_positions: int = 1 << 16) -> Fingerprint:
    inv_freq = tuple(1.0 / (10000.0 ** (2 * i / head_dim)) for i in range(head_dim // 2))
    return Fingerprint("test-arch", layers, heads, head_dim, dtype, inv_freq, 10000.0, max_positions, weights)


def random_fragment(fp: Fingerprint, tokens: int, seed: int, start: int = 0) -> Fragment:
    g = torch.Generator().manual_seed(seed)
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[fp.dtype]
    shape = (fp.layers, fp.kv_heads, tokens, fp.head_dim)
    keys = torch.randn(shape, generator=g).to(dtype)
    values = torch.randn(shape, generator=g).to(dtype)
    return Fragment(fp, start, keys, values)


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)
