"""The three renders of DESIGN.md, from plain bytes: canonical (the set, by key), bag (list order,
duplicates kept) and naive (list order, no re-encoding).

Input is plain data (``FragmentData``): no tensors, no product objects, so nothing the product
computes can leak into the reference.  Output is a ``RenderBytes``: the rendered keys and values
as little-endian bytes ``[L, H, T, D]``, the layout (content id, offset) and the render digest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from oracle.formats import StorageFormat, storage_format
from oracle.identity import digest_with_inputs, framed_digest
from oracle.order import order_key, order_value_bits
from oracle.rotation import rotate_bits


@dataclass(frozen=True)
class FragmentData:
    """One fragment as bytes: what its content id is computed from."""

    fingerprint_digest: bytes
    dtype: str
    layers: int
    heads: int
    tokens: int
    head_dim: int
    start: int
    keys: bytes = field(repr=False)
    values: bytes = field(repr=False)
    # a version-2 fragment's inputs: [tokens, hidden] elements of the same dtype; they enter the
    # id, never the render
    inputs: bytes | None = field(default=None, repr=False)
    hidden: int = 0

    def __post_init__(self) -> None:
        fmt = storage_format(self.dtype)
        dims = (self.layers, self.heads, self.tokens, self.head_dim)
        if any(not isinstance(d, int) or d < 1 for d in dims):
            raise ValueError(f"fragment dimensions must be positive integers, got {dims}")
        if not isinstance(self.start, int) or self.start < 0:
            raise ValueError(f"fragment start must be a non-negative integer, got {self.start!r}")
        want = self.layers * self.heads * self.tokens * self.head_dim * fmt.width // 8
        for name in ("keys", "values"):
            if len(getattr(self, name)) != want:
                raise ValueError(f"{name}: {len(getattr(self, name))} bytes, want {want} for {dims} {self.dtype}")
        if self.inputs is not None:
            if not isinstance(self.hidden, int) or self.hidden < 1:
                raise ValueError(f"inputs need a positive integer width, got hidden={self.hidden!r}")
            if len(self.inputs) != self.tokens * self.hidden * fmt.width // 8:
                raise ValueError(f"inputs: {len(self.inputs)} bytes, want {self.tokens} x {self.hidden} {self.dtype}")

    @property
    def format(self) -> StorageFormat:
        return storage_format(self.dtype)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (self.layers, self.heads, self.tokens, self.head_dim)

    def key_bits(self) -> np.ndarray:
        return np.frombuffer(self.keys, dtype=self.format.bits_dtype).reshape(self.shape)

    def value_bits(self) -> np.ndarray:
        return np.frombuffer(self.values, dtype=self.format.bits_dtype).reshape(self.shape)

    @cached_property
    def content_id(self) -> bytes:
        if self.inputs is not None:
            return digest_with_inputs(self.fingerprint_digest, self.format.code, self.shape, self.start,
                                      self.keys, self.values, self.inputs, self.hidden)
        return framed_digest(self.fingerprint_digest, self.format.code, self.shape, self.start,
                             self.keys, self.values)

    @cached_property
    def order_value_bits(self) -> int:
        return order_value_bits(self.format, self.key_bits()[self.layers // 2])

    @property
    def order_key(self) -> bytes:
        return order_key(self.order_value_bits, self.content_id)

    def geometry(self) -> tuple[bytes, str, int, int, int]:
        """What two fragments must share to be rendered together."""
        return (self.fingerprint_digest, self.dtype, self.layers, self.heads, self.head_dim)


@dataclass(frozen=True)
class RenderBytes:
    """A rendered context as bytes; the product's render is converted to the same shape to compare."""

    fingerprint_digest: bytes
    dtype: str
    shape: tuple[int, int, int, int]
    base: int
    keys: bytes = field(repr=False)
    values: bytes = field(repr=False)
    layout: tuple[tuple[bytes, int], ...]  # (content id, offset) per placement, in order
    digest: str  # hex


def canonical_order(fragments: Sequence[FragmentData]) -> list[FragmentData]:
    """The set (one per content id), ascending by order key."""
    members: dict[bytes, FragmentData] = {}
    for f in fragments:
        members.setdefault(f.content_id, f)
    return sorted(members.values(), key=lambda f: f.order_key)


def render(ordered: Sequence[FragmentData], inv_freq: Sequence[float], base: int = 0,
           reencode: bool = True) -> RenderBytes:
    """Lay ``ordered`` out from ``base`` (o_1 = base, o_{i+1} = o_i + n_i), rotating each key by
    δ = offset − start unless ``reencode`` is false; values are copied."""
    if not ordered:
        raise ValueError("nothing to render: no fragments")
    if not isinstance(base, int) or base < 0:
        raise ValueError(f"base must be a non-negative integer, got {base!r}")
    first = ordered[0]
    for f in ordered[1:]:
        if f.geometry() != first.geometry():
            raise ValueError("fragments with different fingerprints, dtypes or shapes never render together")
    fmt = first.format
    total = sum(f.tokens for f in ordered)
    shape = (first.layers, first.heads, total, first.head_dim)
    keys = np.empty(shape, dtype=fmt.bits_dtype)
    values = np.empty(shape, dtype=fmt.bits_dtype)
    layout, offset = [], base
    for f in ordered:
        column = offset - base
        delta = offset - f.start if reencode else 0
        keys[:, :, column:column + f.tokens] = rotate_bits(fmt, f.key_bits(), delta, inv_freq)
        values[:, :, column:column + f.tokens] = f.value_bits()
        layout.append((f.content_id, offset))
        offset += f.tokens
    key_bytes, value_bytes = keys.tobytes(), values.tobytes()
    digest = framed_digest(first.fingerprint_digest, fmt.code, shape, base, key_bytes, value_bytes)
    return RenderBytes(first.fingerprint_digest, fmt.name, shape, base, key_bytes, value_bytes, tuple(layout),
                       digest.hex())


def canonical_render(fragments: Sequence[FragmentData], inv_freq: Sequence[float], base: int = 0) -> RenderBytes:
    return render(canonical_order(fragments), inv_freq, base)


def bag_render(fragments: Sequence[FragmentData], inv_freq: Sequence[float], base: int = 0) -> RenderBytes:
    return render(list(fragments), inv_freq, base)


def naive_render(fragments: Sequence[FragmentData], inv_freq: Sequence[float], base: int = 0) -> RenderBytes:
    return render(list(fragments), inv_freq, base, reencode=False)
