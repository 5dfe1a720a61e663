"""The exact order value m: the fast path gives the same bits as an exact rational reference
on random and adversarial keys (ties, +-0, huge, subnormal, non-finite) in every storage dtype."""

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from realstate.kernel.order_value import (
    CANONICAL_NAN,
    correctly_rounded_row_sums,
    exact_order_value,
    fsum_order_value,
    reference_order_value,
)

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


# --- the vectorized exact sum (realstate.kernel.order_value.correctly_rounded_row_sums) ---------------

def exact_rounded_sum(values) -> float:
    return float(sum((Fraction(v) for v in values), Fraction(0)))


# known-answer vectors [1, 3, 8]: a plain float64 sum of a vector's squares (numpy's or a
# sequential one), or a plain float64 sum of the norms, gives different bits for m
KNOWN_ANSWERS = {
    "bfloat16": ([0xBA8B, 0x39AC, 0x340C, 0xB9C0, 0xB2FA, 0xBE2D, 0x3D24, 0xB038, 0x3792, 0xB2C8, 0xB791, 0xB5BB,
                  0xBE81, 0xBAA3, 0x3488, 0x38A6, 0xB6AB, 0xB7C3, 0x3EE4, 0x3B23, 0x2D07, 0x3A87, 0x3C9D, 0x34A6],
                 "0x1.2968edb98a0a6p-2"),
    "float16": ([0x3237, 0x030C, 0x2788, 0x02FE, 0x5B12, 0x4FDE, 0x039C, 0x20A7, 0x0075, 0x003B, 0x001A, 0x014A,
                 0x03B4, 0x03BD, 0x03FE, 0x0290, 0x0025, 0x0D0C, 0x0D8A, 0x12E6, 0x035E, 0x00F4, 0x03AA, 0x2D96],
                "0x1.30aff22086e39p+6"),
    "float32": ([0x32328CE7, 0xBD7521A6, 0x38C04602, 0x3B0E2F89, 0xB386CC58, 0x312303E6, 0xB49F5A5E, 0x3C461F94,
                 0xB0128D40, 0xBB2F5CF8, 0xB0B00C00, 0x34C40324, 0x3545E8DA, 0xB3B826CE, 0xBB1B9ED4, 0xBECB44CC,
                 0xBE89209A, 0x322A5FF6, 0xB886B9A9, 0x3CB693F2, 0x381793B2, 0xB339A1DD, 0x389B4949, 0xB7EB14FE],
                "0x1.f03631622aaf9p-3"),
}


def plain_variants(keys):
    """What a rounding bug would compute: plain float64 sums of squares, or of norms."""
    rows = keys.to(torch.float64).reshape(-1, keys.shape[-1]).numpy()
    squares = rows * rows
    numpy_rows = np.sqrt(squares.sum(axis=1)).tolist()
    einsum_rows = np.sqrt(np.einsum("ij->i", squares)).tolist()
    sequential_rows = [math.sqrt(sum(r, 0.0)) for r in squares.tolist()]
    exact_norms = [math.sqrt(exact_rounded_sum(r)) for r in squares.tolist()]
    n = len(exact_norms)
    return [math.fsum(numpy_rows) / n, math.fsum(einsum_rows) / n, math.fsum(sequential_rows) / n,
            float(np.sum(exact_norms)) / n, sum(exact_norms, 0.0) / n]


@pytest.mark.parametrize("norms_by_fsum_up_to", [512, 0])
@pytest.mark.parametrize("dtype_name", list(KNOWN_ANSWERS))
def test_known_answer_vectors_expose_plain_float_sums(monkeypatch, dtype_name, norms_by_fsum_up_to):
    """Both ways of totalling the norms (math.fsum for few, the vectorized exact sum for many)."""
    import realstate.kernel.order_value as ov

    monkeypatch.setattr(ov, "FSUM_NORMS_UP_TO", norms_by_fsum_up_to)
    patterns, expected = KNOWN_ANSWERS[dtype_name]
    keys = from_bits(patterns, dtype_name, (1, 3, 8))
    assert exact_order_value(keys).hex() == reference_order_value(keys).hex() == expected
    assert all(v.hex() != expected for v in plain_variants(keys))


