"""The compiled kernel large renders re-encode with (realstate.kernel.fused): the literal formula's bits
on adversarial keys, on any thread count and block split; no fused multiply-add in what numba
compiled; where it does not apply (float16, another device, no numba) the torch path runs."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

pytest.importorskip("numba")  # a declared dependency; the guard only names the cause where it is missing

from realstate.evidence.probes import large_path_engines
from realstate.kernel import fused, rope  # noqa: E402
from realstate.kernel.engine import CANONICAL, chunked, unfused  # noqa: E402
from realstate.kernel.render import canonical_render  # noqa: E402
from realstate.kernel.rope import reencode_reference  # noqa: E402
from tests.realstate_helpers import random_fragment, tiny_fingerprint  # noqa: E402

HEAD_DIM = 16
INV_FREQ = tuple(1.0 / (1e6 ** (2 * i / HEAD_DIM)) for i in range(HEAD_DIM // 2))


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


def adversarial_keys(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Random keys over a wide exponent range, with signed zeros, infinities, subnormals, the
    extremes and values whose products round at a tie of the storage format."""
    g = torch.Generator().manual_seed(seed)
    keys = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-30, 30, shape, generator=g).float())
    keys = keys.to(dtype)
    info = torch.finfo(dtype)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), 1e-40, -1e-41, info.max, -info.max,
                             info.tiny, -info.tiny, 1.0 + info.eps / 2, 3.0, -1.5])
    flat = keys.view(-1)
    flat[: len(specials)] = specials.to(dtype)
    return keys


def write(dest_tokens: int, pieces: list[tuple[torch.Tensor, int, int]], dtype: torch.dtype) -> torch.Tensor:
    """The kernel's render of (keys, position, delta) pieces into a zeroed destination."""
    dest = torch.zeros(pieces[0][0].shape[0], pieces[0][0].shape[1], dest_tokens, HEAD_DIM, dtype=dtype)
    work = []
    for keys, position, delta in pieces:
        table = rope._delta_table(INV_FREQ, delta, dest.device)
        work.append((keys, position, table[0, 0], table[1, 0]))
    fused.rotate_pieces(dest, work)
    return dest


