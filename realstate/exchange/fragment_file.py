"""Fragment files (``.cmfrag``): the exchange format between agents, processes and machines.

A fragment file is a safetensors file (docs/FORMAT.md has the layout byte by byte):

- ``__metadata__`` with exactly ``format`` ("canonmerge-fragment"), ``format_version`` ("1" or
  "2"), ``fingerprint`` (the fingerprint's canonical JSON, see ``Fingerprint.canonical_bytes``),
  ``start`` (decimal) and ``content_id`` (64 lowercase hex digits);
- exactly two tensors, ``keys`` and ``values``, each ``[L, H, n, D]`` in the fingerprint's
  storage dtype, little-endian, packed back to back so they cover the data section exactly;
  version 2 adds a third, ``inputs`` ``[n, hidden]`` in the same dtype (the layer-0 inputs a
  composition re-runs), which its content id covers.

Files come from peers that may be buggy or hostile, so loading does not use the safetensors
library (nor pickle, ``torch.load`` or eval): a strict parser checks sizes against ``Limits``
before reading or allocating anything, checks every header field, the tensor layout and the
values, then recomputes the content id and compares it with the declared one (tamper detection).

NaN and ±inf are forbidden by the format: a real model cache never holds them, and a non-finite
key pins the order key to a fixed sentinel that a hostile peer could use to steer the canonical
order.  Writers refuse such fragments too, so every file written here loads again.

Every refusal is a ``FormatError`` naming the file and the field at fault."""

from __future__ import annotations

import math
import os
import re
import stat
import struct
import sys
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import prod
from typing import Any

import torch
from safetensors.torch import save as safetensors_save

from realstate.exchange.finite import require_finite
from realstate.kernel.dtypes import BITS_VIEW, STORAGE_DTYPES
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment
from spec import FormatError, InputError, content_id_hex, parse_content_id_hex
from spec.bounded import parse_json
from spec.output_files import write_output

FORMAT_NAME = "canonmerge-fragment"
FORMAT_VERSION = "1"  # a fragment without inputs; "2" with them
TENSORS_OF_VERSION = {"1": ("keys", "values"), "2": ("keys", "values", "inputs")}
FILE_SUFFIX = ".cmfrag"
TENSOR_NAMES = TENSORS_OF_VERSION["1"]
METADATA_FIELDS = ("format", "format_version", "fingerprint", "start", "content_id")
TENSOR_FIELDS = ("dtype", "shape", "data_offsets")
SAFETENSORS_DTYPE = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}
ITEM_SIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
LENGTH_PREFIX = 8  # u64 little-endian header length
_MAX_START = (1 << 63) - 1  # the content-id header stores start as a signed 64-bit integer
_MAX_DIM = (1 << 32) - 1  # ... and L, H, D as unsigned 32-bit integers
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")
MAX_PEER_TEXT = 256  # characters of a fingerprint's architecture or weights string
_UNSAFE_TEXT = {"Cc": "a control character", "Cf": "a format character", "Cs": "a lone surrogate, not valid Unicode",
                "Zl": "a line separator", "Zp": "a paragraph separator"}


@dataclass(frozen=True)
class Limits:
    """What a loader is willing to read.  Checked before anything is read or allocated."""

    max_bytes: int = 2 << 30  # whole file: 2 GiB
    max_tokens: int = 1 << 17  # tokens n per fragment: 131072
    max_header_bytes: int = 1 << 20  # JSON header: 1 MiB (a real one is a few KiB)
    max_hidden: int = 1 << 16  # a version-2 fragment's input width: 65536 (Qwen3's widest is 5120)

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_tokens", "max_header_bytes", "max_hidden"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(f"Limits.{name} must be a positive integer, got {value!r}")


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class FragmentHeader:
    """What a validated header declares (the data has not been read or checked yet)."""

    fingerprint: Fingerprint
    start: int
    tokens: int
    content_id: bytes
    spans: dict[str, tuple[int, int]]  # tensor name -> (begin, end) within the data section
    header_length: int
    data_length: int
    version: int = 1
    hidden: int | None = None  # version 2: the inputs' width

    @property
    def file_size(self) -> int:
        return LENGTH_PREFIX + self.header_length + self.data_length

    @property
    def shape(self) -> tuple[int, int, int, int]:
        fp = self.fingerprint
        return (fp.layers, fp.kv_heads, self.tokens, fp.head_dim)


