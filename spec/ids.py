"""Content ids: 32 raw bytes (SHA-256 of a fragment's canonical encoding, see DESIGN.md).

Ids travel as hex in file names and reports, so parsing is strict: exactly 64 lowercase hex
digits.  A looser parser would let ``../`` or upper-case aliases name the same fragment twice."""

from __future__ import annotations

import re

CONTENT_ID_BYTES = 32
_HEX_ID = re.compile(r"[0-9a-f]{64}")


def require_content_id(value: object) -> bytes:
    """Return ``value`` if it is a well-formed content id, else raise ``ValueError``."""
    if not isinstance(value, bytes) or len(value) != CONTENT_ID_BYTES:
        raise ValueError(
            f"a content id is {CONTENT_ID_BYTES} raw bytes, got {type(value).__name__}"
            + (f" of length {len(value)}" if isinstance(value, (bytes, bytearray)) else "")
        )
    return value


def content_id_hex(cid: bytes) -> str:
    return require_content_id(cid).hex()


def parse_content_id_hex(text: str) -> bytes:
    """Parse a 64-digit lowercase hex id; anything else is an error naming the offending text."""
    if not isinstance(text, str) or _HEX_ID.fullmatch(text) is None:
        shown = text if isinstance(text, str) and len(text) <= 80 else f"{str(text)[:77]}..."
        raise ValueError(f"not a content id (want 64 lowercase hex digits): {shown!r}")
    return bytes.fromhex(text)
