"""The oracle's own parts, each against an outside reference: correctly rounded sqrt against
``math.sqrt``, bfloat16/float16 rounding against torch, the header layout against the bytes
docs/FORMAT.md pins, and the comparison (every bit, a rotated NaN's included)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
import struct

import numpy as np
import pytest
import torch

import oracle
from oracle.formats import BFLOAT16, FLOAT16, FLOAT32, narrow, widen
from oracle.order import _sqrt_correctly_rounded, _sum_correctly_rounded, total_order_rank


def test_sqrt_is_correctly_rounded_like_ieee_sqrt():
    rng = random.Random(1)
    samples = [0.0, 5e-324, 2.0, 4.0, 1.0 - 2**-53, 1.7976931348623157e308]
    for _ in range(3000):  # every finite exponent, random fractions
        pattern = (rng.randrange(0x7FF) << 52) | rng.getrandbits(52)
        samples.append(struct.unpack("<d", struct.pack("<Q", pattern))[0])
    for x in samples:
        assert _sqrt_correctly_rounded(x) == math.sqrt(x), x.hex()


def test_sum_is_correctly_rounded_like_fsum():
    rng = random.Random(2)
    for _ in range(300):
        terms = [abs(rng.uniform(0, 10) * 2.0 ** rng.randint(-60, 60)) for _ in range(rng.randint(1, 40))]
        assert _sum_correctly_rounded(terms) == math.fsum(terms)


def _torch_round(values: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    out = torch.from_numpy(values).to(dtype).view(torch.int16).numpy().view(np.uint16)
    return out


def test_bfloat16_and_float16_rounding_match_torch_on_every_kind_of_float32():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 1 << 32, size=400_000, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 1 << 16, size=20_000, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    edges = np.array([0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000, 0x477FF000, 0x477FEFFF,
                      0x33000000, 0x33000001, 0x80000000], dtype=np.uint32)
    values = np.concatenate([bits, ties, edges]).view(np.float32)
    finite_or_inf = ~np.isnan(values)
    for fmt, dtype in ((BFLOAT16, torch.bfloat16), (FLOAT16, torch.float16)):
        ours = narrow(fmt, values)
        theirs = _torch_round(values, dtype)
        assert np.array_equal(ours[finite_or_inf], theirs[finite_or_inf]), fmt.name
        assert (ours[~finite_or_inf] == fmt.canonical_nan).all()
    assert (narrow(FLOAT32, values[~finite_or_inf]) == FLOAT32.canonical_nan).all()
    assert [f.canonical_nan for f in (BFLOAT16, FLOAT16, FLOAT32)] == [0x7FC0, 0x7E00, 0x7FC00000]


def test_widening_is_exact_for_every_16_bit_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for fmt, dtype in ((BFLOAT16, torch.bfloat16), (FLOAT16, torch.float16)):
        ours = widen(fmt, bits).view(np.uint32)
        theirs = torch.from_numpy(bits.view(np.int16)).view(dtype).float().view(torch.int32).numpy().view(np.uint32)
        keep = ~fmt.is_nan(bits)
        assert np.array_equal(ours[keep], theirs[keep])
        assert np.isnan(widen(fmt, bits[~keep])).all()
    assert widen(FLOAT32, np.array([0x80000001], dtype=np.uint32)).view(np.uint32)[0] == 0x80000001


def test_the_content_id_header_is_the_72_bytes_docs_format_pins():
    digest = bytes(range(32))
    head = oracle.header(digest, 1, 4, 2, 3, 8, 7)
    assert len(head) == oracle.HEADER_BYTES == 72
    assert head.hex() == ("434d465241473031" + digest.hex() + "01" + "000000" + "04000000" + "02000000"
                          + "0300000000000000" + "08000000" + "0700000000000000")
    data = oracle.FragmentData(digest, "bfloat16", 4, 2, 3, 8, 7, bytes(range(96)) * 4, bytes(384))
    assert data.content_id == hashlib.sha256(head + bytes(range(96)) * 4 + bytes(384)).digest()


def test_a_fragment_with_inputs_takes_the_version_2_id_and_the_product_agrees():
    """The oracle's id of a fragment that keeps its inputs is the CMFRAG02 digest, unequal to the
    same keys and values without them; the product's Fragment gives the same 32 bytes."""
    from realstate.evidence.oracle_bridge import fragment_mismatches
    from realstate.kernel.fragment import Fragment
    from tests.realstate_helpers import random_fragment, tiny_fingerprint

    keys, values, inputs = bytes(range(96)) * 4, bytes(384), bytes(range(3 * 5 * 2))
    bare = oracle.FragmentData(bytes(32), "bfloat16", 4, 2, 3, 8, 7, keys, values)
    kept = oracle.FragmentData(bytes(32), "bfloat16", 4, 2, 3, 8, 7, keys, values, inputs, 5)
    assert kept.content_id == oracle.digest_with_inputs(bytes(32), 1, (4, 2, 3, 8), 7, keys, values, inputs, 5)
    assert kept.content_id != bare.content_id
    with pytest.raises(ValueError, match="inputs: 29 bytes"):
        oracle.FragmentData(bytes(32), "bfloat16", 4, 2, 3, 8, 7, keys, values, inputs[1:], 5)
    plain = random_fragment(tiny_fingerprint(), 3, seed=5, start=7)
    f = Fragment(plain.fingerprint, 7, plain.keys, plain.values,
                 inputs=torch.randn(3, 5, generator=torch.Generator().manual_seed(6)).to(torch.bfloat16))
    assert f.content_id != plain.content_id
    assert fragment_mismatches(f) == [] and fragment_mismatches(plain) == []


