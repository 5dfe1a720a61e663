"""RoPE re-encoding: move keys encoded at ``start`` to offset ``o`` by rotating them by δ = o − start.

Qwen3 uses the NeoX convention (``rotate_half``).  The angles δ·inv_freq use the frequencies the
model really uses (from the fingerprint); cos/sin are computed in float64 on the CPU and rounded
once to float32; the rotation is applied in float32 as k·cos + rotate_half(k)·sin with separate
multiplies and adds (no fused multiply-add, so CPU and GPU round alike), and the result is
rounded once to the storage dtype; a NaN result is then stored as the storage dtype's canonical
quiet NaN (``realstate.kernel.dtypes.CANONICAL_NAN_BITS``: positive, quiet bit only), whatever
NaN the hardware or the cast produced.  δ = 0 copies the keys untouched: the arithmetic with
cos = 1, sin = 0 would turn −0 into +0 and rewrite NaN bits.

``reencode_reference`` is that formula written literally.  ``render_keys`` is what renders use:
all fragments of a render at once, consecutive fragments with δ ≠ 0 batched together (each
position row carries its own fragment's cos/sin); ``reencode_into`` is the per-fragment form.
The keys are widened once to float32 (X), and X₁ = k₁c − k₂s, X₂ = k₂c + k₁s are formed from
separately rounded products and rounded once to the storage dtype: for small renders of CPU
keys where ``realstate.kernel.fused``'s kernels apply, by one compiled call on the concatenated
keys (a small render is mostly per-call cost, and torch needs six calls); else as
X·C + roll(X)·[−S, S] (small renders: fewest operations) or as X·C, then X₁ −= (X·S)₂ and
X₂ += (X·S)₁ (large renders, chunk by chunk in cache), or, for large renders of CPU keys in
bfloat16 or float32, by ``realstate.kernel.fused``'s compiled kernel in one pass.  Each is the literal
formula term for term, since a + (−b) = a − b and (−x)·s = −(x·s) exactly in IEEE arithmetic.
Rotation tables are cached per (frequencies, δ) and per layout of small renders.  Renders and
the literal formula agree bit for bit on every input, NaN results included (tested)."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from types import ModuleType

import numpy as np
import torch

from realstate.kernel.dtypes import canonical_nan_
from realstate.kernel.threads import limited

# elements per chunk (and the size up to which a render is rotated in place in one go): large
# enough that per-call overhead is small, small enough that the float32 scratch stays in the
# last-level cache.  2**17..2**19 measured alike on the qwen3-1.7b geometry on a loaded 2-core
# machine (benchmarks/bench_realstate.py --chunk sweeps it).
CHUNK_ELEMENTS = 1 << 19
# layout tables of at most this many elements (positions x head dim) are cached
_CACHED_TABLE_ELEMENTS = 1 << 14
# realstate.kernel.fused compiles with numba; where numba is not installed, large renders take the torch path
NUMBA = importlib.util.find_spec("numba") is not None


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotation_tables(inv_freq: Sequence[float], delta: int, device: torch.device | str = "cpu"
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of δ·inv_freq, duplicated over the two halves: float32 vectors of length D."""
    angles = [float(delta) * f for f in inv_freq]
    cos = [math.cos(a) for a in angles]
    sin = [math.sin(a) for a in angles]
    cos64 = torch.tensor(cos + cos, dtype=torch.float64)
    sin64 = torch.tensor(sin + sin, dtype=torch.float64)
    return cos64.to(torch.float32).to(device), sin64.to(torch.float32).to(device)


def reencode_reference(keys: torch.Tensor, delta: int, inv_freq: Sequence[float],
                       rotate: Callable[[torch.Tensor], torch.Tensor] = rotate_half) -> torch.Tensor:
    """Keys ``[..., D]`` rotated by ``delta`` positions: the literal formula, a new tensor."""
    if delta == 0:
        return keys.clone()
    cos, sin = rotation_tables(inv_freq, delta, keys.device)
    k = keys.to(torch.float32)
    turned = k * cos
    turned += rotate(k) * sin
    out = turned.to(keys.dtype)
    canonical_nan_(out)
    return out


