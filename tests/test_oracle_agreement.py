"""The product's renders equal the independent oracle's, byte for byte (a rotated NaN included:
the canonical quiet NaN), on Hypothesis-generated fragments in every storage dtype — ±0, subnormals, infinities, NaN
payloads, huge values, equal-m twins, non-zero starts and bases, L >= 4, duplicates — and on real
qwen3-tiny agent caches."""

from __future__ import annotations

import itertools
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from realstate.evidence.oracle_bridge import compare_render, fragment_data, oracle_render, product_render, render_bytes
from tests.oracle_cases import SPECIALS, fingerprint, finite_bits, fragment_from_bits, swap_heads

MODES = ("canonical", "bag", "naive")


def _m_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


@st.composite
def fragment_lists(draw):
    dtype = draw(st.sampled_from(("bfloat16", "float16", "float32")))
    layers = draw(st.sampled_from((1, 2, 4, 5)))
    heads = draw(st.integers(1, 3))
    head_dim = draw(st.sampled_from((2, 4, 6)))
    inv_freq = draw(st.one_of(
        st.none(),
        st.lists(st.floats(1e-4, 2.0), min_size=head_dim // 2, max_size=head_dim // 2).map(tuple)))
    fp = fingerprint(dtype, layers, heads, head_dim, inv_freq)
    distinct = []
    for _ in range(draw(st.integers(1, 3))):
        tokens = draw(st.integers(1, 3))
        start = draw(st.one_of(st.just(0), st.integers(1, 40), st.integers(1000, 30000)))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        shape = (layers, heads, tokens, head_dim)
        modes = ("bits", "normal:1e-30", "normal:1e-6", "normal:1", "normal:1e4", "normal:1e30")
        keys = finite_bits(rng, dtype, shape, draw(st.sampled_from(modes)))
        values = finite_bits(rng, dtype, shape, draw(st.sampled_from(modes)))
        for _ in range(draw(st.integers(0, 3))):  # specials, NaN and infinities included
            where = tuple(draw(st.integers(0, s - 1)) for s in shape)
            (keys if draw(st.booleans()) else values)[where] = draw(st.sampled_from(SPECIALS[dtype]))
        distinct.append(fragment_from_bits(fp, start, keys, values))
    if heads > 1 and draw(st.booleans()):
        distinct.append(swap_heads(distinct[0]))  # an equal-m twin
    picks = draw(st.lists(st.integers(0, len(distinct) - 1), min_size=1, max_size=5))
    base = draw(st.one_of(st.just(0), st.integers(1, 50), st.integers(1000, 30000)))
    return [distinct[i] for i in picks], base


@settings(max_examples=80)
@given(fragment_lists())
def test_every_render_equals_the_oracle_bit_for_bit(case):
    fragments, base = case
    for mode in MODES:
        assert compare_render(mode, fragments, base) == [], mode


@settings(max_examples=50)
@given(fragment_lists())
def test_ids_order_values_and_keys_equal_the_oracle(case):
    fragments, _ = case
    for f in fragments:
        data = fragment_data(f)
        assert data.content_id == f.content_id
        assert data.order_value_bits == _m_bits(f.order_value)
        assert data.order_key == f.order_key


def test_equal_m_twins_are_ordered_by_content_id():
    fp = fingerprint("bfloat16", 4, 2, 4)
    rng = np.random.default_rng(7)
    shape = (4, 2, 2, 4)
    a = fragment_from_bits(fp, 3, finite_bits(rng, "bfloat16", shape, "normal:1"),
                           finite_bits(rng, "bfloat16", shape, "normal:1"))
    twin = swap_heads(a)
    assert a.order_value == twin.order_value and a.content_id != twin.content_id
    expected = oracle_render("canonical", [twin, a], 5)
    assert [cid for cid, _ in expected.layout] == sorted([a.content_id, twin.content_id])
    for order in ([a, twin], [twin, a], [twin, a, twin]):
        assert compare_render("canonical", order, 5) == []


def test_the_order_value_reads_the_middle_layer_not_the_last():
    fp = fingerprint("float32", 4, 1, 2)
    keys = np.zeros((4, 1, 1, 2), dtype=np.uint32)
    keys[2, 0, 0, 0] = 0x40400000  # 3.0 at the middle layer (2)
    keys[3, 0, 0, 0] = 0x40A00000  # 5.0 at the last layer
    f = fragment_from_bits(fp, 0, keys, keys.copy())
    assert oracle.order.float_of_bits(fragment_data(f).order_value_bits) == 3.0 == f.order_value


@pytest.fixture(scope="module")
def agent_fragments():
    from realstate.models.agents import run_agent, run_agents, seeded_prompts
    from realstate.models.seeded import load_seeded

    lm = load_seeded("qwen3-tiny")
    fragments = [run.fragment for run in run_agents(lm, 3, latent_steps=1)]
    late = run_agent(lm, "late", seeded_prompts(1, lm.vocab_size, seed=9)[0], latent_steps=1, start=11)
    return fragments + [late.fragment]


def test_real_qwen3_tiny_agent_caches_render_as_the_oracle_says(agent_fragments):
    assert agent_fragments[0].fingerprint.layers >= 4  # middle layer != last
    for order in itertools.islice(itertools.permutations(agent_fragments), 0, 24, 5):
        for base in (0, 123):
            assert compare_render("canonical", list(order), base) == []
    redelivered = agent_fragments + agent_fragments[:2]
    for mode in ("bag", "naive"):
        for base in (0, 1000):
            assert compare_render(mode, redelivered, base) == []
    for f in agent_fragments:
        assert fragment_data(f).order_value_bits == _m_bits(f.order_value)


def test_a_real_render_differs_from_the_oracle_when_one_key_bit_flips(agent_fragments):
    got = render_bytes(product_render("canonical", agent_fragments, 7))
    expected = oracle_render("canonical", agent_fragments, 7)
    flipped = bytearray(got.keys)
    flipped[2 * 1234] ^= 1
    mismatches = oracle.compare(type(got)(**{**got.__dict__, "keys": bytes(flipped)}), expected)
    assert [m.field for m in mismatches] == ["keys", "digest of its own bytes"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_a_rotated_nan_key_is_the_canonical_quiet_nan_bit_for_bit(dtype):
    fp = fingerprint(dtype, 4, 1, 4)
    keys = finite_bits(np.random.default_rng(5), dtype, (4, 1, 2, 4), "normal:1")
    keys[2, 0, 0, 0] = SPECIALS[dtype][11]  # a negative NaN with a payload
    keys[1, 0, 1, 1] = keys[1, 0, 1, 3] = SPECIALS[dtype][8]  # +inf twice in a rotation pair: one of
    # inf·c − inf·s and inf·c + inf·s is inf − inf, a NaN made from no NaN
    f = fragment_from_bits(fp, 0, keys, keys.copy())
    got, expected = render_bytes(product_render("bag", [f], 9)), oracle_render("bag", [f], 9)
    fmt = oracle.storage_format(dtype)
    have = np.frombuffer(got.keys, dtype=fmt.bits_dtype)
    want = np.frombuffer(expected.keys, dtype=fmt.bits_dtype)
    assert fmt.is_nan(want).sum() == 3 and (want[fmt.is_nan(want)] == fmt.canonical_nan).all()
    assert np.array_equal(have, want) and got.digest == expected.digest
    assert oracle.compare(got, expected) == []
