"""The ordering contract (claim C5): the order key and the stable argsort that uses it.

The key of a fragment is ``total_order_bits(m)`` (8 bytes, big-endian) followed by its 32-byte
content id, compared as bytes.  ``total_order_bits`` maps a float64 to an unsigned integer whose
natural order is IEEE-754 totalOrder, so NaN, the infinities and the two zeros all have a place
and no comparison is ever "unordered".  Ties in ``m`` between different fragments are broken by
the id, so the key is a strict total order on distinct fragments."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from spec.ids import CONTENT_ID_BYTES, require_content_id

T = TypeVar("T")
K = TypeVar("K")
W = TypeVar("W")  # a 64-bit word: a Python int, or a bit-vector term in the proofs

_SIGN = 1 << 63
_ALL = (1 << 64) - 1
ORDER_KEY_BYTES = 8 + CONTENT_ID_BYTES


def total_order_bits_of_pattern(bits: int) -> int:
    """IEEE-754 totalOrder rank of the float64 with bit pattern ``bits``, as an unsigned int.

    Negative numbers have every bit flipped (larger magnitude sorts lower); non-negative ones
    get the sign bit set so they sort above all negatives.  The map is a bijection on 64-bit
    patterns, so distinct patterns (−0/+0, NaN payloads) never tie."""
    if not 0 <= bits <= _ALL:
        raise ValueError(f"not a 64-bit pattern: {bits}")
    return total_order_bits_branch_free(bits)


def total_order_bits_branch_free(bits: W) -> W:
    """The rank computed without a branch, so that this very function also runs on 64-bit
    symbolic words (``canonmerge prove`` applies it to a Z3 bit-vector and proves it equal to
    the proofs' encoding for all 2**64 patterns).  No range check: callers validate.

    ``(bits >> 63) & 1`` is the sign bit whether ``>>`` is logical (Python ints) or arithmetic
    (Z3); ``0 - sign`` masked to 64 bits is all ones for negatives, zero otherwise."""
    sign = (bits >> 63) & 1
    flip = ((0 - sign) & _ALL) | _SIGN
    return bits ^ flip


def total_order_bits(x: float) -> int:
    """totalOrder rank of the float64 ``x`` (−NaN < −inf < … < −0 < +0 < … < +inf < +NaN)."""
    (bits,) = struct.unpack("<Q", struct.pack("<d", x))
    return total_order_bits_of_pattern(bits)


def order_key(m: float, content_id: bytes) -> bytes:
    """The full key ``(total_order_bits(m), content_id)`` encoded so that bytes order is key order."""
    return total_order_bits(m).to_bytes(8, "big") + require_content_id(content_id)


def canonical_order(items: Sequence[T], key: Callable[[T], K]) -> list[T]:
    """Stable argsort of ``items`` by ``key``, gathering the original items.

    Gathering by index (rather than returning sorted keys or values) matters: some sorts
    rewrite −0 or NaN bits, and a value-returning sort would lose which item carried them."""
    keys = [key(item) for item in items]
    order = sorted(range(len(items)), key=keys.__getitem__)
    return [items[i] for i in order]


def bag_order(items: Sequence[T]) -> list[T]:
    """BagMerge's order: the arrival order, duplicates kept (the prior-work baseline, C4)."""
    return list(items)