# ---------------------------------------------------------------------------------------------
# writing (trusted side: our own fragments, through the safetensors library)


def _metadata(fragment: Fragment) -> dict[str, str]:
    return {
        "format": FORMAT_NAME,
        "format_version": str(fragment.version),
        "fingerprint": fragment.fingerprint.canonical_bytes.decode("ascii"),
        "start": str(fragment.start),
        "content_id": content_id_hex(fragment.content_id),
    }


def fragment_to_bytes(fragment: Fragment) -> bytes:
    """The file bytes of ``fragment``; refuses what the format forbids (non-finite values,
    unprintable fingerprint strings), so that every file written here loads again."""
    source = f"fragment {content_id_hex(fragment.content_id)}"
    check_fingerprint_values(fragment.fingerprint, source)
    tensors = {name: getattr(fragment, name).detach().cpu().contiguous()
               for name in TENSORS_OF_VERSION[str(fragment.version)]}
    for name, tensor in tensors.items():
        require_finite(tensor, source, name)
    return safetensors_save(tensors, metadata=_metadata(fragment))


def save_fragment(fragment: Fragment, path: str | os.PathLike[str]) -> int:
    """Write ``fragment`` to ``path`` atomically, never into a replica store nor over anything
    but a regular file (``spec.output_files.write_output``).  Returns the bytes written."""
    return write_output(path, fragment_to_bytes(fragment), "fragment file")


# ---------------------------------------------------------------------------------------------
# reading (untrusted side: our own parser)


def load_fragment(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS, *,
                  follow_symlinks: bool = True) -> Fragment:
    """Read and fully validate a fragment file (header, layout, values, content id)."""
    source = str(path)
    with _open_regular(path, source, follow_symlinks) as handle:
        header = _read_header(handle, source, limits)
        data = handle.read_exactly(header.data_length, source)
    return _build_fragment(header, data, source)


def read_header(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS, *,
                follow_symlinks: bool = True) -> FragmentHeader:
    """Validate only the header of a fragment file (its data is neither read nor checked)."""
    source = str(path)
    with _open_regular(path, source, follow_symlinks) as handle:
        return _read_header(handle, source, limits)


def header_from_ranges(read_range: Callable[[int, int], bytes], size: int, source: str,
                       limits: Limits = DEFAULT_LIMITS) -> FragmentHeader:
    """Validate only the header of a fragment of ``size`` bytes held elsewhere (an object
    store): ``read_range(offset, length)`` fetches bytes; only the prefix and header are asked
    for, and the header length is checked against the limits before it is fetched."""
    _check_file_size(size, source, limits)
    prefix = read_range(0, min(LENGTH_PREFIX, size)) if size else b""
    header_length = _header_length(prefix, size, source, limits)
    raw = read_range(LENGTH_PREFIX, header_length)
    if len(raw) != header_length:
        raise FormatError(source, "file size", "the object changed while it was read")
    return _parse_header(raw, size - LENGTH_PREFIX - header_length, source, limits)


def fragment_from_bytes(data: bytes | bytearray | memoryview, source: str = "<bytes>",
                        limits: Limits = DEFAULT_LIMITS) -> Fragment:
    """Parse and fully validate fragment file bytes held in memory."""
    view = memoryview(data).cast("B")
    _check_file_size(len(view), source, limits)
    header_length = _header_length(bytes(view[:LENGTH_PREFIX]), len(view), source, limits)
    end = LENGTH_PREFIX + header_length
    header = _parse_header(bytes(view[LENGTH_PREFIX:end]), len(view) - end, source, limits)
    return _build_fragment(header, bytearray(view[end:]), source)  # our own copy


