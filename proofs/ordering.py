"""The order key (claim C5): ``spec.total_order_bits_of_pattern`` in Z3, and its laws.

Encoding.  ``m`` is carried as its float64 bit pattern ``b : (_ BitVec 64)``; the IEEE value is
``((_ to_fp 11 53) b)`` (SMT-LIB reinterpretation, standard in Z3 and cvc5).  Going from bits to
float, not back with ``fp.to_ieee_bv``, is deliberate: SMT-LIB has a single NaN, so
``fp.to_ieee_bv`` cannot say which payload a NaN has, while the key is defined on the bits and
must separate NaN payloads.  ``total_order_bits`` below is the same bit-vector expression as
``spec.total_order_bits_of_pattern`` (``tests/test_proofs_ordering.py`` evaluates both on every
float16 and bfloat16 pattern widened to float64 and on random float64 patterns).

The full key is ``concat(total_order_bits(m), cid)`` (320 bits) compared with ``bvult``: the
bytes of ``spec.order_key`` are that big-endian integer, and bytewise comparison of equal-length
byte strings is unsigned comparison of it.  Fragments are the uninterpreted sort of
``proofs.vocabulary``; ``m_bits`` gives each its key's float64 pattern."""

from __future__ import annotations

from collections.abc import Callable

import z3

from proofs.obligation import Goal, Obligation, Result
from proofs.vocabulary import FRAG, cid, fragments, hash_injective
from proofs.witness import as_int, float64_text, frag_text, id_text

_ALL = (1 << 64) - 1
_SIGN = 1 << 63

m_bits = z3.Function("m_bits", FRAG, z3.BitVecSort(64))


def total_order_bits(bits: z3.BitVecRef) -> z3.BitVecRef:
    """``spec.total_order_bits_of_pattern``: flip all bits of negatives, set the sign bit of
    non-negatives, so unsigned order is IEEE-754 totalOrder."""
    negative = z3.Extract(63, 63, bits) == 1
    return z3.If(negative, bits ^ z3.BitVecVal(_ALL, 64), bits | z3.BitVecVal(_SIGN, 64))


def as_float64(bits: z3.BitVecRef) -> z3.FPRef:
    """The IEEE value with bit pattern ``bits`` (every NaN pattern is SMT-LIB's one NaN)."""
    return z3.fpBVToFP(bits, z3.Float64())


Key = Callable[[z3.ExprRef], z3.BitVecRef]


def order_key(m: z3.BitVecRef, content_id: z3.BitVecRef) -> z3.BitVecRef:
    """``spec.order_key``: (total_order_bits(m), content id), as one 320-bit unsigned integer."""
    return z3.Concat(total_order_bits(m), content_id)


def full_key(f: z3.ExprRef) -> z3.BitVecRef:
    """The order key of fragment ``f``."""
    return order_key(m_bits(f), cid(f))


def key_without_tiebreak(f: z3.ExprRef) -> z3.BitVecRef:
    """The key with the content-id tie-break dropped (a wrong key, for the refutation)."""
    return total_order_bits(m_bits(f))


def key_lt(key: Key) -> Callable[[z3.ExprRef, z3.ExprRef], z3.BoolRef]:
    return lambda f, g: z3.ULT(key(f), key(g))


def naive_lt(f: z3.ExprRef, g: z3.ExprRef) -> z3.BoolRef:
    """Python's ``(m, id) < (m', id')`` on floats: ``m < m'``, or ``m == m'`` and ``id < id'``."""
    x, y = as_float64(m_bits(f)), as_float64(m_bits(g))
    return z3.Or(z3.fpLT(x, y), z3.And(z3.fpEQ(x, y), z3.ULT(cid(f), cid(g))))


PLAIN_FLOATS = (0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0x4000000000000000,
                0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000000)


def plain_fragments(frags: list[z3.ExprRef]) -> list[z3.BoolRef]:
    """Witness preference: tiny ids and m among 0, -0, 1, 2, +-NaN, +inf."""
    small = [z3.ULT(cid(f), 16) for f in frags]
    plain = [z3.Or([m_bits(f) == v for v in PLAIN_FLOATS]) for f in frags]
    return small + plain


def fragment_witness(frags: list[z3.ExprRef]) -> Callable[[z3.ModelRef], dict[str, str]]:
    """Each fragment as ``f0: m = 0x3ff0000000000000 (1.0), cid = id 0x1``."""
    def describe(model: z3.ModelRef) -> dict[str, str]:
        return {str(f): (f"{frag_text(model.eval(f, model_completion=True))}: "
                         f"m = {float64_text(as_int(model, m_bits(f)))}, "
                         f"cid = {id_text(as_int(model, cid(f)))}") for f in frags}
    return describe


def _bits_witness(names: list[z3.BitVecRef]) -> Callable[[z3.ModelRef], dict[str, str]]:
    def describe(model: z3.ModelRef) -> dict[str, str]:
        return {str(b): float64_text(as_int(model, b)) for b in names}
    return describe


# ----------------------------------------------------------------------------- laws

