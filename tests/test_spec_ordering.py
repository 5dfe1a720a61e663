"""C5 at the spec level: total_order_bits is IEEE totalOrder; canonical_order ignores input order.

Negative tests show the permutation check catches the naive key (m, id) when m is NaN."""

import hashlib
import itertools
import math
import struct

from hypothesis import given
from hypothesis import strategies as st

from spec import canonical_order, order_key, total_order_bits, total_order_bits_of_pattern


def f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def half_bits_to_f64_bits(h: int) -> int:
    """Widen a float16 bit pattern to float64 exactly, NaN payload and sign included."""
    sign, exp, frac = h >> 15, (h >> 10) & 0x1F, h & 0x3FF
    if exp == 0x1F:
        return (sign << 63) | (0x7FF << 52) | (frac << 42)
    value = struct.unpack("<e", struct.pack("<H", h))[0]  # exact for finite values
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return bits


def is_nan_bits(b: int) -> bool:
    return (b >> 52) & 0x7FF == 0x7FF and b & ((1 << 52) - 1) != 0


def check_total_order_on(patterns: list[int]) -> None:
    """The rank is injective, and sorting by it is consistent with IEEE `<` on non-NaN values."""
    patterns = sorted(set(patterns))
    ranks = [total_order_bits_of_pattern(b) for b in patterns]
    assert len(set(ranks)) == len(patterns), "two distinct patterns share a rank"
    assert all(0 <= r < 2**64 for r in ranks)
    ordered = [b for _, b in sorted(zip(ranks, patterns))]
    finite_or_inf = [b for b in ordered if not is_nan_bits(b)]
    for lo, hi in itertools.pairwise(finite_or_inf):
        x, y = f64(lo), f64(hi)
        assert x < y or (x == y == 0.0 and math.copysign(1, x) < 0 < math.copysign(1, y)), (x, y)
    # negative NaNs sort below everything else, positive NaNs above
    signs = [(b >> 63, is_nan_bits(b)) for b in ordered]
    neg_nans = [i for i, (s, n) in enumerate(signs) if n and s]
    pos_nans = [i for i, (s, n) in enumerate(signs) if n and not s]
    non_nan = [i for i, (_, n) in enumerate(signs) if not n]
    if neg_nans and non_nan:
        assert max(neg_nans) < min(non_nan)
    if pos_nans and non_nan:
        assert min(pos_nans) > max(non_nan)


def test_every_float16_pattern_widened_to_float64():
    check_total_order_on([half_bits_to_f64_bits(h) for h in range(1 << 16)])


@given(st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=200))
def test_random_float64_patterns(patterns):
    check_total_order_on(patterns)


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_agrees_with_ieee_less_than_on_non_nan_pairs(a, b):
    x, y = f64(a), f64(b)
    if math.isnan(x) or math.isnan(y):
        return
    if x < y:
        assert total_order_bits(x) < total_order_bits(y)
    if total_order_bits(x) < total_order_bits(y):
        assert x < y or (x == y == 0.0)


def test_special_values_in_their_places():
    neg_nan = f64(0xFFF8000000000000)
    neg_nan_payload = f64(0xFFF0000000000001)
    pos_nan_payload = f64(0x7FF0000000000001)
    pos_nan = f64(0x7FF8000000000000)
    smallest_sub = f64(1)
    ladder = [neg_nan, neg_nan_payload, -math.inf, -1.0, -smallest_sub, -0.0, 0.0, smallest_sub,
              f64(0x000FFFFFFFFFFFFF), 2.2250738585072014e-308, 1.0, math.inf, pos_nan_payload, pos_nan]
    ranks = [total_order_bits(x) for x in ladder]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)


# --- canonical_order ignores input order -------------------------------------------------

def cid(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(4, "big")).digest()


special_m = st.sampled_from([math.nan, -math.nan, 0.0, -0.0, math.inf, -math.inf, 1.0, 5e-324])
ms = st.one_of(special_m, st.floats(allow_nan=True, allow_infinity=True))
fragments = st.lists(st.tuples(ms, st.integers(0, 10_000)), min_size=1, max_size=8,
                     unique_by=lambda t: t[1]).map(lambda xs: [(m, cid(i)) for m, i in xs])


def canonical_key(item):
    return order_key(item[0], item[1])


def naive_key(item):
    return (item[0], item[1])


def ids_in_order(items, key):
    return [c for _, c in canonical_order(items, key)]


@given(fragments.flatmap(lambda xs: st.tuples(st.just(xs), st.permutations(xs))))
def test_canonical_order_is_the_same_for_every_permutation(pair):
    items, shuffled = pair
    assert ids_in_order(items, canonical_key) == ids_in_order(shuffled, canonical_key)


def first_order_dependence(items, key):
    """The permutation check used above, made explicit: a permutation whose order differs."""
    reference = ids_in_order(items, key)
    for perm in itertools.permutations(items):
        if ids_in_order(list(perm), key) != reference:
            return list(perm)
    return None


def test_negative_naive_tuple_key_with_nan_depends_on_input_order():
    items = [(math.nan, cid(1)), (1.0, cid(2)), (0.5, cid(3))]
    assert first_order_dependence(items, naive_key) is not None
    assert first_order_dependence(items, canonical_key) is None


def test_negative_order_key_without_tie_break_depends_on_input_order():
    items = [(2.0, cid(1)), (2.0, cid(2)), (1.0, cid(3))]
    assert first_order_dependence(items, lambda it: total_order_bits(it[0])) is not None
    assert first_order_dependence(items, canonical_key) is None


def test_canonical_order_gathers_the_original_objects():
    a, b = (-0.0, cid(1)), (0.0, cid(2))
    out = canonical_order([b, a], canonical_key)
    assert out[0] is a and out[1] is b
