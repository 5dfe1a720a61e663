"""The order statistic m: mean over heads and positions of the L2 norm of each key vector at the
middle layer — computed so that it is the same float64 bits on every machine (DESIGN.md).

Squares of 16- and 32-bit floats are exact in float64; each vector's squares are summed with
``math.fsum`` (correctly rounded), ``math.sqrt`` is correctly rounded, the norms are summed with
``math.fsum`` and divided once.  Nothing depends on SIMD width, threads or library versions.
Non-finite keys have a fixed answer: any NaN gives the canonical quiet +NaN, else any infinity
gives +inf (all squares are >= 0, so no -inf or inf-inf can arise)."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import torch

CANONICAL_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]


def _as_float64_rows(keys: torch.Tensor) -> np.ndarray:
    """[H, n, D] (any storage dtype, any device) -> exact float64 rows [H*n, D] on the CPU."""
    if keys.dim() != 3 or keys.shape[1] == 0:
        raise ValueError(f"want middle-layer keys [H, n, D] with n >= 1, got shape {tuple(keys.shape)}")
    return keys.detach().to(device="cpu", dtype=torch.float64).reshape(-1, keys.shape[-1]).numpy()


def exact_order_value(keys: torch.Tensor) -> float:
    """m for middle-layer keys ``[H, n, D]`` (the fast path; same bits as the reference)."""
    rows = _as_float64_rows(keys)
    if np.isnan(rows).any():
        return CANONICAL_NAN
    if np.isinf(rows).any():
        return math.inf
    squares = rows * rows  # exact: at most 2 * 24 significant bits, exponent range fits float64
    fsum, sqrt = math.fsum, math.sqrt
    norms = [sqrt(fsum(row)) for row in squares.tolist()]
    return fsum(norms) / len(norms)


def reference_order_value(keys: torch.Tensor) -> float:
    """The same definition with exact rational arithmetic: slow, obviously right, for tests."""
    rows = _as_float64_rows(keys)
    values = rows.tolist()
    if any(math.isnan(x) for row in values for x in row):
        return CANONICAL_NAN
    if any(math.isinf(x) for row in values for x in row):
        return math.inf
    norms = [math.sqrt(float(sum((Fraction(x) ** 2 for x in row), Fraction(0)))) for row in values]
    total = sum((Fraction(n) for n in norms), Fraction(0))
    return float(total) / len(norms)
