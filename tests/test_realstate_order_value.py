"""The exact order value m: the fast path gives the same bits as an exact rational reference
on random and adversarial keys (ties, +-0, huge, subnormal, non-finite) in every storage dtype."""

import math
import struct

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from realstate.order_value import CANONICAL_NAN, exact_order_value, reference_order_value

DTYPES = {"bfloat16": (torch.bfloat16, np.uint16), "float16": (torch.float16, np.uint16),
          "float32": (torch.float32, np.uint32)}


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(patterns, dtype_name, shape):
    torch_dtype, np_dtype = DTYPES[dtype_name]
    signed = np.array(patterns, dtype=np_dtype).view(np.int16 if np_dtype == np.uint16 else np.int32)
    return torch.from_numpy(signed.reshape(shape).copy()).view(torch_dtype)


def finite_patterns(dtype_name):
    if dtype_name == "float32":
        exp_mask, width = 0x7F800000, 32
    elif dtype_name == "float16":
        exp_mask, width = 0x7C00, 16
    else:
        exp_mask, width = 0x7F80, 16
    special = {"float32": [0, 0x80000000, 1, 0x80000001, 0x7F7FFFFF, 0xFF7FFFFF, 0x007FFFFF],
               "float16": [0, 0x8000, 1, 0x8001, 0x7BFF, 0xFBFF, 0x03FF],
               "bfloat16": [0, 0x8000, 1, 0x8001, 0x7F7F, 0xFF7F, 0x007F]}[dtype_name]
    anything = st.integers(0, (1 << width) - 1).filter(lambda b: b & exp_mask != exp_mask)
    return st.one_of(st.sampled_from(special), anything)


@st.composite
def key_tensors(draw, dtype_name):
    heads, tokens, dim = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.sampled_from([2, 4, 8]))
    patterns = draw(st.lists(finite_patterns(dtype_name), min_size=heads * tokens * dim,
                             max_size=heads * tokens * dim))
    return from_bits(patterns, dtype_name, (heads, tokens, dim))


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@settings(max_examples=150)
@given(data=st.data())
def test_fast_path_matches_exact_reference_bit_for_bit(dtype_name, data):
    keys = data.draw(key_tensors(dtype_name))
    assert f64_bits(exact_order_value(keys)) == f64_bits(reference_order_value(keys))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_random_normal_keys_match(dtype):
    keys = (torch.randn(8, 37, 128, generator=torch.Generator().manual_seed(1)) * 3).to(dtype)
    assert f64_bits(exact_order_value(keys)) == f64_bits(reference_order_value(keys))


def test_float32_extremes_do_not_overflow_or_lose_subnormals():
    big = torch.full((1, 2, 128), 3.4028234663852886e38, dtype=torch.float32)
    tiny = torch.full((1, 1, 4), 1.401298464324817e-45, dtype=torch.float32)
    assert math.isfinite(exact_order_value(big))
    assert exact_order_value(big) == reference_order_value(big)
    assert exact_order_value(tiny) == reference_order_value(tiny) > 0.0


def test_permuting_vectors_gives_exactly_the_same_m():
    keys = torch.randn(2, 9, 16, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    swapped = keys[[1, 0]].flip(1).contiguous()
    assert f64_bits(exact_order_value(keys)) == f64_bits(exact_order_value(swapped))


def test_non_finite_keys_have_fixed_answers():
    keys = torch.zeros(1, 2, 4, dtype=torch.bfloat16)
    keys[0, 1, 2] = float("-inf")
    assert exact_order_value(keys) == math.inf == reference_order_value(keys)
    keys[0, 0, 0] = float("nan")
    assert f64_bits(exact_order_value(keys)) == f64_bits(CANONICAL_NAN) == f64_bits(reference_order_value(keys))


def test_naive_float32_reduction_is_not_exact():
    """Negative: what the 'reduced-precision-key' mutant does really differs from the exact m."""
    keys = (torch.randn(8, 64, 128, generator=torch.Generator().manual_seed(7)) * 3).to(torch.bfloat16)
    naive = float(torch.linalg.vector_norm(keys.float(), dim=-1).mean())
    assert f64_bits(naive) != f64_bits(exact_order_value(keys))
