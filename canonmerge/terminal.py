"""Text on its way to a terminal: control characters shown as escapes, never executed.

Paths come from users and file names and object keys from peers; a name holding ``ESC [ 2 J``,
a carriage return or a bidi override must print as what it is, not act on the terminal.  Lone
surrogates (undecodable bytes in a path, as Python hands them over) print as escapes too,
instead of crashing the write.  Rich markup is a separate matter: print with ``markup=False`` or
``rich.markup.escape``."""

from __future__ import annotations

import unicodedata

_UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control, format, separator or surrogate character escaped."""
    if text.isprintable():  # the common case: nothing to do
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch for ch in text)
