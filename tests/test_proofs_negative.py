"""Negative tests: the laws are encoded so that they CAN fail.  A wrong merge, a wrong key
(raw float bits, a constant m part, no tie-break), a missing premise or a naive float
comparison must be refuted, never proved.  The key is a parameter of every C5 and C3 law, so
each wrong key is run through the very obligations ``canonmerge prove`` runs."""

import pytest
import z3

from proofs import fragment_set, ordering, render
from proofs.discharge import discharge
from proofs.obligation import Obligation, Result
from proofs.runner import outcome_of
from spec import Outcome


def verdict_of(encode, expected=Result.PROVED, claim="C2"):
    return discharge(Obligation("negative", claim, "a law that must fail", expected, encode), timeout_s=60)


def test_intersection_is_not_inflationary():
    verdict = verdict_of(lambda: fragment_set.inflation(fragment_set.intersection))
    assert verdict.result == Result.REFUTED
    assert outcome_of(verdict) == Outcome.FAILS
    w = verdict.witness
    assert "a|b" in w and (w["a|b"] == "{}")
    assert w["a"] != "{}" or w["b"] != "{}"


def test_intersection_still_passes_the_laws_it_does_satisfy():
    # a sanity check that the refutation above is about inflation, not a broken encoding
    assert verdict_of(lambda: fragment_set.commutativity(fragment_set.intersection)).result == Result.PROVED


def test_union_by_id_without_injectivity_is_not_commutative():
    verdict = verdict_of(lambda: fragment_set.commutativity(injective=False), claim="C1")
    assert verdict.result == Result.REFUTED
    w = verdict.witness
    payloads = {w["a"], w["b"]}
    assert len(payloads) == 2                       # two different fragments...
    ids = {v for k, v in w.items() if k.startswith("cid(")}
    assert len(ids) == 1                            # ...with one content id
    assert w["a|b"] != w["b|a"]


def test_same_support_without_injectivity_is_not_convergent():
    verdict = verdict_of(lambda: fragment_set.same_support_same_state(injective=False), claim="C7")
    assert verdict.result == Result.REFUTED


def test_key_without_tiebreak_is_not_total_on_distinct_fragments():
    verdict = verdict_of(lambda: ordering.strict_total_on_distinct(ordering.key_without_tiebreak), claim="C5")
    assert verdict.result == Result.REFUTED
    assert outcome_of(verdict) == Outcome.FAILS
    ms = [v.split("m = ")[1].split(",")[0] for v in verdict.witness.values()]
    assert len(ms) != len(set(ms))                  # two fragments share m


def test_naive_float_order_fails_only_through_nan():
    verdict = verdict_of(ordering.naive_is_strict_weak, claim="C5")
    assert verdict.result == Result.REFUTED
    assert any("nan" in v for v in verdict.witness.values())
    without_nan = verdict_of(lambda: ordering.naive_is_strict_weak(allow_nan=False), claim="C5")
    assert without_nan.result == Result.PROVED


def raw_bits_key(m, content_id):
    """The m part as the raw float64 bits: wrong for negatives (-2 sorts above -1)."""
    return z3.Concat(m, content_id)


def constant_m_key(m, content_id):
    """The m part dropped: only the id orders."""
    return z3.Concat(z3.BitVecVal(0, 64), content_id)


def no_tiebreak_key(m, content_id):
    return z3.Concat(ordering.total_order_bits(m), z3.BitVecVal(0, content_id.size()))


C5_LAWS = {"c5_key_monotone_in_m": ordering.monotone_in_m, "c5_key_ties_broken_by_id": ordering.ties_broken_by_id,
           "c5_key_injective": ordering.injective}


def c5_failures(key_of) -> set[str]:
    return {name for name, law in C5_LAWS.items()
            if verdict_of(lambda law=law: law(key_of), claim="C5").result != Result.PROVED}


def test_the_real_key_passes_every_c5_law():
    assert c5_failures(ordering.order_key) == set()


@pytest.mark.parametrize("key_of, must_fail", [
    (raw_bits_key, {"c5_key_monotone_in_m"}),
    (constant_m_key, {"c5_key_monotone_in_m", "c5_key_injective"}),
    (no_tiebreak_key, {"c5_key_ties_broken_by_id", "c5_key_injective"}),
])
def test_a_wrong_key_fails_a_c5_law(key_of, must_fail):
    assert must_fail <= c5_failures(key_of)


def test_raw_bits_are_refuted_on_negative_numbers():
    verdict = verdict_of(lambda: ordering.monotone_in_m(raw_bits_key), claim="C5")
    assert verdict.result == Result.REFUTED
    assert "-" in verdict.witness["a"] + verdict.witness["b"]  # a negative value (or -0, -nan) is involved


def test_c3_tie_break_lemma_fails_without_tie_break_and_holds_with_any_m_part():
    """C3 rests on the tie-break only: any m part with the id appended is antisymmetric (C5 pins
    the m part), the key without the id is not."""
    without = verdict_of(lambda: render.key_le_antisymmetric(ordering.fragment_key(no_tiebreak_key)), claim="C3")
    assert without.result == Result.REFUTED
    with_raw_bits = verdict_of(lambda: render.key_le_antisymmetric(ordering.fragment_key(raw_bits_key)), claim="C3")
    assert with_raw_bits.result == Result.PROVED


def test_c3_statement_is_refuted_for_the_key_without_tie_break():
    verdict = verdict_of(lambda: render.sorted_unique_bounded(2, ordering.key_without_tiebreak), claim="C3")
    assert verdict.result == Result.REFUTED
    assert verdict.witness["x"] != verdict.witness["y"]


def test_ieee_reference_puts_minus_zero_below_plus_zero_and_nans_outside():
    a, b = z3.BitVecs("a b", 64)
    lt = ordering.ieee_total_order_lt
    facts = [lt(z3.BitVecVal(1 << 63, 64), z3.BitVecVal(0, 64)),                       # -0 < +0
             lt(z3.BitVecVal(0xFFF8000000000000, 64), z3.BitVecVal(0xFFF0000000000000, 64)),  # -nan < -inf
             lt(z3.BitVecVal(0x7FF0000000000000, 64), z3.BitVecVal(0x7FF0000000000001, 64)),  # +inf < +snan
             lt(z3.BitVecVal(0x7FF0000000000001, 64), z3.BitVecVal(0x7FF8000000000000, 64)),  # +snan < +qnan
             lt(z3.BitVecVal(0xFFF8000000000000, 64), z3.BitVecVal(0xFFF0000000000001, 64))]  # -qnan < -snan
    assert all(z3.is_true(z3.simplify(f)) for f in facts)
    assert not z3.is_true(z3.simplify(lt(z3.BitVecVal(0, 64), z3.BitVecVal(1 << 63, 64))))
    del a, b
