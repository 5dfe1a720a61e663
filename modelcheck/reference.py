"""A pure-Python reference backend, to test the checker itself.

It exists so that modelcheck's tests run without torch and so that its mutants have a correct
base to break.  It is NOT what ``canonmerge check`` checks: the CLI checks realstate's own
render, passed in as a ``Backend``.  Here the render digest is SHA-256 over the canonically
ordered fragment descriptions with their new offsets (no float re-encoding needed to decide
byte-identity); only ``render_as_fragment`` re-encodes RoPE, for the incremental-merge mutant."""

from __future__ import annotations

import functools
import hashlib
import math
import struct
from collections.abc import Hashable, Sequence

from modelcheck.backend import DTYPE_BITS, FragmentDesc, Geometry
from modelcheck.floatbits import CANONICAL_NAN, decode, encode, to_float32
from spec import FragmentSet, canonical_order, order_key

_FRAGMENT_MAGIC = b"CMREFFRAG1"
_RENDER_MAGIC = b"CMREFRNDR1"


class RefFragment:
    """A (geometry, desc) pair; id and ``m`` are computed once per object, from the bits."""

    __slots__ = ("geometry", "desc", "_cid", "_m", "_encoded")

    def __init__(self, geometry: Geometry, desc: FragmentDesc) -> None:
        self.geometry = geometry
        self.desc = desc
        self._cid: bytes | None = None
        self._m: float | None = None
        self._encoded: bytes | None = None

    def encoded(self) -> bytes:
        """The description's bytes (start, tokens, keys, values), encoded once per object."""
        if self._encoded is None:
            self._encoded = _encode_desc(self.geometry, self.desc)
        return self._encoded

    def __repr__(self) -> str:
        cid = self._cid.hex()[:12] if self._cid else "?"
        return f"RefFragment(id={cid}, start={self.desc.start}, tokens={self.desc.tokens})"


@functools.lru_cache(maxsize=64)
def _encode_geometry(g: Geometry) -> bytes:
    out = struct.pack("<III", g.layers, g.kv_heads, g.head_dim) + g.dtype.encode() + b"\0"
    return out + b"".join(struct.pack("<d", f) for f in g.inv_freq)


def _encode_tensor(t: Sequence, width: int) -> bytes:
    fmt = "<H" if width == 16 else "<I"
    return b"".join(struct.pack(fmt, x) for layer in t for head in layer for vec in head for x in vec)


def _encode_desc(g: Geometry, d: FragmentDesc) -> bytes:
    width = DTYPE_BITS[g.dtype]
    return (struct.pack("<qI", d.start, d.tokens) + _encode_tensor(d.keys, width)
            + _encode_tensor(d.values, width))


