"""The key function proved is the one the code runs.  Inside ``prove``, ``c5_link_total_order_bits``
proves the encoding equal to ``spec``'s own function run on a Z3 word (all 2**64 patterns) and
``c5_link_order_key`` compares the 40 bytes on special patterns; here the same terms are also
evaluated on random float64 patterns and full keys (Hypothesis), as an independent route."""

import struct

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs
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


def bits_of(x: float) -> int:
    return int.from_bytes(struct.pack(">d", x), "big")


def test_the_code_runs_on_z3_words_and_is_proved_equal_to_the_encoding():
    """What ``c5_link_total_order_bits`` proves inside ``prove`` for all 2**64 patterns; here also
    shown to fail for a wrong encoding (the source-level cases are in test_proofs_planted.py)."""
    from proofs.discharge import discharge
    from proofs.obligation import Obligation, Result
    from spec.ordering import total_order_bits_branch_free

    word = total_order_bits_branch_free(M)
    assert z3.is_bv(word) and word.size() == 64
    link = next(ob for ob in proofs.OBLIGATIONS if ob.name == "c5_link_total_order_bits")
    assert discharge(link, 30).result == Result.PROVED
    wrong = z3.If(z3.Extract(63, 63, M) == 1, M ^ z3.BitVecVal(1 << 63, 64), M | z3.BitVecVal(1 << 63, 64))
    broken = Obligation("wrong", "C5", "a wrong encoding", Result.PROVED,
                        lambda: ordering.Goal([], wrong == total_order_bits_branch_free(M), "QF_BV"))
    verdict = discharge(broken, 30)
    assert verdict.result == Result.REFUTED


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