def strict_total_on_distinct(key: Key = full_key) -> Goal:
    """Irreflexive, transitive and total on distinct fragments (asymmetry follows), with
    hash-injectivity instantiated at the three fragments."""
    f, g, h = fragments("f g h")
    lt = key_lt(key)
    claim = z3.And(
        z3.Not(lt(f, f)),
        z3.Implies(z3.And(lt(f, g), lt(g, h)), lt(f, h)),
        z3.Implies(f != g, z3.Or(lt(f, g), lt(g, f))),
    )
    return Goal(hash_injective([f, g, h]), claim, "QF_UFBV", fragment_witness([f, g, h]),
                plain_fragments([f, g, h]))


def naive_is_strict_weak(allow_nan: bool = True) -> Goal:
    """Strict weak order: irreflexive, transitive, and incomparability is transitive.
    With ``allow_nan=False`` it is proved, which shows NaN is the only way it fails."""
    f, g, h = fragments("f g h")

    def incomparable(p: z3.ExprRef, q: z3.ExprRef) -> z3.BoolRef:
        return z3.And(z3.Not(naive_lt(p, q)), z3.Not(naive_lt(q, p)))

    claim = z3.And(
        z3.Not(naive_lt(f, f)),
        z3.Implies(z3.And(naive_lt(f, g), naive_lt(g, h)), naive_lt(f, h)),
        z3.Implies(z3.And(incomparable(f, g), incomparable(g, h)), incomparable(f, h)),
    )
    premises = hash_injective([f, g, h])
    if not allow_nan:
        premises += [z3.Not(z3.fpIsNaN(as_float64(m_bits(t)))) for t in (f, g, h)]
    return Goal(premises, claim, "QF_UFBVFP", fragment_witness([f, g, h]),
                plain_fragments([f, g, h]))


def bits_agree_with_ieee_lt() -> Goal:
    """On non-NaN values: ``x < y`` implies key(x) < key(y), and key(x) < key(y) implies
    ``x < y`` unless both are zeros (where the key puts -0 first)."""
    a, b = z3.BitVecs("a b", 64)
    x, y = as_float64(a), as_float64(b)
    ka, kb = total_order_bits(a), total_order_bits(b)
    claim = z3.And(
        z3.Implies(z3.fpLT(x, y), z3.ULT(ka, kb)),
        z3.Implies(z3.ULT(ka, kb), z3.Or(z3.fpLT(x, y), z3.And(z3.fpIsZero(x), z3.fpIsZero(y)))),
    )
    premises = [z3.Not(z3.fpIsNaN(x)), z3.Not(z3.fpIsNaN(y))]
    return Goal(premises, claim, "QF_BVFP", _bits_witness([a, b]))


def bits_injective() -> Goal:
    """Distinct float64 patterns get distinct keys: -0/+0 and NaN payloads never tie."""
    a, b = z3.BitVecs("a b", 64)
    claim = z3.Implies(a != b, total_order_bits(a) != total_order_bits(b))
    return Goal([], claim, "QF_BV", _bits_witness([a, b]))


def bits_place_zeros_and_nans() -> Goal:
    """-0 sorts just below +0; +NaNs above every non-NaN, -NaNs below every non-NaN."""
    a, b = z3.BitVecs("a b", 64)
    x, y = as_float64(a), as_float64(b)
    ka, kb = total_order_bits(a), total_order_bits(b)
    minus_zero, plus_zero = z3.BitVecVal(_SIGN, 64), z3.BitVecVal(0, 64)
    positive = z3.Extract(63, 63, a) == 0
    claim = z3.And(
        z3.ULT(total_order_bits(minus_zero), total_order_bits(plus_zero)),
        total_order_bits(plus_zero) - total_order_bits(minus_zero) == 1,
        z3.Implies(z3.And(z3.fpIsNaN(x), z3.Not(z3.fpIsNaN(y)), positive), z3.ULT(kb, ka)),
        z3.Implies(z3.And(z3.fpIsNaN(x), z3.Not(z3.fpIsNaN(y)), z3.Not(positive)), z3.ULT(ka, kb)),
    )
    return Goal([], claim, "QF_BVFP", _bits_witness([a, b]))


OBLIGATIONS: list[Obligation] = [
    Obligation("c5_bits_agree_with_ieee_lt", "C5",
               "on non-NaN float64, total_order_bits agrees with IEEE <, except that -0 < +0",
               Result.PROVED, bits_agree_with_ieee_lt),
    Obligation("c5_bits_injective", "C5",
               "distinct float64 bit patterns have distinct total_order_bits (-0/+0, NaN payloads)",
               Result.PROVED, bits_injective),
    Obligation("c5_bits_zeros_and_nans", "C5",
               "-0 is immediately below +0; +NaN above and -NaN below every non-NaN value",
               Result.PROVED, bits_place_zeros_and_nans),
    Obligation("c5_key_strict_total", "C5",
               "(total_order_bits(m), cid) under bytewise < is irreflexive, transitive and total on "
               "distinct fragments, given hash-injectivity", Result.PROVED, strict_total_on_distinct),
    Obligation("c5_key_without_tiebreak_not_total", "C5",
               "total_order_bits(m) alone is not total on distinct fragments (equal m ties)",
               Result.REFUTED, lambda: strict_total_on_distinct(key_without_tiebreak)),
    Obligation("c5_naive_float_lt_not_strict_weak", "C5",
               "float < on m, then id, is not a strict weak order: a NaN is incomparable to both "
               "of two ordered values", Result.REFUTED, naive_is_strict_weak),
]
