"""Storage-dtype bit patterns <-> Python floats, exactly, without numpy or torch.

Universes are written as bit patterns so that −0, NaN payloads and subnormals survive; the
reference backend decodes them to compute ``m`` and to re-encode RoPE.  Every conversion here is
exact or correctly rounded (round to nearest, ties to even)."""

from __future__ import annotations

import math
import struct

from modelcheck.backend import DTYPE_BITS

CANONICAL_NAN_BITS = 0x7FF8000000000000
CANONICAL_NAN: float = struct.unpack("<d", struct.pack("<Q", CANONICAL_NAN_BITS))[0]


def decode(bits: int, dtype: str) -> float:
    """The value of one stored element (exact: every storage dtype embeds in float64)."""
    if dtype == "bfloat16":
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    if dtype == "float16":
        return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    if dtype == "float32":
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BITS)}")


def to_float32(x: float) -> float:
    """Round a float64 to the nearest float32 (overflow gives ±inf, NaN stays NaN)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _float32_bits(x: float) -> int:
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0xFF800000 if x < 0 else 0x7F800000


def encode(x: float, dtype: str) -> int:
    """The storage bit pattern nearest to ``x`` (bfloat16 is rounded from float32, as torch does)."""
    if dtype == "float32":
        return _float32_bits(x)
    if dtype == "float16":
        try:
            return struct.unpack("<H", struct.pack("<e", x))[0]
        except OverflowError:
            return 0xFC00 if x < 0 else 0x7C00
    if dtype == "bfloat16":
        b = _float32_bits(x)
        if math.isnan(x):
            return ((b >> 16) & 0x8000) | 0x7FC0
        b += 0x7FFF + ((b >> 16) & 1)
        return (b >> 16) & 0xFFFF
    raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BITS)}")


def is_exact(x: float, dtype: str) -> bool:
    """Whether ``x`` is representable in ``dtype`` (so a universe written in floats means its bits)."""
    if math.isnan(x):
        return True
    back = decode(encode(x, dtype), dtype)
    return back == x and math.copysign(1.0, back) == math.copysign(1.0, x)


def float64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]
