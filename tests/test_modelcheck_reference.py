"""The reference backend (which exists to test the checker) meets the Backend contract."""

import math
from fractions import Fraction

import pytest

from modelcheck.backend import FragmentDesc
from modelcheck.floatbits import CANONICAL_NAN_BITS, decode, float64_bits
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import UNIVERSES, universe
from spec import FragmentSet, canonical_order, order_key

B = ReferenceBackend()


def exact_m(g, d):
    rows = [[decode(b, g.dtype) for b in vec] for head in d.keys[g.layers // 2] for vec in head]
    if any(math.isnan(x) for r in rows for x in r):
        return "nan"
    if any(math.isinf(x) for r in rows for x in r):
        return math.inf
    norms = [math.sqrt(float(sum(Fraction(x) ** 2 for x in r))) for r in rows]
    return float(sum(Fraction(n) for n in norms) / len(norms))


@pytest.mark.parametrize("name", list(UNIVERSES))
def test_order_value_is_the_exact_definition(name):
    u = universe(name)
    for d in u.fragments:
        m = B.order_value(B.build(u.geometry, d))
        want = exact_m(u.geometry, d)
        if want == "nan":
            assert float64_bits(m) == CANONICAL_NAN_BITS
        else:
            assert float64_bits(m) == float64_bits(want)


def test_copy_is_a_distinct_object_with_the_same_id():
    u = universe("random")
    f = B.build(u.geometry, u.fragments[0])
    c = B.copy(f)
    assert c is not f and B.content_id(c) == B.content_id(f)
    assert B.order_key(f) == order_key(B.order_value(f), B.content_id(f))


def test_render_is_bag_of_the_canonical_order_and_bag_is_order_dependent():
    u = universe("random")
    frags = [B.build(u.geometry, d) for d in u.fragments[:3]]
    s = B.merge(B.merge(B.singleton(frags[2]), B.singleton(frags[0])), B.singleton(frags[1]))
    ordered = canonical_order(frags, B.order_key)
    assert B.render_order(s) == [B.content_id(f) for f in ordered]
    assert B.render_digest(s) == B.bag_digest(ordered)
    assert B.bag_digest(ordered) != B.bag_digest(ordered[::-1])
    assert B.abstract(s) == FragmentSet.of_ids(B.content_id(f) for f in frags)


def test_bag_refuses_nothing_and_mixed_geometries():
    a, b = universe("random"), universe("specials")
    with pytest.raises(ValueError):
        B.bag_digest([])
    with pytest.raises(ValueError, match="geometr"):
        B.bag_digest([B.build(a.geometry, a.fragments[0]), B.build(b.geometry, b.fragments[0])])


def test_render_as_fragment_concatenates_and_re_encodes_keys_only():
    u = universe("shifted")
    at0, at3 = (B.build(u.geometry, u.fragments[i]) for i in (0, 1))  # same bytes, start 0 and 3
    block = B.render_as_fragment([at0, at3])
    assert block.desc.start == 0 and block.desc.tokens == at0.desc.tokens + at3.desc.tokens
    n = at0.desc.tokens
    for layer in range(2):
        for head in range(u.geometry.kv_heads):
            assert block.desc.keys[layer][head][:n] == at0.desc.keys[layer][head]   # delta 0: untouched
            assert block.desc.values[layer][head][n:] == at3.desc.values[layer][head]
    # the second fragment moved from start 3 to offset 2 (delta -1): keys rotated, so changed
    assert block.desc.keys[1][0][n:] != at3.desc.keys[1][0]
    single = B.render_as_fragment([at0])
    assert single.desc == FragmentDesc(0, at0.desc.keys, at0.desc.values)
