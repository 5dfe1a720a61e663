"""What a GGUF file holds, read from its header without loading it: the architecture, the model
name, and how many tensors of each storage type (e.g. 210 Q4_1, 1 Q8_0, 61 F32).

The weights label of a fingerprint says what the weights are; transformers dequantizes GGUF
tensors on load and keeps no record of their original types, so they are read here.  The reader
is strict (every length is checked against the file size before it is used) and fast: it skips
the tokenizer's arrays of tens of thousands of strings instead of decoding them.  A malformed
file is an ``InputError`` naming the file and the byte offset, never a traceback."""

from __future__ import annotations

import mmap
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from spec import InputError

MAGIC = b"GGUF"
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_KEPT = ("general.architecture", "general.name", "general.file_type")
# storage type codes (ggml's GGMLQuantizationType) -> names; gguf's enum names the rest
_TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
               11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 28: "F64", 30: "BF16"}


@dataclass(frozen=True)
class GgufSummary:
    version: int
    architecture: str
    name: str | None
    file_type: int | None  # general.file_type: the dominant quantization, as llama.cpp numbers it
    tensor_types: dict[str, int]  # storage type name -> tensor count, most common first
    keys: tuple[str, ...]  # every metadata key, in file order

    def quantization(self) -> str:
        """``"Q4_1 x210, Q8_0 x1, F32 x61"``."""
        return ", ".join(f"{name} x{count}" for name, count in self.tensor_types.items())


class _Cursor:
    def __init__(self, data: memoryview | mmap.mmap, source: Path) -> None:
        self.data, self.pos, self.source = data, 0, source

    def fail(self, problem: str) -> InputError:
        return InputError(f"{self.source}: not a readable GGUF file: {problem} (at byte {self.pos})")

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise self.fail(f"needs {count} more bytes, the file has {len(self.data) - self.pos}")
        chunk = bytes(self.data[self.pos:self.pos + count])
        self.pos += count
        return chunk

    def skip(self, count: int) -> None:
        if count < 0 or self.pos + count > len(self.data):
            raise self.fail(f"a field of {count} bytes runs past the end of the file")
        self.pos += count

    def scalar(self, fmt: str) -> int | float | bool:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        return int(self.scalar("<I"))

    def u64(self) -> int:
        return int(self.scalar("<Q"))

    def string(self) -> str:
        raw = self.take(self.u64())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string is not UTF-8") from None

    def skip_string(self) -> None:
        self.skip(self.u64())

    def value(self, kind: int, keep: bool) -> object:
        if kind in _SCALAR:
            return self.scalar(_SCALAR[kind])
        if kind == _STRING:
            if keep:
                return self.string()
            self.skip_string()
            return None
        if kind == _ARRAY:
            element, count = self.u32(), self.u64()
            if element in _SCALAR:
                self.skip(count * struct.calcsize(_SCALAR[element]))
            elif element == _STRING:
                for _ in range(count):
                    self.skip_string()
            elif element == _ARRAY:
                for _ in range(count):
                    self.value(_ARRAY, False)
            else:
                raise self.fail(f"unknown array element type {element}")
            return None
        raise self.fail(f"unknown value type {kind}")


def read_gguf_summary(path: str | Path) -> GgufSummary:
    """The header of the GGUF file at ``path`` (versions 2 and 3, little-endian)."""
    source = Path(path)
    try:
        with source.open("rb") as handle:
            size = source.stat().st_size
            if size < 24:
                raise InputError(f"{source}: not a GGUF file ({size} bytes)")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _parse(_Cursor(data, source))
    except OSError as exc:
        raise InputError(f"{source}: cannot read ({exc.strerror or exc})") from None


def _parse(cur: _Cursor) -> GgufSummary:
    if cur.take(4) != MAGIC:
        raise InputError(f"{cur.source}: not a GGUF file (no 'GGUF' magic)")
    version = cur.u32()
    if version not in (2, 3):
        raise cur.fail(f"GGUF version {version} (want 2 or 3, little-endian)")
    tensors, kv_count = cur.u64(), cur.u64()
    if tensors > len(cur.data) or kv_count > len(cur.data):
        raise cur.fail(f"{tensors} tensors / {kv_count} metadata entries cannot fit in the file")
    keys, kept = [], {}
    for _ in range(kv_count):
        key = cur.string()
        value = cur.value(cur.u32(), key in _KEPT)
        keys.append(key)
        if key in _KEPT:
            kept[key] = value
    types: Counter[str] = Counter()
    for _ in range(tensors):
        cur.skip_string()
        dims = cur.u32()
        if dims > 8:
            raise cur.fail(f"a tensor with {dims} dimensions")
        cur.skip(8 * dims)
        code = cur.u32()
        cur.skip(8)  # data offset
        types[_type_name(code)] += 1
    architecture = kept.get("general.architecture")
    if not isinstance(architecture, str):
        raise cur.fail("no general.architecture string")
    name = kept.get("general.name")
    file_type = kept.get("general.file_type")
    return GgufSummary(version, architecture, name if isinstance(name, str) else None,
                       int(file_type) if isinstance(file_type, int) else None,
                       dict(types.most_common()), tuple(keys))


def _type_name(code: int) -> str:
    if code in _TYPE_NAMES:
        return _TYPE_NAMES[code]
    try:
        from gguf import GGMLQuantizationType

        return GGMLQuantizationType(code).name
    except (ImportError, ValueError):
        return f"type{code}"