@pytest.mark.parametrize("dtype", fused.DTYPES)
@pytest.mark.parametrize("threads", [1, 2, 5])
def test_the_kernel_writes_the_literal_formulas_bits(dtype, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        pieces = [(adversarial_keys(dtype, (3, 2, n, HEAD_DIM), seed), position, delta)
                  for seed, (n, position, delta) in enumerate([(5, 0, 7), (9, 5, -3), (1, 14, 30000), (6, 20, 1)])]
        got = write(26, pieces, dtype)
    finally:
        torch.set_num_threads(before)
    for keys, position, delta in pieces:
        want = reencode_reference(keys, delta, INV_FREQ)
        part = got[:, :, position:position + keys.shape[2]]
        assert torch.equal(bits(part), bits(want))  # NaNs included: the canonical quiet NaN
    assert not got[:, :, 15:20].any()  # rows no piece covers are left as they were


@pytest.mark.parametrize("dtype", [d for d in fused.DTYPES if d != torch.float32])
def test_every_16_bit_key_is_widened_and_rounded_as_torch_does(dtype):
    """All 65,536 bit patterns as keys, at three deltas: every widening and every rounding case
    (ties, carries into the exponent, subnormals, overflow to infinity, NaN) the data can produce,
    against torch's rounding of the literal formula."""
    every = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)
    keys = every[: (every.numel() // HEAD_DIM) * HEAD_DIM].reshape(1, 1, -1, HEAD_DIM).contiguous()
    for delta in (1, 2, 1000):
        got = write(keys.shape[2], [(keys, 0, delta)], dtype)
        want = reencode_reference(keys, delta, INV_FREQ)
        assert torch.equal(bits(got), bits(want))  # NaNs included: the canonical quiet NaN


def test_an_error_in_a_helper_thread_reaches_the_caller(monkeypatch):
    def kernel(src, dst, row, cos, sin, ieee_half):
        if dst.base is not None and dst.ctypes.data != kernel.first:
            raise RuntimeError("boom in a helper")

    keys = torch.ones(4, 1, 3, HEAD_DIM, dtype=torch.float32)
    dest = torch.zeros(4, 1, 3, HEAD_DIM, dtype=torch.float32)
    kernel.first = dest.data_ptr()
    monkeypatch.setitem(fused._KERNELS, torch.float32, (kernel, *fused._KERNELS[torch.float32][1:]))
    table = rope._delta_table(INV_FREQ, 3, dest.device)
    with pytest.raises(RuntimeError, match="boom in a helper"):  # asked for two: a tiny render alone gets one
        fused.rotate_pieces(dest, [(keys, 0, table[0, 0], table[1, 0])], threads=2)


# each dtype compiles the kernel afresh (seconds): the default tier compiles the first, CI's heavy tier the rest
HEAVY_AFTER_THE_FIRST = [pytest.param(d, marks=() if i == 0 else pytest.mark.heavy) for i, d in enumerate(fused.DTYPES)]


def test_numba_compiled_no_fused_multiply_add():
    """A fused multiply-add rounds once where the formula rounds twice: it must not be in the
    machine code (numba compiles without fast-math; this reads what it actually compiled)."""
    for dtype in fused.DTYPES:
        kernel = fused._KERNELS[dtype][0]
        # numba gives no listing for code loaded from its disk cache: the same function compiled
        # afresh with the product's options but the cache
        options = {k: v for k, v in kernel.targetoptions.items() if k not in ("cache", "nopython")}
        assert not _fused_multiply_adds(kernel.py_func, options, dtype)
        if _host_has_fma():  # control: the same search finds them where fast-math allows contraction
            assert _fused_multiply_adds(kernel.py_func, {**options, "fastmath": True}, dtype)


def _fused_multiply_adds(function, options: dict, dtype: torch.dtype) -> list[str]:
    import numba

    compiled = numba.njit(**options)(function)
    keys = adversarial_keys(dtype, (2, 1, 4, HEAD_DIM), 1)
    table = rope._delta_table(INV_FREQ, 5, keys.device)
    _, element, ieee_half = fused._KERNELS[dtype]
    src, out = (fused._array(t.view(-1, 4, HEAD_DIM), element) for t in (keys, torch.zeros_like(keys)))
    compiled(src, out, 0, table[0, 0].numpy(), table[1, 0].numpy(), ieee_half)
    listings = list(compiled.inspect_asm().values())
    assert listings and all(re.search(r"\bv?mul[sp]s", asm) for asm in listings), "not the kernel's listing"
    return [m for asm in listings for m in re.findall(r"\bv?f(?:n)?m(?:add|sub)\w*", asm)]


@pytest.mark.parametrize("dtype", HEAVY_AFTER_THE_FIRST)
def test_the_small_renders_kernel_compiled_no_fused_multiply_add(dtype):
    """The same reading for the kernel small renders rotate with in place (vectorized: the
    listing must still hold separate multiplies and adds)."""
    import numba

    kernel = _inner_row_kernel(dtype)
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("cache", "nopython")}

    def listing_fmas(extra: dict) -> list[str]:
        compiled = numba.njit(**options, **extra)(kernel.py_func)
        _, element, ieee_half = fused._KERNELS[dtype]
        keys = adversarial_keys(dtype, (2, 1, 4, HEAD_DIM), 1)
        table = rope._delta_table(INV_FREQ, 5, keys.device)
        cos = table[0].expand(4, HEAD_DIM).contiguous().numpy()
        sin = table[1].expand(4, HEAD_DIM).contiguous().numpy()
        runs = np.array([[1, 4]], dtype=np.int64)
        compiled(fused._array(keys.view(-1, 4, HEAD_DIM), element), runs, cos, sin, ieee_half)
        listings = list(compiled.inspect_asm().values())
        assert listings and all(re.search(r"\bv?mul[sp]s", asm) for asm in listings), "not the kernel's listing"
        return [m for asm in listings for m in re.findall(r"\bv?f(?:n)?m(?:add|sub)\w*", asm)]

    assert not listing_fmas({})
    if _host_has_fma():
        assert listing_fmas({"fastmath": True})


@pytest.mark.parametrize("dtype", HEAVY_AFTER_THE_FIRST)
def test_the_small_renders_kernel_called_by_address_compiled_no_fused_multiply_add(dtype, monkeypatch):
    """``rotate_rows`` calls the in-place kernel through a compiled wrapper that views the buffer
    at its address: the kernel compiled into that wrapper must hold separate multiplies and adds
    too (the wrapper compiled afresh around the product's kernel; as control, around that kernel
    compiled with fast-math, where the same search finds them)."""
    import numba

    wrapper, ieee_half = fused._ROW_KERNELS_AT[dtype]
    options = {k: v for k, v in wrapper.targetoptions.items() if k not in ("cache", "nopython")}

    def listing_fmas() -> list[str]:
        keys = adversarial_keys(dtype, (2, 1, 4, HEAD_DIM), 1)
        table = rope._delta_table(INV_FREQ, 5, keys.device)
        cos = table[0].expand(4, HEAD_DIM).contiguous().numpy()
        sin = table[1].expand(4, HEAD_DIM).contiguous().numpy()
        compiled = numba.njit(**options)(wrapper.py_func)
        compiled(keys.data_ptr(), 2, 4, HEAD_DIM, np.array([[1, 4]], dtype=np.int64), cos, sin, ieee_half)
        listings = list(compiled.inspect_asm().values())
        assert listings and all(re.search(r"\bv?mul[sp]s", asm) for asm in listings), "not the kernel's listing"
        return [m for asm in listings for m in re.findall(r"\bv?f(?:n)?m(?:add|sub)\w*", asm)]

    assert not listing_fmas()
    if _host_has_fma():
        inner = _inner_row_kernel(dtype)
        monkeypatch.setattr(fused, inner.py_func.__name__, numba.njit(fastmath=True)(inner.py_func))
        assert listing_fmas()


def _inner_row_kernel(dtype: torch.dtype):  # type: ignore[no-untyped-def]
    """The in-place kernel ``rotate_rows``' address-taking wrapper calls for ``dtype``."""
    return fused._rotate_rows_float32 if dtype == torch.float32 else fused._rotate_rows_16bit


def _host_has_fma() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return " fma " in f.read(1 << 16).replace("\n", " ")
    except OSError:
        return False


def test_where_the_kernel_does_not_apply_renders_take_the_torch_path(monkeypatch):
    assert rope.fused_kernel(torch.zeros(1, 1, 1, 2, dtype=torch.bfloat16)) is fused
    half = torch.zeros(1, 1, 1, 2, dtype=torch.float16)
    assert rope.fused_kernel(half) is (fused if fused._hardware_half() else None)
    monkeypatch.delitem(fused._KERNELS, torch.float16, raising=False)
    assert rope.fused_kernel(half) is None
    assert rope.fused_kernel(torch.zeros(1, 1, 1, 2, dtype=torch.float32, device="meta")) is None
    assert not fused.applies(torch.zeros(1, 1, 1, 2, dtype=torch.float32, device="meta"))
    monkeypatch.setattr(rope, "NUMBA", False)
    assert rope.fused_kernel(torch.zeros(1, 1, 1, 2, dtype=torch.bfloat16)) is None


def test_a_render_on_the_kernel_and_on_torch_gives_the_same_bytes(monkeypatch):
    """The engines verify renders with: the compiled kernel, and torch's chunked path at both of
    chunk_probes' sizes; all the same digest as the small path.  The kernel is really called."""
    fs = [random_fragment(tiny_fingerprint("bfloat16"), n, seed=n, start=s) for n, s in ((3, 0), (2, 9), (4, 1))]
    head_dim = fs[0].keys.shape[-1]
    engines = large_path_engines(CANONICAL, 9, head_dim)
    assert [(e.fused, e.threads) for e in engines] == [(True, None), (True, 3), (False, None), (False, None)]
    assert unfused(chunked(CANONICAL, 8)).name == "canonical/chunk=8/torch"
    calls = []
    real = fused.rotate_pieces
    monkeypatch.setattr(fused, "rotate_pieces", lambda *a: (calls.append(1), real(*a)))
    want = canonical_render(fs, 5).digest()
    assert [canonical_render(fs, 5, engine=e).digest() for e in engines] == [want] * 4
    assert len(calls) == 2


def test_the_oracle_row_says_when_its_kernel_engine_took_torchs_path():
    from realstate.replay.oracle_row import _fused_note

    assert _fused_note(torch.zeros(1, 1, 1, 2, dtype=torch.bfloat16)) == ""
    note = _fused_note(torch.zeros(1, 1, 1, 2, dtype=torch.float32, device="meta"))
    assert "does not apply" in note and "on meta" in note and "torch path" in note
