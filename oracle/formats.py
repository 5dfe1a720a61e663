"""The three storage formats as bit layouts, written from IEEE-754 (binary16, binary32) and the
bfloat16 definition (the top 16 bits of a binary32), not from any tensor library.

Every finite element is an integer times a power of two; ``exact_parts`` gives that integer and
exponent so the order value can be computed with exact integer arithmetic.  ``widen`` and
``narrow`` move between the storage bits and numpy float32 for the rotation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StorageFormat:
    name: str
    code: int  # the dtype code carried in the content-id header
    width: int  # bits per element
    fraction_bits: int
    exponent_bits: int

    @property
    def bits_dtype(self) -> np.dtype:
        """Unsigned little-endian integers of the element's width: how bytes are read and written."""
        return np.dtype("<u2") if self.width == 16 else np.dtype("<u4")

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def exponent_mask(self) -> int:
        return ((1 << self.exponent_bits) - 1) << self.fraction_bits

    @property
    def fraction_mask(self) -> int:
        return (1 << self.fraction_bits) - 1

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)

    @property
    def canonical_nan(self) -> int:
        """The one NaN a rotated key may hold (DESIGN.md, "RoPE re-encoding"): sign clear, exponent
        all ones, only the most significant fraction bit (the quiet bit) set."""
        return self.exponent_mask | (1 << (self.fraction_bits - 1))

    @property
    def smallest_exponent(self) -> int:
        """The exponent of the least significant bit of a subnormal: every finite value of this
        format is an integer multiple of 2**smallest_exponent."""
        return 1 - self.bias - self.fraction_bits

    def is_nan(self, bits: np.ndarray) -> np.ndarray:
        b = bits.astype(np.uint32)
        return ((b & self.exponent_mask) == self.exponent_mask) & ((b & self.fraction_mask) != 0)

    def is_inf(self, bits: np.ndarray) -> np.ndarray:
        b = bits.astype(np.uint32)
        return (b & ~np.uint32(self.sign_mask)) == self.exponent_mask

    def scaled_magnitudes(self, bits: np.ndarray) -> np.ndarray:
        """|value| / 2**smallest_exponent as (significand, shift) pairs: |value| is exactly
        significand << shift units of 2**smallest_exponent.  Finite inputs only."""
        b = bits.astype(np.int64)
        biased = (b >> self.fraction_bits) & ((1 << self.exponent_bits) - 1)
        fraction = b & self.fraction_mask
        normal = biased != 0
        significand = np.where(normal, fraction | (1 << self.fraction_bits), fraction)
        shift = np.where(normal, biased - 1, 0)
        return np.stack([significand, shift], axis=-1)


BFLOAT16 = StorageFormat("bfloat16", 1, 16, 7, 8)
FLOAT16 = StorageFormat("float16", 2, 16, 10, 5)
FLOAT32 = StorageFormat("float32", 3, 32, 23, 8)
FORMATS: dict[str, StorageFormat] = {f.name: f for f in (BFLOAT16, FLOAT16, FLOAT32)}


def storage_format(name: str) -> StorageFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown storage dtype {name!r}; the oracle knows {', '.join(FORMATS)}") from None


def widen(fmt: StorageFormat, bits: np.ndarray) -> np.ndarray:
    """Storage bits -> float32 values, exactly (every storage value is a float32 value)."""
    if fmt is FLOAT32:
        return bits.astype(np.uint32).view(np.float32)
    if fmt is BFLOAT16:
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.astype(np.uint16).view(np.float16).astype(np.float32)


def narrow(fmt: StorageFormat, values: np.ndarray) -> np.ndarray:
    """float32 values -> storage bits, rounded once to nearest, ties to even; overflow gives inf.
    Every NaN becomes the format's canonical quiet NaN, whatever its sign and payload."""
    values = np.asarray(values, dtype=np.float32)
    if fmt is FLOAT32:
        bits = values.view(np.uint32).copy()
    elif fmt is FLOAT16:
        with np.errstate(over="ignore", invalid="ignore"):
            bits = values.astype(np.float16).view(np.uint16).copy()
    else:
        bits = _float32_to_bfloat16_bits(values)
    return np.where(np.isnan(values), np.array(fmt.canonical_nan, dtype=bits.dtype), bits)


def _float32_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """Round to nearest even on the float32 bit pattern: add 0x7fff plus the lowest kept bit,
    then drop the low 16 bits.  A carry out of the fraction bumps the exponent, which is exactly
    the rounding up to the next binade (or to infinity past the largest finite value).  Only a
    NaN pattern can wrap around 32 bits, and ``narrow`` replaces NaNs afterwards."""
    b = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):
        return ((b + np.uint32(0x7FFF) + ((b >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
