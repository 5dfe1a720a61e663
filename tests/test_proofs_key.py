"""The key function proved is the one the code runs: the Z3 term ``proofs.ordering``
reasons about is evaluated on concrete bit patterns and compared with ``spec``'s Python.

Exhaustive over every float16 and every bfloat16 pattern widened exactly to float64 (sign,
exponent, and NaN payload in the top mantissa bits), and randomized (Hypothesis) over float64
patterns and full keys."""

import struct

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs import ordering, render
from proofs.vocabulary import ID_BITS, cid
from spec import canonical_order, order_key, total_order_bits, total_order_bits_of_pattern

M = z3.BitVec("m", 64)
KEY_TERM = ordering.total_order_bits(M)


def z3_key(patterns):
    """Evaluate the Z3 key term on each pattern (substitute a numeral, simplify to a value)."""
    out = []
    for bits in patterns:
        value = z3.simplify(z3.substitute(KEY_TERM, (M, z3.BitVecVal(bits, 64))))
        assert z3.is_bv_value(value), value
        out.append(value.as_long())
    return out


def widen(bits: int, exp_bits: int, man_bits: int) -> int:
    """Exact widening of a binary float pattern to float64 (NaN payload kept in the top bits)."""
    sign = bits >> (exp_bits + man_bits)
    exp = (bits >> man_bits) & ((1 << exp_bits) - 1)
    man = bits & ((1 << man_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    if exp == (1 << exp_bits) - 1:
        return sign << 63 | 0x7FF << 52 | man << (52 - man_bits)
    if exp == 0:
        if man == 0:
            return sign << 63
        width = man.bit_length()                       # value = man * 2**(1 - bias - man_bits)
        exponent = width - 1 + 1 - bias - man_bits
        fraction = (man << (53 - width)) & ((1 << 52) - 1)
        return sign << 63 | (exponent + 1023) << 52 | fraction
    return sign << 63 | (exp - bias + 1023) << 52 | man << (52 - man_bits)


def float16_patterns():
    return [widen(h, 5, 10) for h in range(1 << 16)]


def bfloat16_patterns():
    return [widen(b, 8, 7) for b in range(1 << 16)]


def bits_of(x: float) -> int:
    return int.from_bytes(struct.pack(">d", x), "big")


def test_widening_is_exact():
    for h in range(1 << 16):
        w = widen(h, 5, 10)
        (x,) = struct.unpack("<e", h.to_bytes(2, "little"))
        if x != x:  # NaN: sign and payload carried, quiet bit included
            assert w >> 63 == h >> 15 and (w >> 52) & 0x7FF == 0x7FF
            assert (w & ((1 << 52) - 1)) >> 42 == h & 0x3FF and w & ((1 << 42) - 1) == 0
        else:
            assert w == bits_of(x), hex(h)
    for b in range(1 << 16):
        w = widen(b, 8, 7)
        (x,) = struct.unpack(">f", (b << 16).to_bytes(4, "big"))
        if x != x:
            assert w >> 63 == b >> 15 and (w & ((1 << 52) - 1)) >> 45 == b & 0x7F
        else:
            assert w == bits_of(x), hex(b)


def test_widened_patterns_are_distinct_and_cover_specials():
    for patterns in (float16_patterns(), bfloat16_patterns()):
        assert len(set(patterns)) == 1 << 16
        assert {0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000} <= set(patterns)


def test_z3_key_equals_spec_on_every_float16_pattern():
    patterns = float16_patterns()
    assert z3_key(patterns) == [total_order_bits_of_pattern(p) for p in patterns]


def test_z3_key_equals_spec_on_every_bfloat16_pattern():
    patterns = bfloat16_patterns()
    assert z3_key(patterns) == [total_order_bits_of_pattern(p) for p in patterns]


@settings(max_examples=300)
@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=50))
def test_z3_key_equals_spec_on_random_float64_patterns(patterns):
    assert z3_key(patterns) == [total_order_bits_of_pattern(p) for p in patterns]


@settings(max_examples=200)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_z3_key_equals_spec_on_python_floats(x):
    assert z3_key([bits_of(x)]) == [total_order_bits(x)]


def z3_full_key(m: int, content_id: bytes) -> int:
    term = ordering.order_key(z3.BitVecVal(m, 64), z3.BitVecVal(int.from_bytes(content_id, "big"), ID_BITS))
    return z3.simplify(term).as_long()


fragment = st.tuples(st.integers(0, (1 << 64) - 1), st.binary(min_size=32, max_size=32))


@settings(max_examples=200)
@given(fragment, fragment)
def test_z3_full_key_is_spec_order_key_and_orders_alike(p, q):
    for m, content_id in (p, q):
        (x,) = struct.unpack(">d", m.to_bytes(8, "big"))
        assert z3_full_key(m, content_id) == int.from_bytes(order_key(x, content_id), "big")
    (xp,), (xq,) = struct.unpack(">d", p[0].to_bytes(8, "big")), struct.unpack(">d", q[0].to_bytes(8, "big"))
    spec_less = order_key(xp, p[1]) < order_key(xq, q[1])
    assert spec_less == (z3_full_key(*p) < z3_full_key(*q))


@settings(max_examples=40)
@given(fragment, fragment)
def test_z3_two_item_render_is_spec_canonical_order(p, q):
    """``render.canonical_pair`` (the C6 encoding) picks what ``spec.canonical_order`` picks."""
    f, g = z3.Consts("f g", ordering.FRAG)
    solver = z3.Solver()
    for term, (m, content_id) in ((f, p), (g, q)):
        solver.add(ordering.m_bits(term) == m, cid(term) == int.from_bytes(content_id, "big"))
    solver.add(f != g)
    assert solver.check() == z3.sat
    model = solver.model()
    first, _ = render.canonical_pair(f, g)
    z3_first = "f" if z3.is_true(model.eval(first == f, model_completion=True)) else "g"

    def key(item):
        name, (m, content_id) = item
        return order_key(struct.unpack(">d", m.to_bytes(8, "big"))[0], content_id)

    assert canonical_order([("f", p), ("g", q)], key)[0][0] == z3_first


def test_the_comparison_can_fail_for_a_wrong_key():
    """A classic bug (flip only the sign of negatives) must disagree with spec somewhere."""
    global KEY_TERM
    right = KEY_TERM
    try:
        KEY_TERM = z3.If(z3.Extract(63, 63, M) == 1, M ^ z3.BitVecVal(1 << 63, 64), M | z3.BitVecVal(1 << 63, 64))
        patterns = [bits_of(-1.0), bits_of(-2.0), bits_of(1.0)]
        assert z3_key(patterns) != [total_order_bits_of_pattern(p) for p in patterns]
    finally:
        KEY_TERM = right