@pytest.mark.parametrize("row, expected", [
    ([1.0, 2.0 ** -53], 1.0),  # exactly halfway: ties to even (down)
    ([1.0 + 2.0 ** -52, 2.0 ** -53], 1.0 + 2.0 ** -51),  # exactly halfway: ties to even (up)
    ([1.0, 2.0 ** -53, 2.0 ** -600], 1.0 + 2.0 ** -52),  # a hair above halfway, 550 binades down
    ([2.0 ** -54] * 4 + [1.0], 1.0 + 2.0 ** -52),  # many sub-half-ulp parts that add up
    ([2.0 ** -54] * 2 + [1.0], 1.0),  # ... to exactly half an ulp: ties to even
    ([0.0, 0.0], 0.0),
    ([2.0 ** 900, 2.0 ** -900, 3.0 * 2.0 ** -901], 2.0 ** 900),
    ([0.1] * 10, 1.0),  # ten float 0.1 are 1 + 5.55e-17 exactly: rounds to 1 (a naive loop gives 0.9999999999999999)
])
def test_row_sums_round_the_exact_sum_once_to_nearest_even(row, expected):
    for layout in (row, row[::-1]):
        got = correctly_rounded_row_sums(np.array([layout], dtype=np.float64))[0]
        assert f64_bits(got) == f64_bits(expected) == f64_bits(exact_rounded_sum(layout))


@pytest.mark.parametrize("dtype, row, expected_sum", [
    (torch.bfloat16, [1.0, 2.0 ** -27, 2.0 ** -27], 1.0),  # 1 + 2^-53: halfway, ties to even
    (torch.bfloat16, [1.0, 2.0 ** -27, 2.0 ** -27, 2.0 ** -60], 1.0 + 2.0 ** -52),  # a hair above
    (torch.float32, [-1.0, 2.0 ** -27, -(2.0 ** -27)], 1.0),
    (torch.float32, [1.0 + 2.0 ** -23, 2.0 ** -27, 2.0 ** -27], 1.0 + 2.0 ** -22 + 2.0 ** -46),
    (torch.float16, [8.0, 2.0 ** -24, 2.0 ** -24], 64.0),  # 64 + 2^-47: halfway (subnormal squares)
    (torch.float16, [8.0, 2.0 ** -24, 2.0 ** -24, -(2.0 ** -24)], 64.0 + 2.0 ** -46),  # above
])
def test_vectors_whose_square_sums_sit_on_a_rounding_boundary(dtype, row, expected_sum):
    """Key vectors whose exact sum of squares is exactly halfway between two float64s (or a
    hair above): the sum is rounded once, to even, and m equals the reference."""
    keys = torch.tensor(row, dtype=torch.float64).to(dtype)
    assert keys.to(torch.float64).tolist() == row
    squares = (keys.to(torch.float64) ** 2).numpy().reshape(1, -1)
    assert f64_bits(correctly_rounded_row_sums(squares)[0]) == f64_bits(expected_sum)
    assert f64_bits(expected_sum) == f64_bits(exact_rounded_sum(squares[0].tolist()))
    vectors = keys.reshape(1, 1, -1).repeat(1, 3, 1)
    assert f64_bits(exact_order_value(vectors)) == f64_bits(reference_order_value(vectors))


nonnegative_doubles = st.one_of(st.just(0.0), st.floats(min_value=2.0 ** -900, max_value=2.0 ** 900),
                                st.integers(-60, 60).map(lambda e: math.ldexp(1.0, e)))


@settings(max_examples=100)
@given(st.integers(1, 6).flatmap(lambda rows: st.lists(
    st.lists(nonnegative_doubles, min_size=1, max_size=40), min_size=rows, max_size=rows)))
def test_row_sums_equal_the_exact_rational_sum_rounded_once(rows):
    width = max(len(r) for r in rows)
    table = np.array([r + [0.0] * (width - len(r)) for r in rows], dtype=np.float64)
    got = correctly_rounded_row_sums(table)
    assert [f64_bits(g) for g in got.tolist()] == [f64_bits(exact_rounded_sum(r)) for r in rows]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_huge_exponent_spread_in_one_vector(dtype):
    """1e-30- and 1e30-scale elements in one vector, the largest and smallest values, zeros."""
    info = torch.finfo(dtype)
    row = [1e30, -1e30, 1e-30, 3e-38, info.max, -info.max, info.tiny, 0.0, -0.0, 1.0, 7.0, 1e-20]
    if dtype == torch.float32:
        row += [1.401298464324817e-45, -2.802596928649634e-45]  # subnormals
    keys = torch.tensor(row * 4, dtype=dtype).reshape(2, 2, -1)
    keys[1, 1] = keys[1, 1].flip(0)
    assert f64_bits(exact_order_value(keys)) == f64_bits(reference_order_value(keys))


