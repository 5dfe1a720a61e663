"""The link between the checker and the independent byte oracle (``oracle/``).

The checker's fragments are plain data (bit patterns), so the oracle's input is built from the
same descriptions the backend built its fragments from — never from the backend's objects.  The
only thing taken from the backend is the 32-byte fingerprint digest its content ids frame (an
opaque input of the definition, like the bytes themselves).  The rendered bytes come from the
backend's own render; the comparison is ``oracle.compare`` (bit equality, a rotated NaN key
included: the canonical quiet NaN)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import oracle
from modelcheck.backend import DTYPE_BITS, Backend, FragmentDesc, Geometry


def supports_oracle(backend: Backend) -> bool:
    return all(hasattr(backend, name) for name in ("fingerprint_digest", "render_bytes", "bag_bytes"))


def _flat_bytes(t: Sequence[Any], width: int) -> bytes:
    flat = [x for layer in t for head in layer for vec in head for x in vec]
    return struct.pack(f"<{len(flat)}{'H' if width == 16 else 'I'}", *flat)


@lru_cache(maxsize=1024)
def fragment_data(geometry: Geometry, desc: FragmentDesc, fingerprint_digest: bytes) -> oracle.FragmentData:
    """The oracle's input for one description, kept per process: the oracle computes a fragment's
    m once per ``FragmentData`` (milliseconds, in plain integers), and every shard of a universe
    hands it the same descriptions.  Only the oracle's own inputs are kept, never a render."""
    width = DTYPE_BITS[geometry.dtype]
    return oracle.FragmentData(fingerprint_digest, geometry.dtype, geometry.layers, geometry.kv_heads,
                               desc.tokens, geometry.head_dim, desc.start, _flat_bytes(desc.keys, width),
                               _flat_bytes(desc.values, width))


def oracle_render(backend: Backend, geometry: Geometry, descs: Sequence[FragmentDesc], mode: str,
                  base: int) -> oracle.RenderBytes:
    """What the definition renders these fragments to: the set by key (canonical) or the list in
    order, duplicates kept (bag)."""
    digest = backend.fingerprint_digest(geometry)  # type: ignore[attr-defined]
    data = [fragment_data(geometry, d, digest) for d in descs]
    render = oracle.canonical_render if mode == "canonical" else oracle.bag_render
    return render(data, geometry.inv_freq, base)


def mismatches(backend: Backend, state_or_fragments: Any, mode: str, base: int,
               expected: oracle.RenderBytes) -> list[oracle.Mismatch]:
    """The backend's render (canonical of a state, or BagMerge of a list) against ``expected``."""
    if mode == "canonical":
        got = backend.render_bytes(state_or_fragments, base)  # type: ignore[attr-defined]
    else:
        got = backend.bag_bytes(list(state_or_fragments), base)  # type: ignore[attr-defined]
    return oracle.compare(got, expected, limit=3)


def mismatch_text(backend: Backend, geometry: Geometry, descs: Sequence[FragmentDesc], state: Any,
                  fragments: Sequence[Any], mode: str, base: int) -> str:
    """For program replay: "" when the backend's render agrees with the oracle, else the first
    difference.  ``descs`` are the descriptions of ``fragments`` (the set, or the bag's list)."""
    if not supports_oracle(backend):
        raise ValueError(f"backend {backend.name!r} cannot be compared with the byte oracle")
    expected = oracle_render(backend, geometry, descs, mode, base)
    found = mismatches(backend, state if mode == "canonical" else fragments, mode, base, expected)
    return str(found[0]) if found else ""
