"""The order key (claim C5): ``spec.order_key`` in Z3, pinned to IEEE totalOrder and to the code.

Encoding.  ``m`` is carried as its float64 bit pattern ``b : (_ BitVec 64)``; the IEEE value is
``((_ to_fp 11 53) b)`` (SMT-LIB reinterpretation, standard in Z3 and cvc5).  Going from bits to
float, not back with ``fp.to_ieee_bv``, is deliberate: SMT-LIB has a single NaN, so
``fp.to_ieee_bv`` cannot say which payload a NaN has, while the key is defined on the bits and
must separate NaN payloads.

The key is ``order_key(m, cid) = concat(total_order_bits(m), cid)`` (320 bits) compared with
``bvult``: the bytes of ``spec.order_key`` are that big-endian integer, and bytewise comparison
of equal-length byte strings is unsigned comparison of it.  Fragments are the uninterpreted
sort of ``proofs.vocabulary``; ``m_bits`` gives each its key's float64 pattern.

What pins the key (each law takes the key as a parameter, so a wrong key can be shown to fail):
- ``ieee_total_order_lt`` is IEEE 754-2019 §5.10 totalOrder written from the clause itself
  (numbers by ``fp.lt``, -0 below +0, NaNs by sign then quiet bit then payload), independently
  of the bit trick in ``total_order_bits``; it is checked to be a strict total order;
- the key is strictly monotone in ``m`` under it for any ids, breaks ties in ``m`` by the id,
  and is injective: together the key order IS (totalOrder on m, then id);
- ``c5_link_total_order_bits`` proves, for all 2**64 patterns, that ``total_order_bits`` equals
  ``spec.total_order_bits_branch_free`` applied to the same Z3 word (the code itself, run on a
  symbolic input), so a change to either side fails; ``proofs.links`` compares the 40 bytes of
  ``spec.order_key`` with ``order_key`` on concrete patterns."""

from __future__ import annotations

from collections.abc import Callable

import z3

from proofs.obligation import Goal, Obligation, Result, law, premise
from proofs.vocabulary import FRAG, ID_BITS, cid, fragments, hash_injective
from proofs.witness import as_int, float64_text, frag_text, id_text
from spec.ordering import total_order_bits_branch_free

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


KeyOf = Callable[[z3.BitVecRef, z3.BitVecRef], z3.BitVecRef]
Key = Callable[[z3.ExprRef], z3.BitVecRef]


def order_key(m: z3.BitVecRef, content_id: z3.BitVecRef) -> z3.BitVecRef:
    """``spec.order_key``: (total_order_bits(m), content id), as one 320-bit unsigned integer."""
    return z3.Concat(total_order_bits(m), content_id)


def key_without_tiebreak_of(m: z3.BitVecRef, content_id: z3.BitVecRef) -> z3.BitVecRef:
    """A wrong key: the content-id tie-break dropped (for the expected refutations)."""
    return total_order_bits(m)


def fragment_key(key_of: KeyOf) -> Key:
    """The key of a fragment under the key function ``key_of``."""
    return lambda f: key_of(m_bits(f), cid(f))


def full_key(f: z3.ExprRef) -> z3.BitVecRef:
    """The order key of fragment ``f``."""
    return order_key(m_bits(f), cid(f))


key_without_tiebreak = fragment_key(key_without_tiebreak_of)


def key_lt(key: Key) -> Callable[[z3.ExprRef, z3.ExprRef], z3.BoolRef]:
    return lambda f, g: z3.ULT(key(f), key(g))


def key_le(key: Key) -> Callable[[z3.ExprRef, z3.ExprRef], z3.BoolRef]:
    return lambda f, g: z3.ULE(key(f), key(g))