class _RegularFile:
    """An open regular file, checked with fstat (no race between the check and the read)."""

    def __init__(self, fd: int, size: int) -> None:
        self._file = os.fdopen(fd, "rb")
        self.size = size

    def read(self, n: int) -> bytes:
        return self._file.read(n)

    def read_exactly(self, n: int, source: str) -> bytearray:
        """The next ``n`` bytes into a fresh buffer, and proof that nothing follows them."""
        buffer = bytearray(n)
        got = self._file.readinto(buffer) if n else 0
        if got != n or self._file.read(1):
            raise FormatError(source, "file size", "the file changed while it was read")
        return buffer

    def __enter__(self) -> _RegularFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


def _open_regular(path: str | os.PathLike[str], source: str, follow_symlinks: bool) -> _RegularFile:
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        if not follow_symlinks and stat.S_ISLNK(os.lstat(path).st_mode):
            raise FormatError(source, "file type", "is a symbolic link; refused")
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
    except FormatError:
        raise
    except OSError as exc:
        raise FormatError(source, "file", f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise FormatError(source, "file", f"cannot stat: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise FormatError(source, "file type", "is not a regular file")
    return _RegularFile(fd, info.st_size)


def _read_header(handle: _RegularFile, source: str, limits: Limits) -> FragmentHeader:
    _check_file_size(handle.size, source, limits)
    prefix = handle.read(LENGTH_PREFIX)
    header_length = _header_length(prefix, handle.size, source, limits)
    header_bytes = handle.read(header_length)
    if len(header_bytes) != header_length:
        raise FormatError(source, "file size", "the file changed while it was read")
    data_length = handle.size - LENGTH_PREFIX - header_length
    return _parse_header(header_bytes, data_length, source, limits)


def _check_file_size(size: int, source: str, limits: Limits) -> None:
    if size > limits.max_bytes:
        raise FormatError(source, "file size",
                                  f"{size} bytes is over the limit of {limits.max_bytes} bytes")


def _header_length(prefix: bytes, size: int, source: str, limits: Limits) -> int:
    if len(prefix) < LENGTH_PREFIX or size < LENGTH_PREFIX:
        raise FormatError(source, "header_length",
                                  f"the file is {size} bytes, too short for the 8-byte header length")
    (length,) = struct.unpack("<Q", prefix[:LENGTH_PREFIX])
    if length > limits.max_header_bytes:
        raise FormatError(source, "header_length",
                                  f"{length} bytes is over the limit of {limits.max_header_bytes} bytes")
    if length > size - LENGTH_PREFIX:
        raise FormatError(source, "header_length",
                                  f"{length} bytes runs past the end of the {size}-byte file")
    if length < 2:
        raise FormatError(source, "header_length", f"{length} bytes cannot hold a JSON object")
    return length


# ---------------------------------------------------------------------------------------------
# the header


def _strict_json(text: str, source: str, field: str) -> Any:
    """Strict, bounded JSON (``spec.bounded.parse_json``: no duplicate keys, no NaN/Infinity,
    bounded depth and number length), with errors naming ``field``."""
    return parse_json(text, source, field)


def _exact_keys(obj: Any, expected: Iterable[str], source: str, field: str, what: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise FormatError(source, field, f"must be a JSON object, got {type(obj).__name__}")
    want = set(expected)
    missing, extra = sorted(want - set(obj)), sorted(set(obj) - want)
    if missing or extra:
        parts = ([f"missing {what} {missing}"] if missing else []) + ([f"unexpected {what} {extra}"] if extra else [])
        raise FormatError(source, field, "; ".join(parts))
    return obj


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_header(raw: bytes, data_length: int, source: str, limits: Limits) -> FragmentHeader:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(source, "header", f"not valid UTF-8 (byte {exc.start})") from None
    body = text.rstrip(" ")
    if not (body.startswith("{") and body.endswith("}")):
        raise FormatError(source, "header",
                                  "must be one JSON object, padded only with trailing spaces")
    top = _strict_json(body, source, "header")
    if not isinstance(top, dict):
        raise FormatError(source, "header", "must be a JSON object")
    if "__metadata__" not in top:
        raise FormatError(source, "__metadata__", "missing")
    meta = _exact_keys(top["__metadata__"], METADATA_FIELDS, source, "__metadata__", "fields")
    for name in METADATA_FIELDS:
        if not isinstance(meta[name], str):
            raise FormatError(source, name, f"must be a string, got {type(meta[name]).__name__}")
    if meta["format"] != FORMAT_NAME:
        raise FormatError(source, "format", f"{meta['format']!r} is not {FORMAT_NAME!r}")
    names = TENSORS_OF_VERSION.get(meta["format_version"])
    if names is None:
        raise FormatError(source, "format_version", f"{meta['format_version'][:40]!r} is not supported "
                                                    f"(want one of {', '.join(map(repr, TENSORS_OF_VERSION))})")
    tensors = sorted(set(top) - {"__metadata__"})
    if tensors != sorted(names):
        raise FormatError(source, "tensors", f"want exactly {list(names)} in format version "
                                             f"{meta['format_version']}, got {tensors}")
    try:
        content_id = parse_content_id_hex(meta["content_id"])
    except ValueError as exc:
        raise FormatError(source, "content_id", str(exc)) from None
    if _DECIMAL.fullmatch(meta["start"]) is None or int(meta["start"]) > _MAX_START:
        raise FormatError(source, "start", f"{meta['start'][:40]!r} is not a non-negative decimal "
                                                   f"integer below 2**63 (no sign, no leading zeros)")
    start = int(meta["start"])
    fingerprint = _parse_fingerprint(meta["fingerprint"], source)
    shapes: dict[str, tuple[int, ...]] = {name: _tensor_shape(top[name], name, fingerprint, source, limits)
                                          for name in TENSOR_NAMES}
    tokens = shapes["keys"][2]
    hidden = None
    if "inputs" in names:
        shapes["inputs"] = _inputs_shape(top["inputs"], tokens, fingerprint, source, limits)
        hidden = shapes["inputs"][1]
    if shapes["values"] != shapes["keys"]:
        raise FormatError(source, "values.shape",
                                  f"{list(shapes['values'])} differs from keys.shape {list(shapes['keys'])}")
    if start + tokens > fingerprint.max_positions:
        raise FormatError(source, "start", f"positions {start}..{start + tokens - 1} exceed the "
                                                   f"model's maximum of {fingerprint.max_positions}")
    spans = _data_spans(top, shapes, ITEM_SIZE[fingerprint.dtype], data_length, source)
    return FragmentHeader(fingerprint, start, tokens, content_id, spans, len(raw), data_length,
                          int(meta["format_version"]), hidden)


def _parse_fingerprint(text: str, source: str) -> Fingerprint:
    data = _strict_json(text, source, "fingerprint")
    try:
        fingerprint = Fingerprint.from_json(data)
    except (InputError, ValueError, TypeError, OverflowError, struct.error) as exc:
        # struct.error: Fingerprint.from_json lets a 16-character hex field with spaces through
        raise FormatError(source, "fingerprint", str(exc) or type(exc).__name__) from None
    if fingerprint.canonical_bytes.decode("ascii") != text:
        raise FormatError(source, "fingerprint", "not in canonical form (sorted keys, compact "
                                                         "separators, lowercase hex, integer version)")
    check_fingerprint_values(fingerprint, source)
    return fingerprint


def check_fingerprint_values(fingerprint: Fingerprint, source: str) -> None:
    """What the format asks of a fingerprint beyond its own validation (readers and writers)."""
    for name in ("layers", "kv_heads", "head_dim"):
        if getattr(fingerprint, name) > _MAX_DIM:
            raise FormatError(source, "fingerprint", f"{name} {getattr(fingerprint, name)} is over "
                                                             f"{_MAX_DIM}")
    if fingerprint.max_positions > _MAX_START:
        raise FormatError(source, "fingerprint", "max_positions is over 2**63 - 1")
    if not (math.isfinite(fingerprint.rope_theta) and fingerprint.rope_theta > 0):
        raise FormatError(source, "fingerprint", f"rope_theta {fingerprint.rope_theta!r} is not a finite "
                                                         f"positive number")
    for name in ("architecture", "weights"):
        _check_peer_text(getattr(fingerprint, name), source, f"fingerprint.{name}")


def _check_peer_text(value: str, source: str, field: str) -> None:
    """Strings from a peer's file reach terminals, tables and reports: bounded, valid Unicode,
    and free of control, format (e.g. bidi overrides) and line-separator characters."""
    if len(value) > MAX_PEER_TEXT:
        raise FormatError(source, field, f"{len(value)} characters is over the limit of {MAX_PEER_TEXT}")
    for position, ch in enumerate(value):
        category = unicodedata.category(ch)
        if category in _UNSAFE_TEXT:
            raise FormatError(source, field, f"character U+{ord(ch):04X} ({_UNSAFE_TEXT[category]}) at "
                                                     f"position {position} is not allowed")


def _tensor_shape(entry: Any, name: str, fp: Fingerprint, source: str,
                  limits: Limits) -> tuple[int, int, int, int]:
    entry = _exact_keys(entry, TENSOR_FIELDS, source, name, "fields")
    want_dtype = SAFETENSORS_DTYPE[fp.dtype]
    if entry["dtype"] != want_dtype:
        raise FormatError(source, f"{name}.dtype", f"{entry['dtype']!r} but the fingerprint's "
                                                           f"dtype {fp.dtype} is stored as {want_dtype!r}")
    shape = entry["shape"]
    if not isinstance(shape, list) or len(shape) != 4 or not all(_is_int(d) and d >= 0 for d in shape):
        raise FormatError(source, f"{name}.shape",
                                  f"want four non-negative integers [L, H, n, D], got {str(shape)[:80]}")
    layers, heads, tokens, head_dim = shape
    for label, got, want in (("layers L", layers, fp.layers), ("kv heads H", heads, fp.kv_heads),
                             ("head dim D", head_dim, fp.head_dim)):
        if got != want:
            raise FormatError(source, f"{name}.shape",
                                      f"{label} is {got} but the fingerprint says {want}")
    if tokens < 1:
        raise FormatError(source, f"{name}.shape", "a fragment must hold at least one token")
    if tokens > limits.max_tokens:
        raise FormatError(source, f"{name}.shape",
                                  f"{tokens} tokens is over the limit of {limits.max_tokens}")
    return layers, heads, tokens, head_dim


def _inputs_shape(entry: Any, tokens: int, fp: Fingerprint, source: str, limits: Limits) -> tuple[int, int]:
    """A version-2 file's ``inputs``: ``[n, hidden]``, one row per token of the keys, in the
    fingerprint's storage dtype, ``hidden`` within the limits.  The fingerprint holds no hidden
    size (adding one would change every fingerprint digest), so the width is bound by the
    content id, which covers it, and checked against the model where a composition reads it."""
    entry = _exact_keys(entry, TENSOR_FIELDS, source, "inputs", "fields")
    want_dtype = SAFETENSORS_DTYPE[fp.dtype]
    if entry["dtype"] != want_dtype:
        raise FormatError(source, "inputs.dtype", f"{entry['dtype']!r} but the fingerprint's "
                                                  f"dtype {fp.dtype} is stored as {want_dtype!r}")
    shape = entry["shape"]
    if not isinstance(shape, list) or len(shape) != 2 or not all(_is_int(d) and d >= 0 for d in shape):
        raise FormatError(source, "inputs.shape", f"want two non-negative integers [n, hidden], got {str(shape)[:80]}")
    rows, hidden = shape
    if rows != tokens:
        raise FormatError(source, "inputs.shape", f"{rows} rows but the keys hold {tokens} tokens")
    if not 1 <= hidden <= limits.max_hidden:
        raise FormatError(source, "inputs.shape", f"hidden {hidden} is not within 1..{limits.max_hidden}")
    return rows, hidden


def _data_spans(top: dict[str, Any], shapes: dict[str, tuple[int, ...]], item: int, data_length: int,
                source: str) -> dict[str, tuple[int, int]]:
    """Each tensor's offsets: in bounds, sized by its shape, and together tiling the data exactly."""
    spans: dict[str, tuple[int, int]] = {}
    for name in shapes:
        offsets = top[name]["data_offsets"]
        field = f"{name}.data_offsets"
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets):
            raise FormatError(source, field, f"want [begin, end] integers, got {str(offsets)[:80]}")
        begin, end = offsets
        if not 0 <= begin <= end:
            raise FormatError(source, field, f"[{begin}, {end}] is not 0 <= begin <= end")
        if end > data_length:
            raise FormatError(source, field, f"[{begin}, {end}] runs past the data section of "
                                                     f"{data_length} bytes (truncated file?)")
        need = prod(shapes[name]) * item
        if end - begin != need:
            raise FormatError(source, field, f"[{begin}, {end}] spans {end - begin} bytes but "
                                                     f"shape {list(shapes[name])} needs {need}")
        spans[name] = (begin, end)
    position, previous = 0, "the start of the data section"
    for name, (begin, end) in sorted(spans.items(), key=lambda kv: kv[1]):
        field = f"{name}.data_offsets"
        if begin < position:
            raise FormatError(source, field, f"[{begin}, {end}] overlaps {previous}")
        if begin > position:
            raise FormatError(source, field, f"gap of {begin - position} bytes after {previous}")
        position, previous = end, f"{name} [{begin}, {end}]"
    if position != data_length:
        raise FormatError(source, "data", f"{data_length - position} trailing bytes are not "
                                                  f"covered by any tensor")
    return spans


# ---------------------------------------------------------------------------------------------
# the data


def _build_fragment(header: FragmentHeader, buffer: bytearray, source: str) -> Fragment:
    """Tensors are views of ``buffer``, a copy owned by this fragment (never the caller's bytes)."""
    fp = header.fingerprint
    dtype = STORAGE_DTYPES[fp.dtype]
    tensors = {}
    for name in header.spans:
        begin, end = header.spans[name]
        bits = torch.frombuffer(buffer, dtype=BITS_VIEW[dtype], count=(end - begin) // ITEM_SIZE[fp.dtype],
                                offset=begin)
        if sys.byteorder != "little":
            bits = torch.from_numpy(bits.numpy().byteswap())
        shape = header.shape if name != "inputs" else (header.tokens, header.hidden)
        tensors[name] = bits.view(dtype).reshape(shape)
        require_finite(tensors[name], source, name)
    try:
        fragment = Fragment(fp, header.start, tensors["keys"], tensors["values"], tensors.get("inputs"))
    except InputError as exc:  # the header checks above should make this unreachable
        raise FormatError(source, "fragment", str(exc)) from None
    if fragment.content_id != header.content_id:
        raise FormatError(source, "content_id",
                                  f"declared {content_id_hex(header.content_id)} but the content hashes "
                                  f"to {content_id_hex(fragment.content_id)} (corrupt or tampered)")
    return fragment