@pytest.mark.parametrize("block", [8, 64, 1 << 15])
def test_blocks_and_gathered_rows_give_the_same_bits(monkeypatch, block):
    """Few vectors needing a second level (they are gathered) and most needing one (they are
    not) across block boundaries: both paths equal the exact reference."""
    import realstate.kernel.order_value as ov

    g = torch.Generator().manual_seed(11)
    keys = torch.randn(3, 40, 16, generator=g)
    keys[0, 5, 3] = 1e-25  # one bf16 vector whose squares need two levels
    keys[2, 39, 0] = 1e25
    monkeypatch.setattr(ov, "BLOCK_ELEMENTS", block)
    for dtype in (torch.bfloat16, torch.float32):
        k = keys.to(dtype)
        assert f64_bits(exact_order_value(k)) == f64_bits(reference_order_value(k)) == f64_bits(fsum_order_value(k))


def test_nan_in_a_later_block_beats_an_earlier_infinity(monkeypatch):
    import realstate.kernel.order_value as ov

    monkeypatch.setattr(ov, "BLOCK_ELEMENTS", 4)
    keys = torch.ones(1, 6, 4, dtype=torch.float16)
    keys[0, 0, 1] = float("inf")
    assert exact_order_value(keys) == math.inf
    keys[0, 5, 2] = float("nan")
    assert f64_bits(exact_order_value(keys)) == f64_bits(CANONICAL_NAN)


@pytest.fixture(scope="module", params=["bfloat16", "float16", "float32"])
def model_keys(request):
    """Every layer's keys of a seeded qwen3-tiny agent (a real transformers cache)."""
    from realstate.models.agents import run_agent, seeded_prompts
    from realstate.models.seeded import load_seeded

    lm = load_seeded("qwen3-tiny", dtype=request.param)
    prompt = seeded_prompts(1, lm.vocab_size, seed=3, base_length=40)[0]
    return run_agent(lm, "A", prompt, latent_steps=2).fragment.keys


def test_real_model_keys_match_in_every_layer(model_keys):
    for layer in model_keys:
        assert f64_bits(exact_order_value(layer)) == f64_bits(reference_order_value(layer))
        one_vector = layer[:1, 7:8]
        assert f64_bits(exact_order_value(one_vector)) == f64_bits(reference_order_value(one_vector))


