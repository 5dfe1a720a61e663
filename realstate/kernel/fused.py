"""The compiled kernels renders re-encode with on the CPU.  Large renders: each key element is
read once from its fragment, rotated, rounded and written once into the render.  The torch path
(``realstate.kernel.rope._rotate_run``) does the same arithmetic in six passes over a float32 scratch,
which on a 2-core machine costs about three times a plain concatenation of the keys.  Small
renders: the keys, already concatenated, are rotated where they lie in one call
(``rotate_rows``), where torch would make six calls whose fixed cost is most of a small render's.

The arithmetic is the literal formula's, term for term: the key widened exactly to float32,
x₁ = k₁·c − k₂·s and x₂ = k₂·c + k₁·s from separately rounded products, rounded once to the
storage dtype (round to nearest even, as torch rounds), a NaN as the dtype's canonical quiet NaN
(positive, quiet bit only: ``realstate.kernel.dtypes.CANONICAL_NAN_BITS``, which the tests compare
with the literals here).
numba compiles without fast-math, so LLVM neither reassociates nor fuses a multiply with an add
(the tests read the compiled assembly for fused multiply-adds, and compare bits with the formula).

It applies to CPU keys in bfloat16, float32, and float16 where the CPU converts half precision in
hardware (F16C: LLVM's conversions, IEEE round to nearest even, as torch's); elsewhere the torch
path runs.  A large render's (layer, head) blocks are split between the threads
``realstate.kernel.threads`` gives a render of its size, or as many as asked (plain threads
calling a kernel that releases the GIL: safe under a caller's threads and forks, unlike numba's
parallel loops).  Compiled on first use (about 2 s), cached on disk."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numba
import numpy as np
import torch
from llvmlite import binding, ir
from numba import types
from numba.extending import intrinsic

from realstate.kernel.threads import threads_for


@intrinsic
def _float_from_bits(typingctx, bits):  # type: ignore[no-untyped-def]
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def _bits_from_float(typingctx, x):  # type: ignore[no-untyped-def]
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def _float_from_half(typingctx, bits):  # type: ignore[no-untyped-def]
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


@intrinsic
def _half_from_float(typingctx, x):  # type: ignore[no-untyped-def]
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


@numba.njit(inline="always")
def _widen(h, ieee_half):  # type: ignore[no-untyped-def]
    """16-bit key bits to float32, exactly: float16 by the hardware's conversion, bfloat16 by
    making its bits the float32's top half."""
    if ieee_half:
        return _float_from_half(h)
    return _float_from_bits(np.uint32(h) << np.uint32(16))


@numba.njit(inline="always")
def _narrow(x, ieee_half):  # type: ignore[no-untyped-def]
    """float32 to 16-bit bits, round to nearest even: float16 by the hardware's conversion,
    bfloat16 as torch's c10::BFloat16 rounds; a NaN as the canonical quiet NaN (the hardware's
    float16 conversion keeps the sign and payload)."""
    if x != x:
        return np.uint16(0x7E00) if ieee_half else np.uint16(0x7FC0)
    if ieee_half:
        return _half_from_float(x)
    u = _bits_from_float(x)
    return np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))


@numba.njit(inline="always")
def _quiet(x):  # type: ignore[no-untyped-def]
    """A float32 result, a NaN as the canonical quiet NaN (the CPU's arithmetic gives a negative
    default NaN for inf·0 or inf − inf, and carries an input NaN's sign and payload)."""
    if x != x:
        return _float_from_bits(np.uint32(0x7FC00000))
    return x


def _kernel(function):  # type: ignore[no-untyped-def]
    """Compiled without fast-math, releasing the GIL, cached on disk where numba finds a writable
    place (next to this file, or the user's cache); where it finds none, compiled in each process."""
    try:
        return numba.njit(nogil=True, cache=True)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return numba.njit(nogil=True)(function)


@_kernel
def _rotate_16bit(src, dst, row, cos, sin, ieee_half):  # type: ignore[no-untyped-def]
    """``src`` [B, n, D] and ``dst`` [B, T, D] as uint16 bits of float16 (``ieee_half``) or
    bfloat16; rows row..row+n of ``dst``."""
    blocks, tokens, head_dim = src.shape
    half = head_dim // 2
    for b in range(blocks):
        for t in range(tokens):
            for j in range(half):
                k1 = _widen(src[b, t, j], ieee_half)
                k2 = _widen(src[b, t, j + half], ieee_half)
                dst[b, row + t, j] = _narrow(k1 * cos[j] - k2 * sin[j], ieee_half)
                dst[b, row + t, j + half] = _narrow(k2 * cos[j + half] + k1 * sin[j + half], ieee_half)