def ieee_total_order_lt(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BoolRef:
    """totalOrder(x, y) and x != y for the float64 patterns ``a``, ``b`` (IEEE 754-2019 §5.10):
    numbers by value (``fp.lt``), -0 below +0; a negative-signed NaN below every number and a
    positive-signed NaN above; two NaNs by sign, then (for +NaN) signaling below quiet and the
    lesser payload below the greater, both reversed for -NaN."""
    x, y = as_float64(a), as_float64(b)
    neg_a, neg_b = z3.Extract(63, 63, a) == 1, z3.Extract(63, 63, b) == 1
    nan_a, nan_b = z3.fpIsNaN(x), z3.fpIsNaN(y)
    quiet_a, quiet_b = z3.Extract(51, 51, a), z3.Extract(51, 51, b)
    payload_a, payload_b = z3.Extract(50, 0, a), z3.Extract(50, 0, b)

    def nan_rank_lt(qa: z3.BitVecRef, pa: z3.BitVecRef, qb: z3.BitVecRef, pb: z3.BitVecRef) -> z3.BoolRef:
        return z3.Or(z3.ULT(qa, qb), z3.And(qa == qb, z3.ULT(pa, pb)))

    numbers = z3.Or(z3.fpLT(x, y), z3.And(z3.fpIsZero(x), z3.fpIsZero(y), neg_a, z3.Not(neg_b)))
    nans = z3.Or(z3.And(neg_a, z3.Not(neg_b)),
                 z3.And(z3.Not(neg_a), z3.Not(neg_b), nan_rank_lt(quiet_a, payload_a, quiet_b, payload_b)),
                 z3.And(neg_a, neg_b, nan_rank_lt(quiet_b, payload_b, quiet_a, payload_a)))
    return z3.If(z3.And(z3.Not(nan_a), z3.Not(nan_b)), numbers,
                 z3.If(z3.And(nan_a, z3.Not(nan_b)), neg_a,
                       z3.If(z3.And(z3.Not(nan_a), nan_b), z3.Not(neg_b), nans)))


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


def plain_patterns(words: list[z3.BitVecRef], ids: list[z3.BitVecRef] = ()) -> list[z3.BoolRef]:
    """Witness preference for free patterns and ids, as ``plain_fragments``."""
    return [z3.Or([w == v for v in PLAIN_FLOATS]) for w in words] + [z3.ULT(i, 16) for i in ids]


def fragment_witness(frags: list[z3.ExprRef]) -> Callable[[z3.ModelRef], dict[str, str]]:
    """Each fragment as ``f0: m = 0x3ff0000000000000 (1.0), cid = id 0x1``."""
    def describe(model: z3.ModelRef) -> dict[str, str]:
        return {str(f): (f"{frag_text(model.eval(f, model_completion=True))}: "
                         f"m = {float64_text(as_int(model, m_bits(f)))}, "
                         f"cid = {id_text(as_int(model, cid(f)))}") for f in frags}
    return describe


def _pattern_witness(words: list[z3.BitVecRef],
                     ids: list[z3.BitVecRef] = ()) -> Callable[[z3.ModelRef], dict[str, str]]:
    def describe(model: z3.ModelRef) -> dict[str, str]:
        out = {str(w): float64_text(as_int(model, w)) for w in words}
        out.update({str(i): id_text(as_int(model, i)) for i in ids})
        return out
    return describe


# ----------------------------------------------------------------------------- order laws of bvult / bvule

def lt_transitive_at(x: z3.BitVecRef, y: z3.BitVecRef, z: z3.BitVecRef) -> z3.BoolRef:
    return z3.Implies(z3.And(z3.ULT(x, y), z3.ULT(y, z)), z3.ULT(x, z))


def lt_total_at(x: z3.BitVecRef, y: z3.BitVecRef) -> z3.BoolRef:
    return z3.Implies(x != y, z3.Or(z3.ULT(x, y), z3.ULT(y, x)))


def le_transitive_at(x: z3.BitVecRef, y: z3.BitVecRef, z: z3.BitVecRef) -> z3.BoolRef:
    return z3.Implies(z3.And(z3.ULE(x, y), z3.ULE(y, z)), z3.ULE(x, z))


def le_antisymmetric_at(x: z3.BitVecRef, y: z3.BitVecRef) -> z3.BoolRef:
    return z3.Implies(z3.And(z3.ULE(x, y), z3.ULE(y, x)), x == y)


ORDER_LAWS_KEPT = ("a theorem of bit-vector arithmetic, proved on free words of the key's width by "
                   "c5_unsigned_order_laws; given so the solver need not re-derive it by bit-blasting "
                   "the 320-bit comparators")


def unsigned_order_laws(width: int | None = None) -> Goal:
    """bvult is a strict total order and bvule a total order on words of the key's width."""
    bits = full_key(fragments("f")[0]).size() if width is None else width
    x, y, z = z3.BitVecs("x y z", bits)
    laws = [lt_transitive_at(x, y, z), lt_total_at(x, y), le_transitive_at(x, y, z), le_antisymmetric_at(x, y)]
    claim = z3.And(z3.Not(z3.ULT(x, x)), *laws)
    return Goal([], claim, "QF_BV")


# ----------------------------------------------------------------------------- laws

def ieee_reference_is_strict_total() -> Goal:
    """The independently written totalOrder is irreflexive, transitive and total on distinct
    patterns: so a key monotone in it orders distinct ``m`` exactly as it does."""
    a, b, c = z3.BitVecs("a b c", 64)
    lt = ieee_total_order_lt
    claim = z3.And(
        z3.Not(lt(a, a)),
        z3.Implies(z3.And(lt(a, b), lt(b, c)), lt(a, c)),
        z3.Implies(a != b, z3.Or(lt(a, b), lt(b, a))),
    )
    return Goal([], claim, "QF_BVFP", _pattern_witness([a, b, c]), plain_patterns([a, b, c]))


def _pattern_frame() -> tuple[z3.BitVecRef, z3.BitVecRef, z3.BitVecRef, z3.BitVecRef]:
    a, b = z3.BitVecs("a b", 64)
    c, d = z3.BitVecs("c d", ID_BITS)
    return a, b, c, d


def monotone_in_m(key_of: KeyOf = order_key) -> Goal:
    """If ``m`` is below ``m'`` in IEEE totalOrder, the key is smaller, whatever the two ids."""
    a, b, c, d = _pattern_frame()
    return law([], [ieee_total_order_lt(a, b)], z3.ULT(key_of(a, c), key_of(b, d)), "QF_BVFP",
               _pattern_witness([a, b], [c, d]), plain_patterns([a, b], [c, d]))


def ties_broken_by_id(key_of: KeyOf = order_key) -> Goal:
    """Equal ``m``: the smaller content id has the smaller key (the tie-break is the id)."""
    a, _, c, d = _pattern_frame()
    return law([], [z3.ULT(c, d)], z3.ULT(key_of(a, c), key_of(a, d)), "QF_BV",
               _pattern_witness([a], [c, d]), plain_patterns([a], [c, d]))


def injective(key_of: KeyOf = order_key) -> Goal:
    """Distinct (m pattern, id) pairs have distinct keys: -0/+0 and NaN payloads never tie."""
    a, b, c, d = _pattern_frame()
    return law([], [z3.Or(a != b, c != d)], key_of(a, c) != key_of(b, d), "QF_BV",
               _pattern_witness([a, b], [c, d]), plain_patterns([a, b], [c, d]))


def strict_total_on_distinct(key: Key = full_key) -> Goal:
    """Irreflexive, transitive and total on distinct fragments (asymmetry follows), with
    hash-injectivity instantiated at the three fragments.  What is particular to the key is
    that distinct fragments get distinct words; that bvult orders distinct words strictly and
    totally is ``c5_unsigned_order_laws``, given here at the three keys."""
    f, g, h = fragments("f g h")
    lt = key_lt(key)
    kf, kg, kh = key(f), key(g), key(h)
    claim = z3.And(
        z3.Not(lt(f, f)),
        z3.Implies(z3.And(lt(f, g), lt(g, h)), lt(f, h)),
        z3.Implies(f != g, z3.Or(lt(f, g), lt(g, f))),
    )
    premises = [premise("hash-injectivity", *hash_injective([f, g, h])),
                premise("bvult order laws at the three keys", lt_transitive_at(kf, kg, kh), lt_total_at(kf, kg),
                        kept=ORDER_LAWS_KEPT)]
    return Goal(premises, claim, "QF_UFBV", fragment_witness([f, g, h]), plain_fragments([f, g, h]))


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
    premises = [] if allow_nan else [premise("no NaN", *(z3.Not(z3.fpIsNaN(as_float64(m_bits(t)))) for t in (f, g, h)))]
    return Goal(premises, claim, "QF_UFBVFP", fragment_witness([f, g, h]), plain_fragments([f, g, h]))


def link_total_order_bits() -> Goal:
    """For all 2**64 patterns: the encoding ``total_order_bits`` equals the code,
    ``spec.total_order_bits_branch_free``, run on the same symbolic 64-bit word."""
    b = z3.BitVec("b", 64)
    code = total_order_bits_branch_free(b)
    if not (z3.is_bv(code) and code.size() == 64):
        raise TypeError(f"spec.total_order_bits_branch_free returned {code!r}, not a 64-bit word")
    return Goal([], total_order_bits(b) == code, "QF_BV", _pattern_witness([b]), plain_patterns([b]))


OBLIGATIONS: list[Obligation] = [
    Obligation("c5_ieee_total_order_reference", "C5",
               "IEEE totalOrder, written from the standard's clause (fp.lt, -0 < +0, NaNs by sign, quiet "
               "bit, payload), is a strict total order on distinct float64 patterns", Result.PROVED,
               ieee_reference_is_strict_total),
    Obligation("c5_unsigned_order_laws", "C5",
               "on words of the key's width, bvult is irreflexive, transitive and total and bvule is "
               "transitive and antisymmetric (the laws other obligations take as premises)", Result.PROVED,
               unsigned_order_laws),
    Obligation("c5_key_monotone_in_m", "C5",
               "m below m' in IEEE totalOrder implies order_key(m, c) < order_key(m', d) for all ids c, d",
               Result.PROVED, monotone_in_m),
    Obligation("c5_key_ties_broken_by_id", "C5",
               "equal m: c < d implies order_key(m, c) < order_key(m, d) (the tie-break is the content id)",
               Result.PROVED, ties_broken_by_id),
    Obligation("c5_key_injective", "C5",
               "distinct (m bit pattern, id) pairs have distinct keys (-0/+0 and NaN payloads never tie)",
               Result.PROVED, injective),
    Obligation("c5_key_strict_total", "C5",
               "(total_order_bits(m), cid) under bytewise < is irreflexive, transitive and total on "
               "distinct fragments, given hash-injectivity", Result.PROVED, strict_total_on_distinct),
    Obligation("c5_key_without_tiebreak_not_total", "C5",
               "total_order_bits(m) alone is not total on distinct fragments (equal m ties)",
               Result.REFUTED, lambda: strict_total_on_distinct(key_without_tiebreak)),
    Obligation("c5_naive_float_lt_not_strict_weak", "C5",
               "float < on m, then id, is not a strict weak order: a NaN is incomparable to both "
               "of two ordered values", Result.REFUTED, naive_is_strict_weak),
    Obligation("c5_link_total_order_bits", "C5",
               "code link, all 2**64 patterns: the encoding total_order_bits equals "
               "spec.total_order_bits_branch_free run on the same Z3 word", Result.PROVED,
               link_total_order_bits),
]
