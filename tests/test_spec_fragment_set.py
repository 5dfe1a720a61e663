"""C1 and C2 on random FragmentSets, and a negative test: a duplicate-keeping merge is caught."""

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from spec import FragmentSet
from spec.laws import order_violations, semilattice_violations

ids = st.integers(0, 40).map(lambda i: hashlib.sha256(bytes([i])).digest())
fragment_sets = st.lists(ids, max_size=12).map(FragmentSet.of_ids)


def merge(a, b):
    return a.merge(b)


def equal(a, b):
    return a == b


def leq(a, b):
    return a <= b


@given(fragment_sets, fragment_sets, fragment_sets)
def test_c1_semilattice_laws_hold(a, b, c):
    assert semilattice_violations(a, b, c, merge, equal) == []


@given(fragment_sets, fragment_sets)
def test_c2_inflation_and_absorption_hold(a, b):
    assert order_violations(a, b, merge, equal, leq) == []
    assert order_violations(a, a.merge(b), merge, equal, leq) == []


@given(fragment_sets, fragment_sets, fragment_sets)
def test_merge_is_least_upper_bound(a, b, c):
    joined = a.merge(b)
    if a <= c and b <= c:
        assert joined <= c


def test_redelivery_keeps_first_payload_and_is_a_no_op():
    cid = hashlib.sha256(b"x").digest()
    first = FragmentSet.of([("first", cid)], lambda item: item[1])
    again = first.merge(FragmentSet.of([("copy", cid)], lambda item: item[1]))
    assert again == first and len(again) == 1 and again.items()[0][0] == "first"


def test_iteration_is_in_id_order_whatever_the_insertion_order():
    cids = [hashlib.sha256(bytes([i])).digest() for i in range(6)]
    assert FragmentSet.of_ids(cids).items() == FragmentSet.of_ids(reversed(cids)).items() == sorted(cids)


def test_rejects_malformed_ids():
    import pytest

    with pytest.raises(ValueError, match="32 raw bytes"):
        FragmentSet.of_ids([b"short"])


# --- negative: the law checks catch a merge that keeps duplicates ---------------------------

def bag_merge(a, b):
    return a + b


def bag_equal(a, b):
    return a == b


@given(st.lists(ids, min_size=1, max_size=5))
def test_duplicate_keeping_merge_breaks_idempotence(a):
    assert "C1 idempotence" in semilattice_violations(a, a, a, bag_merge, bag_equal)


def test_duplicate_keeping_merge_breaks_absorption():
    a = [hashlib.sha256(b"a").digest(), hashlib.sha256(b"b").digest()]
    b = a[:1]
    violations = order_violations(a, b, bag_merge, bag_equal, lambda x, y: set(x) <= set(y))
    assert violations == ["C2 absorption"]
