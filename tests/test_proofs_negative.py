"""Negative tests: the laws are encoded so that they CAN fail.  A wrong merge, a key without
tie-break, a missing premise or a naive float comparison must be refuted, never proved."""

from proofs import fragment_set, ordering
from proofs.obligation import Obligation, Result, discharge
from proofs.runner import outcome_of
from spec import Outcome


def verdict_of(encode, expected=Result.PROVED, claim="C2"):
    return discharge(Obligation("negative", claim, "a law that must fail", expected, encode), timeout_s=10)


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
