"""The fragment universes hold what their names promise, bit for bit."""

import math
import struct

import pytest

from modelcheck.backend import DTYPE_BITS
from modelcheck.floatbits import CANONICAL_NAN_BITS, decode, encode, float64_bits
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import OPT_IN, UNIVERSES, select, universe
from spec import InputError

B = ReferenceBackend()


def built(name):
    u = universe(name)
    return [B.build(u.geometry, d) for d in u.fragments]


@pytest.mark.parametrize("name", [*UNIVERSES, *OPT_IN])
def test_every_universe_is_small_well_formed_data(name):
    u = universe(name)
    g = u.geometry
    assert len(u.fragments) >= 5
    assert g.layers in (2, 3, 4) and g.head_dim == 4 and g.kv_heads in (1, 2)
    assert g.inv_freq == tuple(1 / 10000 ** (2 * i / 4) for i in range(2))
    top = 1 << DTYPE_BITS[g.dtype]
    for d in u.fragments:
        assert 1 <= d.tokens <= 3
        for t in (d.keys, d.values):
            assert len(t) == g.layers and all(len(layer) == g.kv_heads for layer in t)
            assert all(len(head) == d.tokens and all(len(v) == 4 and all(0 <= x < top for x in v) for v in head)
                       for layer in t for head in layer)


def test_ties_have_exactly_equal_m_and_different_ids():
    frags = built("ties")
    ms = [B.order_value(f) for f in frags]
    assert len({float64_bits(m) for m in ms[:-1]}) == 1
    assert ms[-1] != ms[0]
    assert len({B.content_id(f) for f in frags}) == len(frags)


def test_specials_orders_values():
    ms = [B.order_value(f) for f in built("specials")]
    assert float64_bits(ms[0]) == float64_bits(ms[5]) == CANONICAL_NAN_BITS
    assert ms[1] == ms[7] == 2.0
    assert float64_bits(ms[2]) == float64_bits(ms[3]) == 0
    assert ms[4] == ms[6] == math.inf
    mids = [d.keys[1] for d in universe("specials").fragments]
    assert mids[2] != mids[3]  # -0 and +0 keys: different bytes, same m


def test_specials9_is_specials_with_a_subnormal_key_third():
    """Nine distinct fragments, the one universe N = 9 reaches: specials' eight in their order and
    a subnormal key whose m, 2**-133, is the least above the ±0 tie (a key that loses the
    subnormal ties it with them)."""
    nine, eight = universe("specials9"), universe("specials")
    assert len(nine.fragments) == 9 and max(len(u.fragments) for u in UNIVERSES.values()) == 8
    assert nine.fragments[:2] + nine.fragments[3:] == eight.fragments and nine.geometry == eight.geometry
    frags = built("specials9")
    assert len({B.content_id(f) for f in frags}) == 9
    ms = [B.order_value(f) for f in frags]
    assert ms[2] == 2.0 ** -133 and ms[3] == ms[4] == 0.0
    assert min(m for m in ms if m > 0) == ms[2]
    assert decode(nine.fragments[2].keys[1][0][0][0], "bfloat16") == 2.0 ** -133


def test_an_opt_in_universe_runs_only_when_named():
    assert "specials9" not in [u.name for u in select(None)]
    assert [u.name for u in select(["specials9", "ties"])] == ["specials9", "ties"]
    with pytest.raises(InputError, match=r"float32, specials9 \(opt-in\)"):
        universe("nope")


def test_subnormals_are_subnormal_and_tie():
    assert decode(0x0001, "bfloat16") == 2.0 ** -133
    ms = [B.order_value(f) for f in built("subnormals")]
    assert ms[0] == ms[1] == ms[5] == 2.0 ** -133
    assert ms[4] == 0.0 and ms[3] == 2.0 ** -126


def test_shifted_is_the_same_bytes_at_different_starts():
    u = universe("shifted")
    same = u.fragments[:5]
    assert len({(d.keys, d.values) for d in same}) == 1
    assert len({d.start for d in same}) == 5
    frags = built("shifted")
    assert len({B.content_id(f) for f in frags}) == 6
    assert len({B.order_value(f) for f in frags[:5]}) == 1


def test_duplicates_repeat_contents():
    ids = [B.content_id(f) for f in built("duplicates")]
    assert ids[0] == ids[2] and ids[1] == ids[4] and len(set(ids)) == 4


def test_select_validates_names():
    assert [u.name for u in select(None)] == list(UNIVERSES)
    assert [u.name for u in select(["ties", "ties", "random"])] == ["ties", "random"]
    with pytest.raises(InputError, match="known: random, ties"):
        select(["nope"])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_floatbits_round_trip_every_16_bit_pattern(dtype):
    for bits in range(1 << 16):
        x = decode(bits, dtype)
        if math.isnan(x):
            continue
        assert encode(x, dtype) == bits


def test_bfloat16_rounds_to_nearest_even():
    assert encode(1.0 + 2.0 ** -8, "bfloat16") == 0x3F80        # tie -> even
    assert encode(1.0 + 3 * 2.0 ** -8, "bfloat16") == 0x3F82    # tie -> even (up)
    assert encode(1e39, "bfloat16") == 0x7F80
    assert struct.pack("<d", decode(0x7F80, "bfloat16")) == struct.pack("<d", math.inf)


def test_some_universes_read_a_middle_layer_other_than_the_last_and_render_at_a_nonzero_base():
    """So that reading the statistic from the last layer, or ignoring ``base``, can show."""
    assert {u.name for u in UNIVERSES.values() if u.geometry.layers // 2 != u.geometry.layers - 1} >= {
        "random", "shifted", "float32", "ties", "duplicates"}
    assert {u.name for u in UNIVERSES.values() if u.base} >= {"random", "shifted", "float32"}
    assert any(d.start for u in UNIVERSES.values() for d in u.fragments)
