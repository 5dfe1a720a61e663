"""RoPE re-encoding: move keys encoded at ``start`` to offset ``o`` by rotating them by δ = o − start.

Qwen3 uses the NeoX convention (``rotate_half``).  The angles δ·inv_freq use the frequencies the
model really uses (from the fingerprint), cos/sin are computed in float64 on the CPU with the
platform's correctly-rounding-in-practice libm, applied in float32 as k·cos + rotate_half(k)·sin
with separate multiplies and an add (no fused multiply-add, so CPU and GPU round alike), and the
result is rounded once to the storage dtype.  δ = 0 copies the keys untouched: the arithmetic
with cos = 1, sin = 0 would turn −0 into +0 and rewrite NaN bits."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch


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


def reencode_keys(keys: torch.Tensor, delta: int, inv_freq: Sequence[float],
                  rotate: Callable[[torch.Tensor], torch.Tensor] = rotate_half) -> torch.Tensor:
    """Keys ``[..., D]`` rotated by ``delta`` positions, in the keys' own dtype (a new tensor)."""
    if delta == 0:
        return keys.clone()
    cos, sin = rotation_tables(inv_freq, delta, keys.device)
    k = keys.to(torch.float32)
    turned = k * cos
    turned += rotate(k) * sin
    return turned.to(keys.dtype)