@lru_cache(maxsize=4096)
def _delta_table(inv_freq: tuple[float, ...], delta: int, device: torch.device) -> torch.Tensor:
    """[3, 1, D] on ``device``: cos, sin and sign-flipped sin ([−sin, sin] over the two halves)
    of ``rotation_tables``; callers never write into it."""
    cos, sin = rotation_tables(inv_freq, delta)
    half = cos.shape[0] // 2
    signed = torch.cat((-sin[:half], sin[half:]))
    return torch.stack((cos, sin, signed)).unsqueeze(1).to(device)


_Spans = tuple[tuple[int, int], ...]  # (tokens, δ) of pieces lying back to back
_Run = tuple[int, int, _Spans]  # start, length and spans of back-to-back pieces with δ ≠ 0


def _runs(spans: _Spans) -> list[_Run]:
    """Maximal groups of back-to-back pieces with δ ≠ 0."""
    runs: list[_Run] = []
    group: list[tuple[int, int]] = []
    position = length = 0
    for n, delta in [*spans, (0, 0)]:
        if delta == 0 and group:
            runs.append((position - length, length, tuple(group)))
            group, length = [], 0
        elif delta != 0:
            group.append((n, delta))
            length += n
        position += n
    return runs


def _span_tables(inv_freq: tuple[float, ...], spans: _Spans, device: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """cos, sin and sign-flipped sin, each [T, D]: row t is the table for the δ of the piece
    at position t."""
    head_dim = 2 * len(inv_freq)
    parts = [_delta_table(inv_freq, delta, device).expand(3, n, head_dim) for n, delta in spans]
    tables = parts[0].contiguous() if len(parts) == 1 else torch.cat(parts, dim=1)
    return tables[0], tables[1], tables[2]


_Plan = tuple[tuple[int, int, torch.Tensor, torch.Tensor], ...]


def _small_plan(inv_freq: tuple[float, ...], spans: _Spans, tokens: int, device: torch.device) -> _Plan:
    """For a small render: each run's start, length, cos and sign-flipped sin tables (cached
    while the tables are small: a checker renders the same layouts over and over)."""
    if tokens * 2 * len(inv_freq) <= _CACHED_TABLE_ELEMENTS:
        return _cached_small_plan(inv_freq, spans, device)
    return _build_small_plan(inv_freq, spans, device)


@lru_cache(maxsize=128)
def _cached_small_plan(inv_freq: tuple[float, ...], spans: _Spans, device: torch.device) -> _Plan:
    return _build_small_plan(inv_freq, spans, device)


def _build_small_plan(inv_freq: tuple[float, ...], spans: _Spans, device: torch.device) -> _Plan:
    plan = []
    for start, length, run in _runs(spans):
        cos, _, signed_sin = _span_tables(inv_freq, run, device)
        plan.append((start, length, cos, signed_sin))
    return tuple(plan)


_RowPlan = tuple[np.ndarray, np.ndarray, np.ndarray]


def _row_plan(inv_freq: tuple[float, ...], spans: _Spans, tokens: int) -> _RowPlan:
    """For the compiled small path: the runs to rotate (int64 [R, 2], start and end rows) and
    float32 cos and sin tables [T, D] whose row t is the table for the δ of the piece at
    position t (rows of pieces with δ = 0 are never read).  Cached while the tables are small."""
    if tokens * 2 * len(inv_freq) <= _CACHED_TABLE_ELEMENTS:
        return _cached_row_plan(inv_freq, spans)
    return _build_row_plan(inv_freq, spans)


@lru_cache(maxsize=128)
def _cached_row_plan(inv_freq: tuple[float, ...], spans: _Spans) -> _RowPlan:
    return _build_row_plan(inv_freq, spans)


def _build_row_plan(inv_freq: tuple[float, ...], spans: _Spans) -> _RowPlan:
    rotated = tuple((n, delta if delta else 1) for n, delta in spans)  # δ = 0 rows: any table, unread
    cos, sin, _ = _span_tables(inv_freq, rotated, torch.device("cpu"))
    runs = np.array([(start, start + length) for start, length, _ in _runs(spans)], dtype=np.int64)
    return runs.reshape(-1, 2), cos.numpy(), sin.numpy()


def render_keys(sources: Sequence[torch.Tensor], spans: _Spans, inv_freq: Sequence[float],
                chunk_elements: int | None = None, fused: bool = True, threads: int | None = None,
                tokens: int | None = None) -> torch.Tensor:
    """The keys of a render: ``sources[i]`` ([L, H, n_i, D]) laid back to back along the token
    axis, each rotated by its δ from ``spans[i] = (n_i, δ_i)``.  The sources come from validated
    fragments of one fingerprint (``render_layout`` checks that), so they are not checked again.
    ``chunk_elements`` (default ``CHUNK_ELEMENTS``) is where the chunked path starts: the bytes
    are the same either way, and a small value lets tiny inputs drive the large-render path.
    ``fused`` lets that path use the compiled kernel where it applies (else torch's operations),
    which splits the work between ``threads`` (default: torch's thread count).  ``tokens``, the
    spans' total where the caller has it already, saves summing them again."""
    first = sources[0]
    layers, heads, _, head_dim = first.shape
    if tokens is None:
        tokens = sum([n for n, _ in spans])
    frequencies = tuple(inv_freq)
    chunk = CHUNK_ELEMENTS if chunk_elements is None else chunk_elements
    elements = layers * heads * tokens * head_dim
    if elements <= chunk:
        with limited(elements):
            dest = torch.cat(sources, dim=2)
            kernel = fused_kernel(dest) if fused else None
            if kernel is not None:  # one compiled call rotates every run where it lies
                runs, cos, sin = _row_plan(frequencies, spans, tokens)
                if len(runs):
                    kernel.rotate_rows(dest, runs, cos, sin)
                return dest
            for start, length, cos, signed_sin in _small_plan(frequencies, spans, tokens, first.device):
                _rotate_in_place(dest, start, length, cos, signed_sin)
        return dest
    dest = torch.empty((layers, heads, tokens, head_dim), dtype=first.dtype, device=first.device)
    position, pieces = 0, []
    for keys, (n, delta) in zip(sources, spans):
        pieces.append((keys, position, delta))
        position += n
    _write_spans(dest, pieces, frequencies, chunk, fused, threads)
    return dest


def reencode_spans(dest: torch.Tensor, pieces: Sequence[tuple[torch.Tensor, int, int]],
                   inv_freq: Sequence[float], chunk_elements: int | None = None, fused: bool = True,
                   threads: int | None = None) -> None:
    """Write each ``(keys [L, H, n, D], position, delta)`` into ``dest [L, H, T, D]`` at
    ``position`` along the token axis, rotated by ``delta`` (δ = 0: copied untouched)."""
    layers, heads, tokens, head_dim = dest.shape
    if 2 * len(inv_freq) != head_dim:
        raise ValueError(f"{len(inv_freq)} frequencies for head dim {head_dim}")
    for keys, position, _ in pieces:
        n = keys.shape[2]
        if keys.shape != (layers, heads, n, head_dim) or keys.dtype != dest.dtype or not (
                0 <= position and position + n <= tokens):
            raise ValueError(f"keys {tuple(keys.shape)} {keys.dtype} at position {position} do not fit "
                             f"the destination {tuple(dest.shape)} {dest.dtype}")
    frequencies = tuple(inv_freq)
    chunk = CHUNK_ELEMENTS if chunk_elements is None else chunk_elements
    if dest.numel() > chunk:
        _write_spans(dest, pieces, frequencies, chunk, fused, threads)
        return
    with limited(dest.numel()):
        for keys, position, delta in pieces:  # few elements: copy, then rotate with the fewest operations
            dest[:, :, position:position + keys.shape[2]].copy_(keys)
            if delta != 0:
                tables = _delta_table(frequencies, delta, dest.device)  # [3, 1, D]: broadcast over positions
                _rotate_in_place(dest, position, keys.shape[2], tables[0], tables[2])


def _write_spans(dest: torch.Tensor, pieces: Sequence[tuple[torch.Tensor, int, int]],
                 inv_freq: tuple[float, ...], chunk: int, fused: bool, threads: int | None) -> None:
    """From the sources straight into ``dest``: by the compiled kernel where it applies (and
    ``fused``), else chunk by chunk with pieces with δ ≠ 0 that lie back to back rotated together.
    Torch's operations and the kernel (unless ``threads`` is given) run on the threads
    ``realstate.kernel.threads`` gives a render of this size."""
    with limited(dest.numel()):
        _write_spans_limited(dest, pieces, inv_freq, chunk, fused, threads)


def _write_spans_limited(dest: torch.Tensor, pieces: Sequence[tuple[torch.Tensor, int, int]],
                         inv_freq: tuple[float, ...], chunk: int, fused: bool, threads: int | None) -> None:
    kernel = fused_kernel(dest) if fused else None
    if kernel is not None:
        _write_fused(dest, pieces, inv_freq, kernel, threads)
        return
    group: list[tuple[torch.Tensor, int, int]] = []
    for piece in pieces:
        keys, position, delta = piece
        if group and (delta == 0 or position != group[-1][1] + group[-1][0].shape[2]):
            _rotate_run(dest, group, inv_freq, chunk)
            group = []
        if delta == 0:
            dest[:, :, position:position + keys.shape[2]].copy_(keys)
        else:
            group.append(piece)
    if group:
        _rotate_run(dest, group, inv_freq, chunk)


def fused_kernel(dest: torch.Tensor) -> ModuleType | None:
    """``realstate.kernel.fused`` where its kernels apply to ``dest`` (imported on the first render
    of CPU keys: numba takes a few tenths of a second to import, which a command that renders
    nothing never pays)."""
    if not NUMBA or not dest.is_cpu:
        return None
    fused = _fused_module()
    return fused if fused.applies(dest) else None


@lru_cache(maxsize=1)
def _fused_module() -> ModuleType:
    from realstate.kernel import fused

    return fused


def _write_fused(dest: torch.Tensor, pieces: Sequence[tuple[torch.Tensor, int, int]],
                 inv_freq: tuple[float, ...], kernel: ModuleType, threads: int | None) -> None:
    rotated = []
    for keys, position, delta in pieces:
        if delta == 0:
            dest[:, :, position:position + keys.shape[2]].copy_(keys)
        else:
            table = _delta_table(inv_freq, delta, dest.device)  # [3, 1, D]: cos, sin, signed sin
            rotated.append((keys, position, table[0, 0], table[1, 0]))
    if rotated:
        kernel.rotate_pieces(dest, rotated, threads)


def _rotate_in_place(dest: torch.Tensor, start: int, length: int, cos: torch.Tensor,
                     signed_sin: torch.Tensor) -> None:
    """Rotate positions start..start+length of ``dest`` where they lie:
    k·C + roll(k, D/2)·[−S, S] in float32, rounded once on the way back."""
    region = dest if length == dest.shape[2] else dest.narrow(2, start, length)
    turned = region.float()  # exact widening: [k1, k2] (.float() parses fewer arguments than .to)
    swapped = turned.roll(dest.shape[-1] // 2, -1)  # [k2, k1]
    swapped.mul_(signed_sin)  # [−k2·s, k1·s]
    turned.mul_(cos)  # [k1·c, k2·c]
    turned.add_(swapped)  # [k1·c − k2·s, k2·c + k1·s]
    _store_rounded(region, turned)


def _store_rounded(dest: torch.Tensor, turned: torch.Tensor) -> None:
    """Write float32 ``turned`` into ``dest``, rounded once to the storage dtype, a NaN as the
    canonical quiet NaN.  On the CPU the NaN pass runs only where ``turned``'s sum is NaN (every
    NaN makes it so; a NaN mask costs several times the copy, the sum a third of it); on other
    devices it always runs (reading the sum back would make the host wait for the device)."""
    dest.copy_(turned)
    if not dest.is_cpu or bool(turned.sum().isnan()):
        canonical_nan_(dest)  # whatever NaN the arithmetic and the cast wrote


def _rotate_run(dest: torch.Tensor, run: Sequence[tuple[torch.Tensor, int, int]],
                inv_freq: tuple[float, ...], chunk: int) -> None:
    """Rotate fragments that go back to back into ``dest`` (each δ ≠ 0), in chunks of
    (layer·head blocks) x (positions), from the sources into ``dest``."""
    head_dim = dest.shape[-1]
    half = head_dim // 2
    start = run[0][1]
    length = sum(keys.shape[2] for keys, _, _ in run)
    out = dest.view(-1, dest.shape[2], head_dim)  # raises rather than silently writing into a copy
    sources = [(keys.reshape(-1, keys.shape[2], head_dim), position - start) for keys, position, _ in run]
    cos, sin, _ = _span_tables(inv_freq, tuple((keys.shape[2], delta) for keys, _, delta in run), dest.device)
    blocks_total = out.shape[0]
    if length * head_dim <= chunk:
        blocks, rows = min(blocks_total, chunk // (length * head_dim)), length
    else:
        blocks, rows = 1, max(1, chunk // head_dim)
    scratch = torch.empty(2 * blocks * rows * head_dim, dtype=torch.float32, device=dest.device)
    for b0 in range(0, blocks_total, blocks):
        b1 = min(blocks_total, b0 + blocks)
        for r0 in range(0, length, rows):
            r1 = min(length, r0 + rows)
            size = (b1 - b0) * (r1 - r0) * head_dim
            x = scratch[:size].view(b1 - b0, r1 - r0, head_dim)
            q = scratch[size:2 * size].view(b1 - b0, r1 - r0, head_dim)
            for src, at in sources:  # exact widening to float32, piece by piece (a cat into a
                lo, hi = max(r0, at), min(r1, at + src.shape[1])  # wider dtype would copy twice)
                if lo < hi:
                    x[:, lo - r0:hi - r0].copy_(src[b0:b1, lo - at:hi - at])
            torch.mul(x, sin[r0:r1], out=q)  # [k1·s, k2·s]
            x.mul_(cos[r0:r1])  # [k1·c, k2·c]
            x1, x2 = x.split_with_sizes([half, half], dim=-1)
            q1, q2 = q.split_with_sizes([half, half], dim=-1)
            x1.sub_(q2)  # k1·c − k2·s
            x2.add_(q1)  # k2·c + k1·s
            _store_rounded(out[b0:b1, start + r0:start + r1], x)


def reencode_into(dest: torch.Tensor, keys: torch.Tensor, delta: int, inv_freq: Sequence[float]) -> None:
    """Write ``keys [..., n, D]`` rotated by ``delta`` into ``dest`` (same shape and dtype; any
    strides that let the leading dimensions merge, else it raises rather than write a copy)."""
    if dest.shape != keys.shape or keys.dim() < 2:
        raise ValueError(f"destination {tuple(dest.shape)} != keys {tuple(keys.shape)}, or not [..., n, D]")
    tokens, head_dim = keys.shape[-2:]
    reencode_spans(dest.view(1, -1, tokens, head_dim), [(keys.reshape(1, -1, tokens, head_dim), 0, delta)],
                   inv_freq)


def reencode_keys(keys: torch.Tensor, delta: int, inv_freq: Sequence[float]) -> torch.Tensor:
    """Keys rotated by ``delta`` positions, as a new tensor (the renders' arithmetic)."""
    out = torch.empty_like(keys)
    reencode_into(out, keys, delta, inv_freq)
    return out