def order_value_of(g: Geometry, d: FragmentDesc) -> float:
    """m exactly as DESIGN.md defines it: fsum of exact squares, sqrt, fsum of norms / count."""
    rows = [[decode(b, g.dtype) for b in vec] for head in d.keys[g.layers // 2] for vec in head]
    if any(math.isnan(x) for row in rows for x in row):
        return CANONICAL_NAN
    if any(math.isinf(x) for row in rows for x in row):
        return math.inf
    norms = [math.sqrt(math.fsum(x * x for x in row)) for row in rows]
    return math.fsum(norms) / len(norms)


def _rotate(g: Geometry, vec: tuple[int, ...], delta: int) -> tuple[int, ...]:
    """NeoX rotate-half RoPE by ``delta``: cos/sin in float64, applied in float32, rounded once."""
    if delta == 0:
        return vec
    half = g.head_dim // 2
    k = [decode(b, g.dtype) for b in vec]
    cos = [to_float32(math.cos(delta * f)) for f in g.inv_freq] * 2
    sin = [to_float32(math.sin(delta * f)) for f in g.inv_freq] * 2
    rot = [-k[i + half] for i in range(half)] + [k[i] for i in range(half)]
    out = [to_float32(to_float32(k[i] * cos[i]) + to_float32(rot[i] * sin[i])) for i in range(len(k))]
    return tuple(encode(x, g.dtype) for x in out)


class ReferenceBackend:
    """The correct CvRDT: state = ``FragmentSet`` by content id; render = canonical order."""

    name = "reference"

    def build(self, geometry: Geometry, desc: FragmentDesc) -> RefFragment:
        return RefFragment(geometry, desc)

    def copy(self, fragment: RefFragment) -> RefFragment:
        return RefFragment(fragment.geometry, fragment.desc)

    def content_id(self, fragment: RefFragment) -> bytes:
        if fragment._cid is None:
            data = _FRAGMENT_MAGIC + _encode_geometry(fragment.geometry) + _encode_desc(
                fragment.geometry, fragment.desc)
            fragment._cid = hashlib.sha256(data).digest()
        return fragment._cid

    def order_value(self, fragment: RefFragment) -> float:
        if fragment._m is None:
            fragment._m = order_value_of(fragment.geometry, fragment.desc)
        return fragment._m

    def order_key(self, fragment: RefFragment) -> bytes:
        return order_key(self.order_value(fragment), self.content_id(fragment))

    def singleton(self, fragment: RefFragment) -> FragmentSet[RefFragment]:
        return FragmentSet.of([fragment], self.content_id)

    def merge(self, a: FragmentSet[RefFragment], b: FragmentSet[RefFragment]) -> FragmentSet[RefFragment]:
        return a.merge(b)

    def abstract(self, state: FragmentSet[RefFragment]) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(state.ids())

    def state_key(self, state: FragmentSet[RefFragment]) -> Hashable:
        return state.ids()

    def _ordered(self, state: FragmentSet[RefFragment]) -> list[RefFragment]:
        return canonical_order(state.items(), self.order_key)

    def render_order(self, state: FragmentSet[RefFragment]) -> list[bytes]:
        return [self.content_id(f) for f in self._ordered(state)]

    def order_of(self, fragments: Sequence[RefFragment]) -> list[bytes]:
        return [self.content_id(f) for f in canonical_order(list(fragments), self.order_key)]

    def render_digest(self, state: FragmentSet[RefFragment], base: int = 0) -> str:
        return self.bag_digest(self._ordered(state), base)

    def bag_digest(self, fragments: Sequence[RefFragment], base: int = 0) -> str:
        if not fragments:
            raise ValueError("nothing to render: no fragments")
        g = fragments[0].geometry
        if any(f.geometry != g for f in fragments):
            raise ValueError("fragments with different geometries never merge")
        h = hashlib.sha256(_RENDER_MAGIC + _encode_geometry(g))
        offset = base
        for f in fragments:
            h.update(struct.pack("<q", offset) + f.encoded())
            offset += f.desc.tokens
        return h.hexdigest()

    def render_as_fragment(self, fragments: Sequence[RefFragment]) -> RefFragment:
        if not fragments:
            raise ValueError("nothing to render: no fragments")
        g = fragments[0].geometry
        keys = [[[] for _ in range(g.kv_heads)] for _ in range(g.layers)]
        values = [[[] for _ in range(g.kv_heads)] for _ in range(g.layers)]
        offset = 0
        for f in fragments:
            delta = offset - f.desc.start
            for layer in range(g.layers):
                for head in range(g.kv_heads):
                    keys[layer][head] += [_rotate(g, vec, delta) for vec in f.desc.keys[layer][head]]
                    values[layer][head] += list(f.desc.values[layer][head])
            offset += f.desc.tokens
        as_tuple = lambda t: tuple(tuple(tuple(head) for head in layer) for layer in t)  # noqa: E731
        return RefFragment(g, FragmentDesc(start=0, keys=as_tuple(keys), values=as_tuple(values)))


def reference_backend() -> ReferenceBackend:
    return ReferenceBackend()
