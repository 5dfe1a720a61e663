"""The tensors a safetensors checkpoint holds, read from the files' JSON headers alone (no tensor
data is read): name, dtype and shape of each, for a single ``model.safetensors`` or the shards a
``model.safetensors.index.json`` names.

Everything is checked as the safetensors format defines it before it is believed: the header
length against the file (and a 100 MB cap, the format's own), the header as a JSON object of
tensor entries, every dtype from the format's list, every shape a short list of non-negative
integers whose byte size is exactly its data range, and the ranges tiling the data region with
no gap or overlap — so what the model later allocates is bounded by the bytes on disk.  An index
may name only plain file names in the checkpoint directory (no ``/``, no ``..``), and the
tensors each shard holds must be exactly those the index assigns to it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realstate.models.bounded_files import MIB, Source, listed, open_regular, parse_json, read_json_object, shown_name

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
MAX_HEADER = 100_000_000  # bytes of JSON header (the safetensors format's own limit)
MAX_SHARD = 1 << 40  # bytes in one weights file
MAX_INDEX = 64 * MIB
MAX_TENSORS = 1 << 20
MAX_DIMS = 8
MAX_NAME = 1024  # characters in a tensor name
MAX_SHARDS = 10_000
ITEM_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
              "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")  # what a float parameter may be stored as


@dataclass(frozen=True)
class TensorInfo:
    dtype: str  # the safetensors dtype name ("BF16")
    shape: tuple[int, ...]
    file: str  # the weights file holding it


@dataclass(frozen=True)
class WeightFiles:
    files: tuple[str, ...]  # the weights files, in the directory
    index: str | None  # the shard index, when sharded
    tensors: dict[str, TensorInfo]


def read_weight_files(directory: Path, names: list[str], source: Source) -> WeightFiles:
    """The weights of a checkpoint directory whose entries are ``names`` (module doc)."""
    if SINGLE in names and INDEX in names:
        raise source.refuse(f"holds both {SINGLE} and {INDEX}: two weight layouts, keep one")
    if SINGLE in names:
        return WeightFiles((SINGLE,), None, read_header(directory / SINGLE, source))
    if INDEX not in names:
        raise source.refuse(f"has no {SINGLE} and no {INDEX} (only safetensors weights are loaded)")
    assigned = _weight_map(directory / INDEX, set(names), source)
    tensors: dict[str, TensorInfo] = {}
    for shard in sorted(set(assigned.values())):
        held = read_header(directory / shard, source)
        strays = sorted(name for name in held if assigned.get(name) != shard)
        if strays:
            raise source.refuse(f"{shard} holds {listed(strays)}, which {INDEX} does not assign to it")
        tensors.update(held)
    absent = sorted(name for name in assigned if name not in tensors)
    if absent:
        raise source.refuse(f"{INDEX} assigns {listed(absent)} to shards that do not hold them")
    return WeightFiles(tuple(sorted(set(assigned.values()))), INDEX, tensors)


def _weight_map(path: Path, present: set[str], source: Source) -> dict[str, str]:
    index = read_json_object(path, MAX_INDEX, source)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise source.refuse(f"{INDEX}: weight_map is not a non-empty object")
    if len(weight_map) > MAX_TENSORS:
        raise source.refuse(f"{INDEX}: weight_map names {len(weight_map)} tensors, more than {MAX_TENSORS}")
    shards = set()
    for tensor, shard in weight_map.items():
        if not isinstance(shard, str) or not _plain_file_name(shard) or not shard.endswith(".safetensors"):
            raise source.refuse(f"{INDEX}: weight_map puts {shown_name(tensor)} in {shard!r}, which is not a "
                                ".safetensors file name in the checkpoint directory")
        if shard not in present:
            raise source.refuse(f"{INDEX}: weight_map names the shard {shard!r}, which is missing")
        shards.add(shard)
    if len(shards) > MAX_SHARDS:
        raise source.refuse(f"{INDEX}: names {len(shards)} shards, more than {MAX_SHARDS}")
    return weight_map


def _plain_file_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0") and name.isprintable()


def read_header(path: Path, source: Source) -> dict[str, TensorInfo]:
    """Name -> TensorInfo of one safetensors file, from its header alone."""
    with open_regular(path, MAX_SHARD, source) as (handle, size):
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise source.refuse(f"{path.name}: {size} bytes, too short for a safetensors header")
        length = int.from_bytes(prefix, "little")
        if length > MAX_HEADER or length > size - 8:
            raise source.refuse(f"{path.name}: the header claims {length} bytes; the file has {size - 8} after the "
                                f"length and a header may have at most {MAX_HEADER}")
        text = handle.read(length)
    header = parse_json(text, f"{path.name}: the header", source)
    if not isinstance(header, dict):
        raise source.refuse(f"{path.name}: the header is not a JSON object")
    return _tensors(header, path.name, size - 8 - length, source)


def _tensors(header: dict[str, Any], file: str, data_bytes: int, source: Source) -> dict[str, TensorInfo]:
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise source.refuse(f"{file}: __metadata__ is not an object of strings")
    if len(header) > MAX_TENSORS:
        raise source.refuse(f"{file}: {len(header)} tensors, more than {MAX_TENSORS}")
    tensors, ranges = {}, []
    for name, entry in header.items():
        where = f"{file}: tensor {shown_name(name[:MAX_NAME])}"
        if len(name) > MAX_NAME:
            raise source.refuse(f"{where}...: the name is longer than {MAX_NAME} characters")
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise source.refuse(f"{where}: not an entry of dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in ITEM_BYTES:
            raise source.refuse(f"{where}: dtype {dtype!r} is not a safetensors dtype this reader knows")
        if (not isinstance(shape, list) or len(shape) > MAX_DIMS
                or not all(type(d) is int and 0 <= d < 1 << 40 for d in shape)):
            raise source.refuse(f"{where}: shape {shape!r} is not a list of at most {MAX_DIMS} sizes")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= data_bytes):
            raise source.refuse(f"{where}: data_offsets {offsets!r} are not a range within the {data_bytes} "
                                "data bytes")
        if math.prod(shape) * ITEM_BYTES[dtype] != offsets[1] - offsets[0]:
            raise source.refuse(f"{where}: shape {shape} of {dtype} needs {math.prod(shape) * ITEM_BYTES[dtype]} "
                                f"bytes, its data range has {offsets[1] - offsets[0]}")
        tensors[name] = TensorInfo(dtype, tuple(shape), file)
        ranges.append((offsets[0], offsets[1], name))
    end = 0
    for begin, stop, name in sorted(ranges):
        if begin != end:
            raise source.refuse(f"{file}: the data of tensor {shown_name(name)} starts at byte {begin}, not at "
                                f"{end} where the previous one ends (a gap or an overlap)")
        end = stop
    if end != data_bytes:
        raise source.refuse(f"{file}: the tensors cover {end} of the {data_bytes} data bytes")
    return tensors