def test_total_order_rank_follows_ieee_total_order():
    ordered = [0xFFF8000000000000, 0xFFF0000000000000, 0xC000000000000000, 0x8000000000000001,
               0x8000000000000000, 0x0000000000000000, 0x0000000000000001, 0x3FF0000000000000,
               0x7FF0000000000000, 0x7FF8000000000000, 0x7FFFFFFFFFFFFFFF]
    ranks = [total_order_rank(b) for b in ordered]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
    assert oracle.order_key(0x7FF8000000000000, bytes(32)).hex() == "fff8000000000000" + "00" * 32


def test_fragment_data_refuses_wrong_sizes_and_unknown_dtypes():
    with pytest.raises(ValueError, match="keys: 3 bytes"):
        oracle.FragmentData(bytes(32), "float32", 1, 1, 1, 2, 0, bytes(3), bytes(8))
    with pytest.raises(ValueError, match="unknown storage dtype"):
        oracle.FragmentData(bytes(32), "float64", 1, 1, 1, 2, 0, bytes(16), bytes(16))
    with pytest.raises(ValueError, match="start"):
        oracle.FragmentData(bytes(32), "float32", 1, 1, 1, 2, -1, bytes(8), bytes(8))
    a = oracle.FragmentData(bytes(32), "float32", 1, 1, 1, 2, 0, bytes(8), bytes(8))
    b = oracle.FragmentData(bytes([1]) * 32, "float32", 1, 1, 1, 2, 0, bytes(8), bytes(8))
    with pytest.raises(ValueError, match="never render together"):
        oracle.bag_render([a, b], (1.0,))


def _nan_case():
    """A float32 fragment whose key pair (k1, k2) = (NaN, 1): rotated, both outputs are NaN."""
    keys = np.array([0x7FC00001, 0x3F800000], dtype=np.uint32).tobytes()
    values = np.array([0x7FC00002, 0x80000000], dtype=np.uint32).tobytes()
    f = oracle.FragmentData(bytes(32), "float32", 1, 1, 1, 2, 0, keys, values)
    return oracle.bag_render([f], (0.5,), 3)


def _with(render, **changes):
    rebuilt = dataclasses.replace(render, **changes)
    code = oracle.storage_format(rebuilt.dtype).code
    digest = oracle.framed_digest(rebuilt.fingerprint_digest, code, rebuilt.shape, rebuilt.base,
                                  rebuilt.keys, rebuilt.values).hex()
    return dataclasses.replace(rebuilt, digest=digest)


def test_a_rotated_nan_is_the_canonical_quiet_nan_and_any_other_nan_is_a_mismatch():
    expected = _nan_case()
    keys = np.frombuffer(expected.keys, dtype="<u4")
    assert (keys == 0x7FC00000).all()
    other_nans = np.array([0x7FC00000, 0xFFC00000], dtype="<u4").tobytes()
    [m] = oracle.compare(_with(expected, keys=other_nans), expected)
    assert (m.field, m.where, m.expected, m.got) == ("keys", (0, 0, 0, 1), "7fc00000", "ffc00000")


def test_a_number_where_the_oracle_has_a_nan_and_any_value_bit_are_mismatches():
    expected = _nan_case()
    not_nan = np.array([0x7FC00000, 0x3F800000], dtype="<u4").tobytes()
    [m] = oracle.compare(_with(expected, keys=not_nan), expected)
    assert (m.field, m.where, m.got) == ("keys", (0, 0, 0, 1), "3f800000")
    other_value_nan = np.array([0x7FC00003, 0x80000000], dtype="<u4").tobytes()
    [m] = oracle.compare(_with(expected, values=other_value_nan), expected)
    assert (m.field, m.where, m.expected, m.got) == ("values", (0, 0, 0, 0), "7fc00002", "7fc00003")
    assert "values[0, 0, 0, 0]: expected 7fc00002" in str(m)


def test_layout_digest_framing_and_shape_mismatches_are_reported():
    expected = _nan_case()
    moved = _with(expected, layout=((expected.layout[0][0], 4),))
    assert [m.field for m in oracle.compare(moved, expected)] == ["layout"]
    misframed = dataclasses.replace(expected, digest="00" * 32)
    assert [m.field for m in oracle.compare(misframed, expected)] == ["digest", "digest of its own bytes"]
    assert [m.field for m in oracle.compare(_with(expected, base=4), expected)] == ["base"]


def test_compare_reports_at_most_limit_mismatches():
    f = oracle.FragmentData(bytes(32), "bfloat16", 2, 2, 3, 4, 0, bytes(96), bytes(96))
    expected = oracle.naive_render([f], (1.0, 0.5))
    changed = _with(expected, values=bytes([1]) * 96)
    assert len(oracle.compare(changed, expected, limit=5)) == 5
    assert len(oracle.compare(changed, expected, limit=100)) == 48
