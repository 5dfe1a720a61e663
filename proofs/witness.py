"""Readable counterexamples: model values turned into the words a user checks them in.

Floats are shown as their bit pattern in hex and their value (NaN with sign and payload),
content ids in hex, fragments as f0, f1, ... (Z3's ``Frag!val!k``), sequences as ``<f0, f1>``."""

from __future__ import annotations

import struct

import z3

_FRAG_PREFIX = "Frag!val!"


def float64_text(bits: int) -> str:
    """``0x8000000000000000 (-0.0)``, ``0x7ff8000000000001 (+nan, payload 0x8000000000001)``."""
    if (bits >> 52) & 0x7FF == 0x7FF and bits & ((1 << 52) - 1):
        sign = "-" if bits >> 63 else "+"
        return f"0x{bits:016x} ({sign}nan, payload 0x{bits & ((1 << 52) - 1):x})"
    (value,) = struct.unpack("<d", bits.to_bytes(8, "little"))
    return f"0x{bits:016x} ({value!r})"


def id_text(value: int) -> str:
    """A content id as hex without leading zeros (ids in models are usually tiny numbers)."""
    return f"id 0x{value:x}"


def frag_text(value: z3.ExprRef) -> str:
    text = str(value)
    return "f" + text[len(_FRAG_PREFIX):] if text.startswith(_FRAG_PREFIX) else text


def as_int(model: z3.ModelRef, term: z3.ExprRef) -> int:
    value = model.eval(term, model_completion=True)
    if not z3.is_bv_value(value):
        raise ValueError(f"not a bit-vector value: {value}")
    return value.as_long()


def as_bool(model: z3.ModelRef, term: z3.ExprRef) -> bool:
    return z3.is_true(model.eval(term, model_completion=True))


def seq_items(value: z3.ExprRef) -> list[str]:
    """Elements of a concrete sequence value (``Concat`` of ``Unit``s, or ``Empty``)."""
    if z3.is_app_of(value, z3.Z3_OP_SEQ_CONCAT):
        return [item for child in value.children() for item in seq_items(child)]
    if z3.is_app_of(value, z3.Z3_OP_SEQ_UNIT):
        return [frag_text(value.arg(0))]
    if z3.is_app_of(value, z3.Z3_OP_SEQ_EMPTY):
        return []
    return [str(value)]


def list_text(items: list[str]) -> str:
    """A sequence as ``<f0, f1>`` (angle brackets: square ones read as markup in rich tables)."""
    return "<" + ", ".join(items) + ">"