def test_cuda_keys_give_the_cpu_bits():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here (the computation always runs on the CPU)")
    keys = torch.randn(8, 50, 128, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    assert f64_bits(exact_order_value(keys.cuda())) == f64_bits(exact_order_value(keys))


@st.composite
def rows_near_the_plain_sum_limit(draw):
    """bf16/fp16 vectors whose smallest square sits a few bits either side of the grid at which
    a plain float64 sum stops being exact."""
    dtype = draw(st.sampled_from([torch.bfloat16, torch.float16]))
    width = draw(st.sampled_from([2, 3, 4, 8]))
    top = draw(st.integers(-6, 6))
    gap = draw(st.integers(16, 24) if dtype == torch.bfloat16 else st.integers(10, 16))
    mantissas = draw(st.lists(st.integers(128, 255), min_size=width, max_size=width))
    exponents = draw(st.lists(st.sampled_from([top, top - 1, top - gap]), min_size=width, max_size=width))
    values = [m * 2.0 ** (e - 7) for m, e in zip(mantissas, exponents)]
    return torch.tensor(values, dtype=torch.float64).to(dtype).reshape(1, width)


def plain_sum_is_accepted(row):
    from realstate.kernel.order_value import _FORMATS, _plainly_exact, _row_sums

    squares = row.to(torch.float64).numpy() ** 2
    estimate = _row_sums(squares)
    accepted = bool(_plainly_exact(row.view(torch.int16).numpy(), estimate, _FORMATS[row.dtype])[0])
    return accepted, estimate[0], exact_rounded_sum(squares[0].tolist())


@settings(max_examples=100)
@given(rows=st.lists(rows_near_the_plain_sum_limit(), min_size=1, max_size=3))
def test_the_plain_sum_shortcut_only_accepts_exact_sums(rows):
    """Soundness of the shortcut on its own: whenever it accepts a vector, the plain float64
    sum it keeps is the exact sum; and m always equals the reference."""
    for row in rows:
        accepted, plain, exact = plain_sum_is_accepted(row)
        if accepted:
            assert f64_bits(plain) == f64_bits(exact)
        keys = row.reshape(1, 1, -1)
        assert f64_bits(exact_order_value(keys)) == f64_bits(reference_order_value(keys))


@pytest.mark.parametrize("values, dtype", [
    ([2.5, 2.5, 129 * 2.0 ** -25, 129 * 2.0 ** -25], torch.bfloat16),  # 12.5 + 2·16641·2^-50
    ([4.5, 4.5, 2.0 ** -24, 2.0 ** -24], torch.float16),  # 40.5 + 2·2^-48 (subnormals' squares)
])
def test_the_plain_sum_shortcut_rejects_sums_two_bits_past_its_bound(values, dtype):
    """Two grid steps past the shortcut's bound a plain (sequential) float64 sum already gives
    the wrong bits, and the shortcut says no (a bound two bits looser would say yes); the exact
    path then gives the reference bits."""
    row = torch.tensor(values, dtype=torch.float64).to(dtype).reshape(1, -1)
    assert row.to(torch.float64).flatten().tolist() == values
    accepted, _, exact = plain_sum_is_accepted(row)
    sequential = 0.0
    for square in (row.to(torch.float64) ** 2).flatten().tolist():
        sequential += square
    assert f64_bits(sequential) != f64_bits(exact) and not accepted
    keys = row.repeat(3, 1).reshape(1, 3, -1)
    assert f64_bits(exact_order_value(keys)) == f64_bits(reference_order_value(keys))


def test_the_plain_sum_shortcut_takes_typical_16_bit_keys():
    """The shortcut is not vacuous: it accepts most vectors of ordinary keys."""
    for dtype in (torch.bfloat16, torch.float16):
        keys = (torch.randn(512, 128, generator=torch.Generator().manual_seed(4)) * 3).to(dtype)
        accepted = [plain_sum_is_accepted(row.reshape(1, -1))[0] for row in keys]
        assert sum(accepted) > 0.9 * len(accepted)


def test_planted_bugs_in_m_and_in_the_rotation_fail_canonmerge_realstate(tmp_path):
    """Source-level bugs, caught by the product's own command on a scratch copy: the norms
    totalled with a plain float64 sum (C5: the key no longer equals the exact reference) and
    the small-render rotation (the compiled kernel small renders take) subtracting where it
    must add (C8: fidelity collapses).

    Not caught there, and so covered only by the unit tests in this file and in
    test_realstate_fragment_render.py: a plain float64 sum of each vector's squares (the seeded
    qwen3-tiny keys are benign: their float64 sums of squares happen to be exact, and the mean
    over vectors hides single-ulp norm errors — see KNOWN_ANSWERS for inputs that expose it),
    and bugs in how a batched render assembles its per-position tables (every relational claim
    still holds for a consistently wrong render; it needs an independent oracle)."""
    import json

    from audit import Patch, ScratchCopy

    scratch = ScratchCopy(tmp_path).apply(
        Patch("realstate/kernel/order_value.py", "total = math.fsum(norms.tolist())", "total = float(norms.sum())"),
        Patch("realstate/kernel/fused.py",
              "buf[b, t, j + half] = _narrow(k2 * cos[t, j + half] + k1 * sin[t, j + half], ieee_half)",
              "buf[b, t, j + half] = _narrow(k2 * cos[t, j + half] - k1 * sin[t, j + half], ieee_half)"))
    out = scratch.run("realstate", "--agents", "2", "--latent-steps", "0", "--decode-tokens", "1",
                      "--fidelity-offsets", "1", "--json", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    failed = {(r["claim"], r["check"].split(":")[0]) for part in json.loads(out.stdout)["parts"]
              for r in part["results"] if r["outcome"] == "fails"}
    assert ("C5", "order key equals the exact reference") in failed
    assert ("C8", "re-encoding fidelity") in failed


@pytest.mark.parametrize("shape", [(2, 0, 4), (2, 3, 0), (3, 4), (1, 2, 3, 4)])
def test_keys_that_are_not_h_n_d_with_n_d_at_least_1_are_refused_naming_the_shape(shape):
    with pytest.raises(ValueError, match=r"want middle-layer keys \[H, n, D\] with n, D >= 1, got shape"):
        exact_order_value(torch.zeros(shape, dtype=torch.bfloat16))


@pytest.mark.parametrize("array", [np.ones(3), np.ones((2, 2, 2)), np.ones((2, 3), dtype=np.float32)])
def test_the_exact_row_sum_refuses_anything_but_a_2d_float64_array(array):
    from realstate.kernel.order_value import correctly_rounded_row_sums

    with pytest.raises(ValueError, match="want a 2-D float64 array"):
        correctly_rounded_row_sums(array)
