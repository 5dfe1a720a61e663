"""RoPE re-encoding by δ positions, NeoX halves (DESIGN.md, "RoPE re-encoding").

For each frequency i: the angle δ·inv_freq[i] is a float64 product; its cos and sin come from
``math.cos``/``math.sin`` (float64, the definition's reference) and are rounded once to float32.
The key is widened exactly to float32 and rotated in float32 with separate multiplies and adds —
first half k1·c − k2·s, second half k2·c + k1·s — then rounded once to the storage format.
δ = 0 returns the stored bits untouched (no arithmetic, so −0 and NaN payloads survive)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from oracle.formats import StorageFormat, narrow, widen


def rotation_table(delta: int, inv_freq: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of δ·inv_freq as float32 vectors of length D/2."""
    angles = [float(delta) * float(f) for f in inv_freq]
    cos = np.array([math.cos(a) for a in angles], dtype=np.float64).astype(np.float32)
    sin = np.array([math.sin(a) for a in angles], dtype=np.float64).astype(np.float32)
    return cos, sin


def rotate_bits(fmt: StorageFormat, key_bits: np.ndarray, delta: int, inv_freq: Sequence[float]) -> np.ndarray:
    """Key bits ``[..., D]`` moved by δ positions, as storage bits of the same shape."""
    if delta == 0:
        return key_bits.copy()
    head_dim = key_bits.shape[-1]
    half = head_dim // 2
    if head_dim % 2 or len(inv_freq) != half:
        raise ValueError(f"head dim {head_dim} needs {head_dim // 2} frequencies, got {len(inv_freq)}")
    cos, sin = rotation_table(delta, inv_freq)
    k = widen(fmt, key_bits)
    k1, k2 = k[..., :half], k[..., half:]
    out = np.empty(k.shape, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(np.multiply(k1, cos), np.multiply(k2, sin), out=out[..., :half])
        np.add(np.multiply(k2, cos), np.multiply(k1, sin), out=out[..., half:])
    return narrow(fmt, out)
