"""What a GGUF file holds, read from its header without loading it: the architecture, the model
name, the sizes its metadata states, and every tensor's name, shape and storage type (e.g. 210
Q4_1, 1 Q8_0, 61 F32).

The weights label of a fingerprint says what the weights are; transformers dequantizes GGUF
tensors on load and keeps no record of their original types, so they are read here.  The reader
runs before transformers or gguf parse the file, and is strict, so that their parsers only ever
see a file it accepted: a regular file (a FIFO is refused, never read), at most ``MAX_FILE``
bytes; every count bounded (``MAX_TENSORS``, ``MAX_ENTRIES``) and checked against the bytes left
before anything is allocated for it; arrays nested at most ``MAX_DEPTH`` deep (never a
recursion without a bound); every tensor at most 4-dimensional, of a known storage type, its
data inside the file.  It is fast: the tokenizer's arrays of tens of thousands of strings are
skipped, not decoded.  A malformed file is a refusal naming the file and the byte offset, never
a traceback."""

from __future__ import annotations

import math
import mmap
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from realstate.models.bounded_files import Source, open_regular, printable
from realstate.models.config_check import size_problem

MAGIC = b"GGUF"
MAX_FILE = 1 << 41  # bytes
MAX_TENSORS = 1 << 20
MAX_ENTRIES = 1 << 16  # metadata key/value pairs
MAX_DEPTH = 3  # an array of arrays of arrays, at most
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
MAX_NAME = 1024  # bytes of a tensor name
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_INTEGER_KINDS = (0, 1, 2, 3, 4, 5, 10, 11)
_KIND_NAMES = {6: "float32", 7: "bool", 8: "string", 9: "array", 12: "float64"}
_STRING, _ARRAY = 8, 9
_KEPT = ("general.architecture", "general.name", "general.file_type", "general.alignment")
# "<architecture>.<suffix>" metadata -> the config size it becomes (realstate.models.config_check)
SIZE_KEYS = {"block_count": "num_hidden_layers", "embedding_length": "hidden_size",
             "feed_forward_length": "intermediate_size", "attention.head_count": "num_attention_heads",
             "attention.head_count_kv": "num_key_value_heads", "context_length": "max_position_embeddings",
             "vocab_size": "vocab_size", "attention.key_length": "head_dim", "attention.value_length": "head_dim",
             "rope.dimension_count": "head_dim"}
INTEGER_TYPES = {24: "I8", 25: "I16", 26: "I32", 27: "I64"}  # storage types that are not floats
# storage type codes (ggml's GGMLQuantizationType) -> names; gguf's enum names the rest
_TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
               11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 28: "F64", 30: "BF16", **INTEGER_TYPES}


@dataclass(frozen=True)
class GgufTensor:
    name: str
    shape: tuple[int, ...]  # as torch sees it (GGUF lists dimensions innermost first)
    type_name: str

    @property
    def floating(self) -> bool:
        return self.type_name not in INTEGER_TYPES.values()


@dataclass(frozen=True)
class GgufSummary:
    version: int
    architecture: str
    name: str | None
    file_type: int | None  # general.file_type: the dominant quantization, as llama.cpp numbers it
    tensor_types: dict[str, int]  # storage type name -> tensor count, most common first
    keys: tuple[str, ...]  # every metadata key, in file order
    tensors: tuple[GgufTensor, ...] = ()
    sizes: tuple[tuple[str, int, object], ...] = ()  # (key, value type, value) of every SIZE_KEYS entry

    def quantization(self) -> str:
        """``"Q4_1 x210, Q8_0 x1, F32 x61"``."""
        return ", ".join(f"{name} x{count}" for name, count in self.tensor_types.items())

    def size_problems(self) -> list[str]:
        """Why the sizes the metadata states for its architecture are not valid config sizes."""
        problems = []
        for key, kind, value in self.sizes:
            prefix, _, suffix = key.partition(".")
            if prefix != self.architecture:
                continue
            if kind not in _INTEGER_KINDS:
                problems.append(f"{printable(key)} is a GGUF {_KIND_NAMES.get(kind, kind)}, not an integer")
            elif problem := size_problem(printable(key), SIZE_KEYS[suffix], value):
                problems.append(problem)
        return problems

    def layers(self) -> int | None:
        value = next((v for k, _, v in self.sizes if k == f"{self.architecture}.block_count"), None)
        return value if type(value) is int else None


