"""Comparing a product render with the oracle's: bit equality everywhere.

Every key bit (a rotated NaN included: DESIGN.md fixes it as the storage format's canonical quiet
NaN, so the hardware's or a library's NaN bits are a mismatch), every value bit, the layout, the
shape and the framing of the digest must match exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.formats import storage_format
from oracle.identity import framed_digest
from oracle.render import RenderBytes


@dataclass(frozen=True)
class Mismatch:
    """One difference: ``where`` is (layer, head, token, dim) for tensor elements, else empty."""

    field: str
    where: tuple[int, ...]
    expected: str
    got: str

    def __str__(self) -> str:
        at = f"[{', '.join(map(str, self.where))}]" if self.where else ""
        return f"{self.field}{at}: expected {self.expected}, got {self.got}"


def _element_mismatches(name: str, expected: np.ndarray, got: np.ndarray, hex_digits: int,
                        limit: int) -> list[Mismatch]:
    found = []
    for index in np.argwhere(expected != got)[:limit]:
        where = tuple(int(i) for i in index)
        want, have = int(expected[where]), int(got[where])
        found.append(Mismatch(name, where, f"{want:0{hex_digits}x}", f"{have:0{hex_digits}x}"))
    return found


def compare(got: RenderBytes, expected: RenderBytes, limit: int = 10) -> list[Mismatch]:
    """The first ``limit`` differences between the product's render ``got`` and the oracle's
    ``expected`` (empty: they agree).  ``got.digest`` is also recomputed from ``got``'s own
    bytes, so a framing error shows even where the elements already differ."""
    found: list[Mismatch] = []
    for name in ("fingerprint_digest", "dtype", "shape", "base"):
        want, have = getattr(expected, name), getattr(got, name)
        if want != have:
            found.append(Mismatch(name, (), _show(want), _show(have)))
    if found:
        return found[:limit]
    found += _layout_mismatches(got, expected)
    fmt = storage_format(expected.dtype)
    digits = fmt.width // 4
    want_keys = np.frombuffer(expected.keys, dtype=fmt.bits_dtype).reshape(expected.shape)
    want_values = np.frombuffer(expected.values, dtype=fmt.bits_dtype).reshape(expected.shape)
    if len(got.keys) != len(expected.keys) or len(got.values) != len(expected.values):
        found.append(Mismatch("bytes", (), f"{len(expected.keys)} + {len(expected.values)}",
                              f"{len(got.keys)} + {len(got.values)}"))
        return found[:limit]
    have_keys = np.frombuffer(got.keys, dtype=fmt.bits_dtype).reshape(expected.shape)
    have_values = np.frombuffer(got.values, dtype=fmt.bits_dtype).reshape(expected.shape)
    found += _element_mismatches("keys", want_keys, have_keys, digits, limit)
    found += _element_mismatches("values", want_values, have_values, digits, limit)
    if got.keys == expected.keys and got.values == expected.values and got.digest != expected.digest:
        found.append(Mismatch("digest", (), expected.digest, got.digest))
    own = framed_digest(got.fingerprint_digest, fmt.code, got.shape, got.base, got.keys, got.values).hex()
    if own != got.digest:
        found.append(Mismatch("digest of its own bytes", (), own, got.digest))
    return found[:limit]


def _show(value: object) -> str:
    return value.hex() if isinstance(value, bytes) else str(value)


def _layout_mismatches(got: RenderBytes, expected: RenderBytes) -> list[Mismatch]:
    found = []
    if len(got.layout) != len(expected.layout):
        found.append(Mismatch("layout length", (), str(len(expected.layout)), str(len(got.layout))))
    for i, ((want_id, want_at), (have_id, have_at)) in enumerate(zip(expected.layout, got.layout)):
        if want_id != have_id or want_at != have_at:
            found.append(Mismatch("layout", (i,), f"{want_id.hex()[:16]}@{want_at}", f"{have_id.hex()[:16]}@{have_at}"))
    return found
