"""The order statistic m: mean over heads and positions of the L2 norm of each key vector at the
middle layer — computed so that it is the same float64 bits on every machine (DESIGN.md).

Definition: squares of 16- and 32-bit floats are exact in float64; each vector's squares are
summed exactly and rounded once to float64; the correctly rounded square root is taken; the
norms are summed exactly and rounded once; the total is divided once by the number of vectors.
Non-finite keys have a fixed answer: any NaN gives the canonical quiet +NaN, else any infinity
gives +inf (all squares are >= 0, so no -inf or inf-inf can arise).

``reference_order_value`` is that definition in ``Fraction`` arithmetic (slow, obviously right);
``fsum_order_value`` is the previous fast path (``math.fsum`` per vector: exact, but a Python
call per vector); ``exact_order_value`` is the one fragments use: the same bits, vectorized.

How ``correctly_rounded_row_sums`` is exact (Rump, Ogita, Oishi, "Accurate floating-point
summation part I", SIAM J. Sci. Comput. 31(1), 2008, Lemma 3.3 "ExtractScalar"): for
σ = 2^k and |p| ≤ 2^-M·σ, q = fl(fl(σ + p) − σ) and r = p − q satisfy p = q + r exactly,
|r| ≤ 2^-53·σ and q ∈ 2^(k-53)·Z.  So the q of one row are multiples of 2^(k-53) whose sum is at
most σ in magnitude: every partial sum is representable and the float64 sum of the q is exact
in *any* order (SIMD width, threads and library versions cannot change it).  Repeating on the
remainders r splits each row's exact sum into level sums T_j = I_j·2^(k_j-53), I_j an integer
with |I_j| ≤ 2^53, until every remainder is zero.  The levels are combined in int64 from the
bottom with a sticky bit (floor shifts; the bits shifted out only say "there is more"), giving
the exact sum as (A + f)·2^u with A an integer ≥ 2^54 whenever f ≠ 0.  Setting A's last bit when
f ≠ 0 (round to odd) and converting to float64 once (IEEE round to nearest even) is then the
correctly rounded sum: an odd integer at least two bits finer than the result's last place never
sits on a rounding boundary, and lands on the same side of every one as the exact value."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from realstate.kernel.threads import limited

CANONICAL_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]

# Vectors are processed in blocks of about this many elements so the float64 scratch stays in cache.
BLOCK_ELEMENTS = 1 << 16
# Up to this many norms are totalled with math.fsum (cheapest for few values; also exact).
FSUM_NORMS_UP_TO = 512
# Guard bits kept below the first level's grid in the final accumulator: A ∈ [2^54, 2^62].
_GUARD_BITS = 8
_MAX_ROW_LENGTH = 1 << 40  # keeps every shift in range (see _combine_levels)
_MAX_LEVELS = 2 * 2100  # float64 spans 2^-1074 .. 2^1024; each level takes >= 12 bits off


def _as_float64_rows(keys: torch.Tensor) -> np.ndarray:
    """[H, n, D] (any storage dtype, any device) -> exact float64 rows [H*n, D] on the CPU."""
    _check_shape(keys)
    with limited(keys.numel()):
        return keys.detach().to(device="cpu", dtype=torch.float64).reshape(-1, keys.shape[-1]).numpy()


def _check_shape(keys: torch.Tensor) -> None:
    if keys.dim() != 3 or keys.shape[1] == 0 or keys.shape[2] == 0:
        raise ValueError(f"want middle-layer keys [H, n, D] with n, D >= 1, got shape {tuple(keys.shape)}")


def exact_order_value(keys: torch.Tensor, *, block_rows: int | None = None,
                      fsum_norms_up_to: int | None = None) -> float:
    """m for middle-layer keys ``[H, n, D]``: the reference's bits, computed on the CPU (keys on
    another device are copied over) in cache-sized blocks of vectors with numpy.

    A vector's plain float64 sum of squares is already exact when every square is a multiple of
    2^(e-52) and the sum is below 2^(e+1) (then no partial sum can round): ``_plainly_exact``
    checks that from the storage exponents, which is the common case for 16-bit keys.  The other
    vectors go through ``correctly_rounded_row_sums``, gathered across blocks when they are few.

    ``block_rows`` and ``fsum_norms_up_to`` override ``BLOCK_ELEMENTS`` and ``FSUM_NORMS_UP_TO``:
    the bits are the same for any values (``PATH_PROBES`` lets verify's few vectors drive the
    paths that only large inputs take by default)."""
    _check_shape(keys)
    layout = _FORMATS.get(keys.dtype)
    if layout is None:
        raise ValueError(f"keys must be bfloat16, float16 or float32 (their squares are exact in float64), "
                         f"got {keys.dtype}")
    dim = keys.shape[-1]
    with limited(keys.numel()):
        src = keys.detach().to("cpu").reshape(-1, dim).contiguous()
    count = src.shape[0]
    block = min(count, max(1, BLOCK_ELEMENTS // dim) if block_rows is None else block_rows)
    with limited(block * dim):  # the staging copies below are one block each: small work
        return _blocked_order_value(src, layout, block, fsum_norms_up_to)


def _blocked_order_value(src: torch.Tensor, layout: _Layout, block: int, fsum_norms_up_to: int | None) -> float:
    """``exact_order_value`` of the rows ``src [count, D]``, ``block`` rows at a time."""
    count, dim = src.shape
    bits = src.view(layout.int_dtype).numpy()
    staging = torch.empty((block, dim), dtype=torch.float64)
    scratch = staging.numpy()
    sums = np.empty(count, dtype=np.float64)
    pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    saw_inf = False
    for r0 in range(0, count, block):
        r1 = min(count, r0 + block)
        staging[:r1 - r0].copy_(src[r0:r1])  # exact widening to float64
        squares = np.multiply(scratch[:r1 - r0], scratch[:r1 - r0], out=scratch[:r1 - r0])  # exact
        estimate = _row_sums(squares)
        # NaN iff some square is NaN; else inf iff some is inf (finite squares cannot overflow)
        status = float(estimate.sum())
        if not math.isfinite(status):
            if math.isnan(status):
                return CANONICAL_NAN
            saw_inf = True
            continue
        if not layout.check_plain_sums:
            sums[r0:r1] = correctly_rounded_row_sums(squares, estimate, scratch_is_input=True)
            continue
        sums[r0:r1] = estimate
        todo = np.flatnonzero(~_plainly_exact(bits[r0:r1], estimate, layout))
        if 4 * todo.size >= r1 - r0:  # many: finish the block now, while it is in cache
            sums[r0:r1] = correctly_rounded_row_sums(squares, estimate, scratch_is_input=True)
        elif todo.size:
            pending.append((r0 + todo, squares[todo], estimate[todo]))
    if saw_inf:
        return math.inf
    if pending:
        where = np.concatenate([w for w, _, _ in pending])
        rows = np.concatenate([r for _, r, _ in pending])
        sums[where] = correctly_rounded_row_sums(rows, np.concatenate([e for _, _, e in pending]),
                                                 scratch_is_input=True)
    norms = np.sqrt(sums)  # IEEE square root: correctly rounded
    if count <= (FSUM_NORMS_UP_TO if fsum_norms_up_to is None else fsum_norms_up_to):
        total = math.fsum(norms.tolist())
    else:
        total = float(correctly_rounded_row_sums(norms.reshape(1, -1))[0])
    return total / count


# settings of exact_order_value that change which path computes m, never its bits: several
# blocks (some finished at once, some gathered), and the norms totalled by the vectorized sum
PATH_PROBES: tuple[dict[str, int], ...] = (
    {"fsum_norms_up_to": 0},
    {"block_rows": 5},
    {"block_rows": 2, "fsum_norms_up_to": 0},
)


@dataclass(frozen=True)
class _Layout:
    """Where a storage format keeps its exponent, for the plain-sum exactness check."""

    int_dtype: torch.dtype
    exponent_mask: int
    exponent_shift: int
    bias: int
    mantissa_bits: int
    # float32 squares have 48 significant bits: their plain sums are almost never exact, so the
    # check would only cost time
    check_plain_sums: bool


_FORMATS = {
    torch.bfloat16: _Layout(torch.int16, 0x7F80, 7, 127, 7, check_plain_sums=True),
    torch.float16: _Layout(torch.int16, 0x7C00, 10, 15, 10, check_plain_sums=True),
    torch.float32: _Layout(torch.int32, 0x7F800000, 23, 127, 23, check_plain_sums=False),
}


def _plainly_exact(bits: np.ndarray, estimate: np.ndarray, layout: _Layout) -> np.ndarray:
    """Rows whose float64 sum of squares (``estimate``, summed in any order) is exact.

    A stored x with exponent field f is a multiple of 2^(max(f,1) - bias - mantissa_bits), so x²
    is a multiple of 2^(2·that) (zeros count as field 0, which is only pessimistic).  With
    estimate < 2^e, the exact sum is below 2^e·(1 + n·2^-53) < 2^(e+1).  If every square is a
    multiple of 2^(e-52), every partial sum is a multiple of 2^(e-52) below 2^(e+1): at most 53
    significant bits, representable, so no addition rounded and the estimate is the sum."""
    lowest_field = np.bitwise_and(bits, layout.exponent_mask).min(axis=1) >> layout.exponent_shift
    lowest_bit = 2 * (np.maximum(lowest_field, 1) - (layout.bias + layout.mantissa_bits))
    return lowest_bit >= np.frexp(estimate)[1] - 52


def correctly_rounded_row_sums(p: np.ndarray, estimate: np.ndarray | None = None,
                               scratch_is_input: bool = False) -> np.ndarray:
    """The exact sum of each row of ``p`` (float64, >= 0, nonzero values in [2^-900, 2^900] so
    nothing overflows or underflows), rounded once to nearest-even.

    ``estimate`` is ``p.sum(axis=1)`` computed in any order (it only picks the first level's
    scale).  With ``scratch_is_input`` the remainders overwrite ``p``."""
    if p.ndim != 2 or p.dtype != np.float64:
        raise ValueError(f"want a 2-D float64 array, got {p.dtype} {p.shape}")
    length = p.shape[1]
    if length > _MAX_ROW_LENGTH:
        raise ValueError(f"rows of {length} values exceed the supported {_MAX_ROW_LENGTH}")
    if estimate is None:
        estimate = _row_sums(p)
    remainder = p if scratch_is_input else p.copy()
    high = np.empty_like(remainder)
    # level 0: sigma = 2^(e+2) > 2·(exact row sum), since estimate < 2^e and the estimate's
    # relative error is far below 1; every p <= sigma, and the q (all >= 0) sum to at most sigma.
    top_k = np.frexp(estimate)[1] + 2
    top_sums = _extract_level(remainder, high, top_k)
    if not remainder.any():
        return top_sums  # the high parts were the whole rows: their sums are exact
    spread = max(0, (length - 1).bit_length())  # M: length <= 2^M
    # level 1 takes its scale from the bound |r| <= 2^(k0-53) (no pass over the data); later
    # levels, for the few rows that still need one, from their largest remainder
    k = top_k - 53 + spread
    levels = [(top_sums, top_k, None), (_extract_level(remainder, high, k), k, None)]
    rows_left = remainder.shape[0]
    while remainder.any():
        if len(levels) > _MAX_LEVELS:  # each level shrinks |r| by >= 2^(52-M): cannot happen
            raise RuntimeError("exact summation did not terminate")
        largest = np.maximum(remainder.max(axis=1), -remainder.min(axis=1))
        active = np.flatnonzero(largest)
        if 2 * active.size <= rows_left:  # gather when it saves work (the bits are the same)
            remainder, high, largest, rows = remainder[active], high[:active.size], largest[active], active
            rows_left = active.size
        else:
            rows = None  # rows whose remainder is zero get k = M and contribute zeros
        k = np.frexp(largest)[1] + spread  # |r| < 2^e = 2^-M · sigma
        levels.append((_extract_level(remainder, high, k), k, rows))
    accumulator, sticky = _combine_levels(levels)
    rounded = (accumulator | sticky).astype(np.float64)  # one IEEE rounding (round to nearest even)
    return np.ldexp(rounded, top_k - (53 + _GUARD_BITS))


def _row_sums(a: np.ndarray) -> np.ndarray:
    """Float64 row sums in whatever order numpy picks (exact where the caller needs it to be)."""
    return np.einsum("ij->i", a)


def _extract_level(remainder: np.ndarray, high: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Split every row at the grid 2^(k-53): returns the exact sums of the high parts and
    leaves the exact low parts in ``remainder``."""
    sigma = np.ldexp(1.0, k)[:, None]
    np.add(remainder, sigma, out=high)
    np.subtract(high, sigma, out=high)  # q = fl(fl(σ + p) − σ), a multiple of 2^(k-53)
    np.subtract(remainder, high, out=remainder)  # r = p − q, exact
    return _row_sums(high)  # exact in any order: multiples of 2^(k-53), |partial sums| <= σ