@_kernel
def _rotate_float32(src, dst, row, cos, sin, _):  # type: ignore[no-untyped-def]
    """``src`` [B, n, D] and ``dst`` [B, T, D] as float32; rows row..row+n of ``dst``."""
    blocks, tokens, head_dim = src.shape
    half = head_dim // 2
    for b in range(blocks):
        for t in range(tokens):
            for j in range(half):
                k1 = src[b, t, j]
                k2 = src[b, t, j + half]
                dst[b, row + t, j] = _quiet(k1 * cos[j] - k2 * sin[j])
                dst[b, row + t, j + half] = _quiet(k2 * cos[j + half] + k1 * sin[j + half])


@_kernel
def _rotate_rows_16bit(buf, runs, cos, sin, ieee_half):  # type: ignore[no-untyped-def]
    """In place: rows ``runs[r, 0]..runs[r, 1]`` of ``buf`` [B, T, D] (uint16 bits of float16
    or bfloat16), row t by the angles whose float32 cos and sin are ``cos[t]``, ``sin[t]``."""
    blocks, _, head_dim = buf.shape
    half = np.uint64(head_dim // 2)  # unsigned indices: no wraparound checks, so LLVM vectorizes
    for r in range(runs.shape[0]):
        for b in range(np.uint64(blocks)):
            for t in range(np.uint64(runs[r, 0]), np.uint64(runs[r, 1])):
                for j in range(half):
                    k1 = _widen(buf[b, t, j], ieee_half)
                    k2 = _widen(buf[b, t, j + half], ieee_half)
                    buf[b, t, j] = _narrow(k1 * cos[t, j] - k2 * sin[t, j], ieee_half)
                    buf[b, t, j + half] = _narrow(k2 * cos[t, j + half] + k1 * sin[t, j + half], ieee_half)


@_kernel
def _rotate_rows_float32(buf, runs, cos, sin, _):  # type: ignore[no-untyped-def]
    """``_rotate_rows_16bit`` for ``buf`` in float32."""
    blocks, _, head_dim = buf.shape
    half = np.uint64(head_dim // 2)
    for r in range(runs.shape[0]):
        for b in range(np.uint64(blocks)):
            for t in range(np.uint64(runs[r, 0]), np.uint64(runs[r, 1])):
                for j in range(half):
                    k1 = buf[b, t, j]
                    k2 = buf[b, t, j + half]
                    buf[b, t, j] = _quiet(k1 * cos[t, j] - k2 * sin[t, j])
                    buf[b, t, j + half] = _quiet(k2 * cos[t, j + half] + k1 * sin[t, j + half])


@intrinsic
def _pointer(typingctx, address, element):  # type: ignore[no-untyped-def]
    """``address`` (an int64) as a pointer to ``element``'s type (a zero of that type names it)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
    return types.CPointer(element)(types.int64, element), codegen


@_kernel
def _rotate_rows_at_16bit(address, blocks, tokens, head_dim, runs, cos, sin, ieee_half):  # type: ignore[no-untyped-def]
    """``_rotate_rows_16bit`` on the [B, T, D] buffer at ``address``: viewed inside the compiled
    code, where the numpy view of it costs three Python calls per render."""
    buf = numba.carray(_pointer(address, np.uint16(0)), (blocks, tokens, head_dim))
    _rotate_rows_16bit(buf, runs, cos, sin, ieee_half)


@_kernel
def _rotate_rows_at_float32(address, blocks, tokens, head_dim, runs, cos, sin, ieee_half):  # type: ignore[no-untyped-def]
    """``_rotate_rows_at_16bit`` for a float32 buffer."""
    buf = numba.carray(_pointer(address, np.float32(0)), (blocks, tokens, head_dim))
    _rotate_rows_float32(buf, runs, cos, sin, ieee_half)


def _hardware_half() -> bool:
    """Whether numba compiles for a CPU with F16C (without it, LLVM would call helper routines
    for half precision that numba's JIT may not link)."""
    cpu = numba.config.CPU_NAME
    return (cpu is None or cpu == "host") and bool(binding.get_host_cpu_features().get("f16c", False))


# storage dtype -> (kernel, numpy element type of its arrays, whether the bits are IEEE half)
_KERNELS = {torch.bfloat16: (_rotate_16bit, np.uint16, False), torch.float32: (_rotate_float32, np.float32, False)}
# the in-place kernels small renders rotate with, called with the buffer's address (``rotate_rows``)
_ROW_KERNELS_AT = {torch.bfloat16: (_rotate_rows_at_16bit, False), torch.float32: (_rotate_rows_at_float32, False)}
if _hardware_half():
    _KERNELS[torch.float16] = (_rotate_16bit, np.uint16, True)
    _ROW_KERNELS_AT[torch.float16] = (_rotate_rows_at_16bit, True)
DTYPES = tuple(_KERNELS)


def applies(dest: torch.Tensor) -> bool:
    """Whether renders into ``dest`` can use the kernel."""
    return dest.is_cpu and dest.dtype in _KERNELS


def _array(t: torch.Tensor, as_type: type) -> np.ndarray:
    """A numpy view of ``t``'s bytes (no copy), its elements read as ``as_type`` (a tensor
    that carries autograd history is read as plain data)."""
    if t.requires_grad:
        t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().view(as_type)
    return t.numpy()


def rotate_pieces(dest: torch.Tensor, pieces: Sequence[tuple[torch.Tensor, int, torch.Tensor, torch.Tensor]],
                  threads: int | None = None) -> None:
    """Write each ``(keys [L, H, n, D], position, cos [D], sin [D])`` into ``dest [L, H, T, D]``
    at ``position`` along the token axis, rotated by the angles whose float32 cos and sin are
    given, the blocks split between ``threads`` (default ``threads_for`` the render's size).  The
    callers (``realstate.kernel.rope``) have checked shapes, dtypes and positions."""
    kernel, element, ieee_half = _KERNELS[dest.dtype]
    head_dim = dest.shape[-1]
    out = _array(dest.view(-1, dest.shape[2], head_dim), element)
    work = [(_array(keys.reshape(-1, keys.shape[2], head_dim), element), position,
             cos.numpy(), sin.numpy()) for keys, position, cos, sin in pieces]
    blocks = out.shape[0]
    threads = max(1, min(threads_for(dest.numel()) if threads is None else threads, blocks))
    bounds = [blocks * i // threads for i in range(threads + 1)]

    errors: list[BaseException] = []

    def share(b0: int, b1: int) -> None:
        try:
            for src, position, cos, sin in work:
                kernel(src[b0:b1], out[b0:b1], position, cos, sin, ieee_half)
        except BaseException as exc:  # re-raised in the caller's thread below
            errors.append(exc)

    helpers = [threading.Thread(target=share, args=(bounds[i], bounds[i + 1])) for i in range(1, threads)]
    for h in helpers:
        h.start()
    share(bounds[0], bounds[1])
    for h in helpers:
        h.join()
    if errors:
        raise errors[0]


def rotate_rows(dest: torch.Tensor, runs: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> None:
    """Rotate ``dest [L, H, T, D]`` where it lies, on one thread: rows ``runs[r, 0]..runs[r, 1]``
    (int64 [R, 2]) along the token axis, row t by the angles whose float32 cos and sin are
    ``cos[t]`` and ``sin[t]`` ([T, D]).  What small renders use: one call for the whole render,
    after the keys were concatenated in place (``realstate.kernel.rope.render_keys``)."""
    kernel, ieee_half = _ROW_KERNELS_AT[dest.dtype]
    layers, heads, tokens, head_dim = dest.shape
    kernel(_address(dest), layers * heads, tokens, head_dim, runs, cos, sin, ieee_half)


def _address(t: torch.Tensor) -> int:
    """Where ``t``'s bytes start, for the kernel to view them as [L·H, T, D] and write into them
    where they lie (the caller holds ``t``): one call, where torch's view, its numpy bridge and
    numpy's view make three, a microsecond of a tiny render.  Only a contiguous CPU buffer can be
    read so (``render_keys`` hands over its fresh concatenation); anything else is refused rather
    than rotated in a copy."""
    if not (t.is_cpu and t.is_contiguous()):
        raise ValueError("rotate_rows rotates a contiguous CPU tensor where it lies")
    return t.data_ptr()
