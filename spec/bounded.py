"""Reading a user's file without trusting it: regular files only, a size bound, strict JSON.

Why each rule: a FIFO or a device given as a file would block the command forever or feed it
without end, so the file is opened without blocking and must be a regular file (checked on the
open descriptor, so nothing can swap it between the check and the read); its size is bounded
before a byte is read; JSON is parsed with bounds on nesting depth and on the length of a number
(Python's own parser raises ``RecursionError`` on deep nesting and is slow on huge integers),
duplicate keys and ``NaN``/``Infinity`` are refused (a document that means two things is refused,
not guessed at).  Every refusal is a ``FormatError`` naming the file and the field.

Stdlib only: every room (proofs, modelcheck, realstate, the command line) reads its files here."""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from spec.errors import FormatError

MAX_JSON_DEPTH = 64  # nesting of arrays and objects (a trace needs 8, a problem file 3)
MAX_NUMBER_CHARS = 64  # characters of one JSON number (2**64 has 20 digits, a float repr 24)
MAX_INPUT_BYTES = 64 << 20  # default bound on a JSON or text file: 64 MiB


def _cause(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


@contextmanager
def open_regular(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, follow_symlinks: bool = True,
                 source: str | None = None) -> Iterator[tuple[IO[bytes], int]]:
    """``(file, size)`` of the regular file at ``path`` of at most ``limit`` bytes, for readers
    that take only part of a file (a header); ``FormatError`` naming the file otherwise."""
    where = source if source is not None else os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise FormatError(where, "file", f"cannot open: {_cause(exc)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError(where, "file type", f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise FormatError(where, "file size", f"{info.st_size} bytes is over the limit of {limit} bytes")
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle, info.st_size


def read_regular(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, follow_symlinks: bool = True,
                 source: str | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them (``FormatError``
    naming the file otherwise: missing, unreadable, special, oversized, grown while read)."""
    where = source if source is not None else os.fspath(path)
    with open_regular(path, limit, follow_symlinks=follow_symlinks, source=where) as (handle, _):
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise FormatError(where, "file", f"cannot read: {_cause(exc)}") from None
    if len(data) > limit:
        raise FormatError(where, "file size", f"grew past the limit of {limit} bytes while it was read")
    return data


def read_text(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, source: str | None = None) -> str:
    """``read_regular`` decoded as UTF-8 (``FormatError`` naming the byte that is not)."""
    where = source if source is not None else os.fspath(path)
    data = read_regular(path, limit, source=where)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(where, "text", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None


def parse_json(text: str | bytes, source: str, field: str = "JSON", *, max_depth: int = MAX_JSON_DEPTH,
               max_number_chars: int = MAX_NUMBER_CHARS) -> Any:
    """One JSON document, strictly: no duplicate keys, no ``NaN``/``Infinity``, numbers of at
    most ``max_number_chars`` characters, nesting at most ``max_depth`` deep."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        table: dict[str, Any] = {}
        for key, value in items:
            if key in table:
                raise FormatError(source, field, f"duplicate JSON key {key[:40]!r}")
            table[key] = value
        return table

    def constant(name: str) -> Any:
        raise FormatError(source, field, f"JSON constant {name} is not allowed")

    def number(kind: type) -> Any:
        def parse(literal: str) -> Any:
            if len(literal) > max_number_chars:
                raise FormatError(source, field, f"a number of {len(literal)} characters is over the limit of "
                                                 f"{max_number_chars}")
            parsed = kind(literal)
            if kind is float and not math.isfinite(parsed):
                raise FormatError(source, field, f"the number {literal[:30]} is out of a float's range")
            return parsed
        return parse

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=number(int),
                           parse_float=number(float))
    except FormatError:
        raise
    except RecursionError:
        raise FormatError(source, field, f"nested more than {max_depth} deep") from None
    except UnicodeDecodeError as exc:
        raise FormatError(source, field, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # JSONDecodeError
        raise FormatError(source, field, f"not valid JSON: {exc}") from None
    _check_depth(value, source, field, max_depth)
    return value


def _check_depth(value: Any, source: str, field: str, max_depth: int) -> None:
    """Iteratively (no recursion to exhaust): no container deeper than ``max_depth``, and no
    string (key or value) holding a lone surrogate, which no terminal or file could print."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_string(node, source, field)
            continue
        if isinstance(node, dict):
            for key in node:
                _check_string(key, source, field)
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            raise FormatError(source, field, f"nested more than {max_depth} deep")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, str)))


def _check_string(text: str, source: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FormatError(source, field, f"a string holds a lone surrogate (U+{ord(text[exc.start]):04X}), "
                                         f"not valid Unicode") from None


def read_json(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, source: str | None = None,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``read_text`` then ``parse_json``: a user's JSON file, bounded every way."""
    where = source if source is not None else os.fspath(path)
    return parse_json(read_text(path, limit, where), where, max_depth=max_depth)


def expect(value: Any, kind: type | tuple[type, ...], source: str, field: str) -> Any:
    """``value`` if it is of JSON type ``kind`` (bool is never an int here), else a
    ``FormatError`` naming the field and what it holds instead."""
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
             bool: "true or false", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not ok:
        want = " or ".join(names.get(k, k.__name__) for k in kinds)
        raise FormatError(source, field, f"want {want}, got {names.get(type(value), type(value).__name__)}")
    return value
