"""The order value m and the order key, by exact integer arithmetic (a different method from the
product's float64 ``fsum``, so that the two can check each other).

m (DESIGN.md, "Order key"): the mean over heads and positions of the L2 norm of each key vector at
layer floor(L/2).  Each step is rounded once to float64, exactly as the definition says:

1. per vector, the sum of squares, rounded to float64 (here: an exact integer sum of squared
   integer significands, built with numpy int64 and base-4 carries, then one correctly rounded
   integer division);
2. its square root, rounded to float64 (here: ``math.isqrt`` with a sticky bit);
3. the sum of the norms, rounded to float64 (here: exact integer sum, one division);
4. that sum divided by the vector count, rounded to float64 (here: one integer division).

Python's int / int true division is correctly rounded (round half to even), which is what makes
steps 1, 3 and 4 exact.  Non-finite keys: any NaN gives the canonical +NaN 0x7ff8000000000000,
else any infinity gives +inf."""

from __future__ import annotations

import math
import struct

import numpy as np

from oracle.formats import StorageFormat

CANONICAL_NAN_BITS = 0x7FF8000000000000
POSITIVE_INFINITY_BITS = 0x7FF0000000000000
_SIGN64 = 1 << 63
_MASK64 = (1 << 64) - 1


def float_of_bits(bits: int) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def bits_of_float(x: float) -> int:
    return int.from_bytes(struct.pack("<d", x), "little")


def _divide(numerator: int, denominator: int) -> float:
    """numerator / denominator rounded once to float64 (CPython's int true division)."""
    return numerator / denominator


def _sqrt_correctly_rounded(x: float) -> float:
    """sqrt(x) rounded to nearest even, for finite x >= 0, from integers alone."""
    if x == 0:
        return 0.0
    numerator, denominator = x.as_integer_ratio()  # denominator = 2**k
    k = denominator.bit_length() - 1
    if k % 2:
        numerator, k = numerator << 1, k + 1
    # scale so the integer root has > 64 bits: the sticky bit then sits far below the rounding bit
    extra = max(0, (140 - numerator.bit_length()) // 2 + 1)
    scaled = numerator << (2 * extra)
    root = math.isqrt(scaled)
    sticky = 1 if root * root != scaled else 0
    # exact sqrt = (root + something in [0, 1)) / 2**(k/2 + extra); 2*root + sticky keeps the
    # "above an integer" information one bit lower, where it cannot move a rounding boundary
    return _divide(2 * root + sticky, 1 << (k // 2 + extra + 1))


def _sum_correctly_rounded(terms: list[float]) -> float:
    """The exact sum of non-negative finite float64 terms, rounded once to float64."""
    ratios = [t.as_integer_ratio() for t in terms]
    scale = max(d for _, d in ratios)
    total = sum(n * (scale // d) for n, d in ratios)
    return _divide(total, scale)


def exact_square_sums(fmt: StorageFormat, rows: np.ndarray) -> list[int]:
    """For finite element bits ``[R, D]``: each row's sum of squares as an exact integer count of
    units 2**(2*smallest_exponent).

    A square is significand² · 4**shift units.  The significand squares are first added per
    (row, shift) in int64 (exact: at most 48 bits each, D of them), which writes each row's sum
    as a polynomial in 4; carrying from each base-4 digit to the next then gives the sum's base-4
    digits, packed four to a byte into one Python int per row.  Every step is integer arithmetic,
    so nothing rounds."""
    parts = fmt.scaled_magnitudes(rows)
    significand, shift = parts[..., 0], parts[..., 1]
    count = rows.shape[0]
    digits = -(-((1 << fmt.exponent_bits) + 40) // 4) * 4  # room for every shift plus the carries
    poly = np.zeros((count, digits), dtype=np.int64)
    np.add.at(poly, (np.arange(count)[:, None], shift), significand * significand)
    for i in range(digits - 1):
        poly[:, i + 1] += poly[:, i] >> 2
        poly[:, i] &= 3
    if (poly[:, -1] > 3).any():
        raise AssertionError("carry ran past the last digit")
    d = poly.astype(np.uint8).reshape(count, -1, 4)
    packed = d[..., 0] | (d[..., 1] << 2) | (d[..., 2] << 4) | (d[..., 3] << 6)
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def order_value_bits(fmt: StorageFormat, middle_keys: np.ndarray) -> int:
    """m as a float64 bit pattern, for the middle layer's key bits ``[H, n, D]``."""
    if middle_keys.ndim != 3 or middle_keys.shape[1] == 0:
        raise ValueError(f"want middle-layer key bits [H, n, D] with n >= 1, got {middle_keys.shape}")
    if fmt.is_nan(middle_keys).any():
        return CANONICAL_NAN_BITS
    if fmt.is_inf(middle_keys).any():
        return POSITIVE_INFINITY_BITS
    unit = 1 << (-2 * fmt.smallest_exponent)  # the sums count units of 2**(2*smallest)
    squares = exact_square_sums(fmt, middle_keys.reshape(-1, middle_keys.shape[-1]))
    norms = [_sqrt_correctly_rounded(_divide(s, unit)) for s in squares]
    total = _sum_correctly_rounded(norms)
    numerator, denominator = total.as_integer_ratio()
    return bits_of_float(_divide(numerator, denominator * len(norms)))


def total_order_rank(bits: int) -> int:
    """IEEE-754 totalOrder as an unsigned 64-bit rank: negatives (sign set) reverse and sit below
    every non-negative pattern; non-negatives keep their order above them."""
    if bits & _SIGN64:
        return _MASK64 - bits
    return _SIGN64 + bits


def order_key(m_bits: int, content_id: bytes) -> bytes:
    """8 big-endian bytes of the totalOrder rank of m, then the 32-byte content id."""
    if len(content_id) != 32:
        raise ValueError(f"a content id is 32 bytes, got {len(content_id)}")
    return total_order_rank(m_bits).to_bytes(8, "big") + content_id
