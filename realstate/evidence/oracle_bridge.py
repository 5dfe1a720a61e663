"""The thin adapter between the product and the independent oracle (``oracle/``).

It turns a ``Fragment`` into the oracle's plain input by reading the tensors' raw bytes (its own
little-endian view, not ``realstate.kernel.fragment.tensor_bytes``, so a serialisation bug in the product
is not copied into the reference's input) and a ``Rendered`` into the oracle's ``RenderBytes``.
Nothing here computes a render, a key or an id: that is the point of the comparison."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import torch

import oracle
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import Rendered, bag_render, canonical_render, naive_render

MODES = ("canonical", "bag", "naive")


def raw_bytes(t: torch.Tensor) -> bytes:
    """The tensor's elements as little-endian bytes, in C order."""
    width = t.element_size()
    ints = t.detach().to("cpu").contiguous().view({2: torch.int16, 4: torch.int32}[width]).numpy()
    return ints.astype(np.dtype(f"<i{width}"), copy=False).tobytes()


def fragment_data(fragment: Fragment) -> oracle.FragmentData:
    fp = fragment.fingerprint
    layers, heads, tokens, head_dim = fragment.keys.shape
    inputs = fragment.inputs
    return oracle.FragmentData(fp.digest, fp.dtype, layers, heads, tokens, head_dim, fragment.start,
                               raw_bytes(fragment.keys), raw_bytes(fragment.values),
                               None if inputs is None else raw_bytes(inputs),
                               0 if inputs is None else inputs.shape[1])


def render_bytes(rendered: Rendered) -> oracle.RenderBytes:
    layout = tuple((p.fragment.content_id, p.offset) for p in rendered.layout)
    return oracle.RenderBytes(rendered.fingerprint.digest, rendered.fingerprint.dtype,
                              tuple(rendered.keys.shape), rendered.base, raw_bytes(rendered.keys),
                              raw_bytes(rendered.values), layout, rendered.digest())


def oracle_render(mode: str, fragments: Sequence[Fragment], base: int = 0) -> oracle.RenderBytes:
    """What the definition says ``mode`` renders ``fragments`` to (from their bytes alone)."""
    data = [fragment_data(f) for f in fragments]
    inv_freq = fragments[0].fingerprint.inv_freq
    return {"canonical": oracle.canonical_render, "bag": oracle.bag_render,
            "naive": oracle.naive_render}[mode](data, inv_freq, base)


def product_render(mode: str, fragments: Sequence[Fragment], base: int = 0, engine: Engine = CANONICAL) -> Rendered:
    if mode == "canonical":
        return canonical_render(fragments, base, engine)
    if mode == "bag":
        return bag_render(fragments, base, engine)
    if mode == "naive":
        return naive_render(fragments, base, engine)
    raise ValueError(f"unknown render mode {mode!r}; known: {', '.join(MODES)}")


def compare_render(mode: str, fragments: Sequence[Fragment], base: int = 0, engine: Engine = CANONICAL,
                   limit: int = 10) -> list[oracle.Mismatch]:
    """Render with the product and with the oracle; the differences (bit for bit: oracle.compare)."""
    return oracle.compare(render_bytes(product_render(mode, fragments, base, engine)),
                          oracle_render(mode, fragments, base), limit)


def fragment_mismatches(fragment: Fragment) -> list[str]:
    """The fragment's content id, order value bits and order key against the oracle's."""
    data = fragment_data(fragment)
    (m_bits,) = struct.unpack("<Q", struct.pack("<d", fragment.order_value))
    found = []
    for name, want, got in (("content id", data.content_id.hex(), fragment.content_id.hex()),
                            ("m bits", f"{data.order_value_bits:016x}", f"{m_bits:016x}"),
                            ("order key", data.order_key.hex(), fragment.order_key.hex())):
        if want != got:
            found.append(f"{name}: expected {want}, got {got}")
    return found
