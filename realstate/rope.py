"""RoPE re-encoding: move keys encoded at ``start`` to offset ``o`` by rotating them by δ = o − start.

Qwen3 uses the NeoX convention (``rotate_half``).  The angles δ·inv_freq use the frequencies the
model really uses (from the fingerprint); cos/sin are computed in float64 on the CPU and rounded
once to float32; the rotation is applied in float32 as k·cos + rotate_half(k)·sin with separate
multiplies and adds (no fused multiply-add, so CPU and GPU round alike), and the result is
rounded once to the storage dtype.  δ = 0 copies the keys untouched: the arithmetic with
cos = 1, sin = 0 would turn −0 into +0 and rewrite NaN bits.

``reencode_reference`` is that formula written literally.  ``reencode_into`` is the one renders
use: the same arithmetic per half — first half k1·c − k2·s, second half k2·c + k1·s, which is
the literal formula term for term since a + (−b) = a − b and (−x)·s = −(x·s) exactly in IEEE
arithmetic — done in cache-sized chunks and written straight into the render's buffer.  The two
agree bit for bit on every non-NaN input (tested); a NaN key stays NaN, with unspecified sign."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

# elements per chunk: large enough that per-call overhead is small, small enough that the two
# float32 scratch halves (4 MiB together) stay in the last-level cache.  Measured best on the
# qwen3-1.7b geometry among 2**13 .. 2**26 (benchmarks/bench_realstate.py).
CHUNK_ELEMENTS = 1 << 20


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotation_tables(inv_freq: Sequence[float], delta: int, device: torch.device | str = "cpu"
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of δ·inv_freq, duplicated over the two halves: float32 vectors of length D."""
    angles = [float(delta) * f for f in inv_freq]
    cos = [math.cos(a) for a in angles]
    sin = [math.sin(a) for a in angles]
    cos64 = torch.tensor(cos + cos, dtype=torch.float64)
    sin64 = torch.tensor(sin + sin, dtype=torch.float64)
    return cos64.to(torch.float32).to(device), sin64.to(torch.float32).to(device)


def reencode_reference(keys: torch.Tensor, delta: int, inv_freq: Sequence[float],
                       rotate: Callable[[torch.Tensor], torch.Tensor] = rotate_half) -> torch.Tensor:
    """Keys ``[..., D]`` rotated by ``delta`` positions: the literal formula, a new tensor."""
    if delta == 0:
        return keys.clone()
    cos, sin = rotation_tables(inv_freq, delta, keys.device)
    k = keys.to(torch.float32)
    turned = k * cos
    turned += rotate(k) * sin
    return turned.to(keys.dtype)


def reencode_into(dest: torch.Tensor, keys: torch.Tensor, delta: int, inv_freq: Sequence[float]) -> None:
    """Write ``keys`` rotated by ``delta`` into ``dest`` (same shape, any strides, same dtype)."""
    if dest.shape != keys.shape:
        raise ValueError(f"destination {tuple(dest.shape)} != keys {tuple(keys.shape)}")
    if delta == 0:
        dest.copy_(keys)
        return
    head_dim = keys.shape[-1]
    half = head_dim // 2
    cos, sin = rotation_tables(inv_freq, delta, keys.device)
    c, s = cos[:half], sin[:half]
    rows = keys.shape[-2]
    src = keys.reshape(-1, rows, head_dim)
    out = dest.view(-1, rows, head_dim)  # raises rather than silently writing into a copy
    blocks = max(1, CHUNK_ELEMENTS // (rows * head_dim))  # leading blocks per chunk
    row_step = rows if blocks > 1 or rows * head_dim <= CHUNK_ELEMENTS else max(1, CHUNK_ELEMENTS // head_dim)
    scratch_a = torch.empty(blocks, row_step, half, dtype=torch.float32, device=keys.device)
    scratch_b = torch.empty_like(scratch_a)
    for b0 in range(0, src.shape[0], blocks):
        for r0 in range(0, rows, row_step):
            x = src[b0:b0 + blocks, r0:r0 + row_step]
            y = out[b0:b0 + blocks, r0:r0 + row_step]
            a = scratch_a[:x.shape[0], :x.shape[1]]
            b = scratch_b[:x.shape[0], :x.shape[1]]
            x1, x2 = x[..., :half], x[..., half:]
            torch.mul(x1, c, out=a)
            torch.mul(x2, s, out=b)
            torch.sub(a, b, out=y[..., :half])  # computed in float32, rounded once on store
            torch.mul(x2, c, out=a)
            torch.mul(x1, s, out=b)
            torch.add(a, b, out=y[..., half:])


def reencode_keys(keys: torch.Tensor, delta: int, inv_freq: Sequence[float]) -> torch.Tensor:
    """Keys rotated by ``delta`` positions, as a new tensor (the renders' arithmetic)."""
    out = torch.empty_like(keys)
    reencode_into(out, keys, delta, inv_freq)
    return out
