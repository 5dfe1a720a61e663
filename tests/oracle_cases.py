"""Fragments for the oracle tests, built from bit patterns: ordinary values at several scales,
arbitrary finite bits, and planted specials (±0, subnormals, largest finite, ±inf, NaN payloads),
in every storage dtype.  Shared by the Hypothesis tests and the scratch-copy driver."""

from __future__ import annotations

import numpy as np
import torch

from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment

TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
BITS = {"bfloat16": (np.uint16, np.int16, 8, 7), "float16": (np.uint16, np.int16, 5, 10),
        "float32": (np.uint32, np.int32, 8, 23)}

SPECIALS = {
    "bfloat16": [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
                 0x7FC0, 0xFFC1, 0x7F81, 0x3F80],
    "float16": [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
                0x7E00, 0xFE01, 0x7C01, 0x3C00],
    "float32": [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
                0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x3F800000],
}


def fingerprint(dtype: str, layers: int, heads: int, head_dim: int, inv_freq: tuple[float, ...] | None = None,
                weights: str = "synthetic:oracle-tests") -> Fingerprint:
    freqs = inv_freq or tuple(1.0 / (10000.0 ** (2 * i / head_dim)) for i in range(head_dim // 2))
    return Fingerprint("oracle-test", layers, heads, head_dim, dtype, freqs, 10000.0, 1 << 16, weights)


def from_bits(bits: np.ndarray, dtype: str) -> torch.Tensor:
    unsigned, signed, _, _ = BITS[dtype]
    return torch.from_numpy(bits.astype(unsigned).view(signed).copy()).view(TORCH_DTYPES[dtype])


def finite_bits(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], mode: str) -> np.ndarray:
    """'normal:<scale>' gives scaled Gaussians rounded to the dtype; 'bits' gives arbitrary
    finite patterns (every exponent, subnormals included)."""
    unsigned, signed, exponent_bits, fraction_bits = BITS[dtype]
    if mode == "bits":
        width = 8 * np.dtype(unsigned).itemsize
        raw = rng.integers(0, 1 << width, size=shape, dtype=np.uint64).astype(unsigned)
        top = np.array(1 << (fraction_bits + exponent_bits - 1), dtype=unsigned)
        exponent_mask = np.array(((1 << exponent_bits) - 1) << fraction_bits, dtype=unsigned)
        return np.where((raw & exponent_mask) == exponent_mask, raw & ~top, raw)  # no inf/NaN
    scale = float(mode.split(":")[1])
    values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * np.float32(scale))
    return values.to(TORCH_DTYPES[dtype]).view({np.uint16: torch.int16, np.uint32: torch.int32}[unsigned]) \
        .numpy().view(unsigned)


def fragment_from_bits(fp: Fingerprint, start: int, keys: np.ndarray, values: np.ndarray) -> Fragment:
    return Fragment(fp, start, from_bits(keys, fp.dtype), from_bits(values, fp.dtype))


def swap_heads(fragment: Fragment) -> Fragment:
    """The same vectors under other heads: the same m, another content id."""
    return Fragment(fragment.fingerprint, fragment.start, fragment.keys.flip(1).contiguous(),
                    fragment.values.flip(1).contiguous())