class _Cursor:
    def __init__(self, data: memoryview | mmap.mmap, source: Source, file: str) -> None:
        self.data, self.pos, self.source, self.file = data, 0, source, file

    def fail(self, problem: str) -> Exception:
        return self.source.refuse(f"{self.file}: not a readable GGUF file: {problem} (at byte {self.pos})")

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, count: int) -> bytes:
        if count < 0 or count > self.left():
            raise self.fail(f"needs {count} more bytes, the file has {self.left()}")
        chunk = bytes(self.data[self.pos:self.pos + count])
        self.pos += count
        return chunk

    def skip(self, count: int) -> None:
        if count < 0 or count > self.left():
            raise self.fail(f"a field of {count} bytes runs past the end of the file")
        self.pos += count

    def scalar(self, fmt: str) -> int | float | bool:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        return int(self.scalar("<I"))

    def u64(self) -> int:
        return int(self.scalar("<Q"))

    def string(self, most: int | None = None) -> str:
        length = self.u64()
        if most is not None and length > most:
            raise self.fail(f"a name of {length} bytes (at most {most})")
        raw = self.take(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string is not UTF-8") from None

    def count(self, least_bytes_each: int) -> int:
        """An element count, refused when its elements cannot fit in the bytes left."""
        count = self.u64()
        if count * least_bytes_each > self.left():
            raise self.fail(f"{count} elements of at least {least_bytes_each} bytes cannot fit in the "
                            f"{self.left()} bytes left")
        return count

    def value(self, kind: int, keep: bool, depth: int = 0) -> object:
        if kind in _SCALAR:
            return self.scalar(_SCALAR[kind])
        if kind == _STRING:
            if keep:
                return self.string()
            self.skip(self.u64())
            return None
        if kind != _ARRAY:
            raise self.fail(f"unknown value type {kind}")
        if depth >= MAX_DEPTH:
            raise self.fail(f"arrays nested more than {MAX_DEPTH} deep")
        element = self.u32()
        if element in _SCALAR:
            self.skip(self.count(struct.calcsize(_SCALAR[element])) * struct.calcsize(_SCALAR[element]))
        elif element == _STRING:
            for _ in range(self.count(8)):
                self.skip(self.u64())
        elif element == _ARRAY:
            for _ in range(self.count(12)):
                self.value(_ARRAY, False, depth + 1)
        else:
            raise self.fail(f"unknown array element type {element}")
        return None


def read_gguf_summary(path: str | Path, source: Source | None = None) -> GgufSummary:
    """The header of the GGUF file at ``path`` (versions 2 and 3, little-endian)."""
    file = Path(path)
    source = source or Source("checkpoint", str(path))
    with open_regular(file, MAX_FILE, source) as (handle, size):
        if size < 24:
            raise source.refuse(f"{file.name}: not a GGUF file ({size} bytes)")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(_Cursor(data, source, file.name))


def _parse(cur: _Cursor) -> GgufSummary:
    if cur.take(4) != MAGIC:
        raise cur.source.refuse(f"{cur.file}: not a GGUF file (no 'GGUF' magic)")
    version = cur.u32()
    if version not in (2, 3):
        raise cur.fail(f"GGUF version {version} (want 2 or 3, little-endian)")
    tensors, kv_count = cur.u64(), cur.u64()
    if tensors > MAX_TENSORS or kv_count > MAX_ENTRIES:
        raise cur.fail(f"{tensors} tensors / {kv_count} metadata entries claimed; at most {MAX_TENSORS} / "
                       f"{MAX_ENTRIES} are read")
    keys, kept, sizes = [], {}, []
    for _ in range(kv_count):
        key = cur.string(1 << 16)
        kind = cur.u32()
        sized = key.partition(".")[2] in SIZE_KEYS
        value = cur.value(kind, key in _KEPT or sized)
        keys.append(key)
        if key in _KEPT:
            kept[key] = value
        if sized:
            sizes.append((key, kind, value))
    infos = [_tensor_info(cur) for _ in range(tensors)]
    architecture = kept.get("general.architecture")
    if not isinstance(architecture, str):
        raise cur.fail("no general.architecture string")
    _check_data(cur, infos, kept.get("general.alignment", 32))
    name = kept.get("general.name")
    file_type = kept.get("general.file_type")
    types = Counter(t.type_name for t, _ in infos)
    return GgufSummary(version, architecture, name if isinstance(name, str) else None,
                       int(file_type) if type(file_type) is int else None,
                       dict(types.most_common()), tuple(keys), tuple(t for t, _ in infos), tuple(sizes))


def _tensor_info(cur: _Cursor) -> tuple[GgufTensor, int]:
    name = cur.string(MAX_NAME)
    dims = cur.u32()
    if not 1 <= dims <= MAX_DIMS:
        raise cur.fail(f"tensor {name!r} has {dims} dimensions (1..{MAX_DIMS})")
    shape = tuple(cur.u64() for _ in range(dims))
    if any(d < 1 or d > 1 << 40 for d in shape):
        raise cur.fail(f"tensor {name!r} has the dimensions {list(shape)}")
    tensor = GgufTensor(name, tuple(reversed(shape)), _type_name(cur, cur.u32(), name))
    return tensor, cur.u64()


def _check_data(cur: _Cursor, infos: list[tuple[GgufTensor, int]], alignment: object) -> None:
    """Every tensor's data lies, aligned, inside the data section (module doc)."""
    if type(alignment) is not int or not 1 <= alignment <= 1 << 20 or alignment & (alignment - 1):
        raise cur.fail(f"general.alignment={alignment!r} is not a power of two up to 2^20")
    start = -(-cur.pos // alignment) * alignment
    room = len(cur.data) - start
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    for tensor, offset in infos:
        sizes = GGML_QUANT_SIZES.get(GGMLQuantizationType[tensor.type_name])
        if sizes is None:
            raise cur.fail(f"tensor {tensor.name!r} has the storage type {tensor.type_name}, of no known size")
        block, block_bytes = sizes
        elements = math.prod(tensor.shape)
        if tensor.shape[-1] % block:
            raise cur.fail(f"tensor {tensor.name!r} has rows of {tensor.shape[-1]}, not a multiple of "
                           f"{tensor.type_name}'s block of {block}")
        end = offset + elements // block * block_bytes
        if offset % alignment or end > room:
            raise cur.fail(f"tensor {tensor.name!r}'s data (bytes {offset}..{end} of the data section) is not aligned "
                           f"to {alignment} or runs past the {room} bytes the file has there")


def _type_name(cur: _Cursor, code: int, tensor: str) -> str:
    if code in _TYPE_NAMES:
        return _TYPE_NAMES[code]
    try:
        from gguf import GGMLQuantizationType

        return GGMLQuantizationType(code).name
    except (ImportError, ValueError):
        raise cur.fail(f"tensor {tensor!r} has the unknown storage type {code}") from None