def _combine_levels(levels: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Fold the level sums T_j = I_j·2^(k_j-53) from the bottom into A (units
    2^(k_0 - 53 - guard)) and a sticky bit.

    Level j+1's grid is at least 52 − M bits below level j's (its values are below 2^(k_j-53)
    and its sigma is 2^(e+M)), so each shift is positive for a row with a nonzero lower level
    (a row whose lower levels are all zero has A = 0, which any shift leaves 0); at most 63 is
    needed because |A| < 2^55 below the top.  A >> s is floor division, and the bits it drops
    are nonzero exactly when (A >> s) << s differs from A, two's complement included."""

    def ints(sums: np.ndarray, k: np.ndarray) -> np.ndarray:
        return np.ldexp(sums, 53 - k).astype(np.int64)  # exact: integers of at most 53 bits

    accumulator = ints(levels[-1][0], levels[-1][1])
    k = levels[-1][1]
    sticky = np.zeros(accumulator.shape, dtype=np.int64)
    for j in range(len(levels) - 1, 0, -1):
        parent_sums, parent_k, _ = levels[j - 1]
        rows = levels[j][2]
        guard = _GUARD_BITS if j == 1 else 0
        shift = (parent_k if rows is None else parent_k[rows]) - k - guard
        np.maximum(shift, 0, out=shift)
        np.minimum(shift, 63, out=shift)
        high = accumulator >> shift
        sticky = sticky | ((high << shift) != accumulator)
        parent = ints(parent_sums, parent_k) << guard
        if rows is None:
            parent += high
        else:
            parent[rows] += high
            sticky_all = np.zeros(parent.shape, dtype=np.int64)
            sticky_all[rows] = sticky
            sticky = sticky_all
        accumulator, k = parent, parent_k
    return accumulator, sticky


def fsum_order_value(keys: torch.Tensor) -> float:
    """The previous fast path: ``math.fsum`` per vector (exact, one Python call per vector).
    Kept as a second exact implementation for the tests and as the benchmark's baseline."""
    rows = _as_float64_rows(keys)
    if np.isnan(rows).any():
        return CANONICAL_NAN
    if np.isinf(rows).any():
        return math.inf
    squares = rows * rows
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
