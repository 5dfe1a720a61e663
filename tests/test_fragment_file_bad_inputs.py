"""Malformed fragment files and store entries: each is refused with a ``FormatError``
naming the field, through the CLI with exit 2 and no traceback, and the store is left unchanged.

Every case changes one thing of an otherwise valid file (keeping the declared content id right
where the case is not about it), so each case exercises the one check it names."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from canonmerge.cli import main
from realstate.exchange.fragment_file import (
    FormatError,
    Limits,
    fragment_from_bytes,
    fragment_to_bytes,
    load_fragment,
)
from realstate.exchange.stores import MARKER_NAME, DirectoryStore
from realstate.exchange.stores.anti_entropy import merge_stores
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, content_id_of, tensor_bytes
from tests.realstate_helpers import bits, random_fragment, tiny_fingerprint

FP = tiny_fingerprint()  # bfloat16, L=2, H=2, D=4
GOOD = random_fragment(FP, 3, seed=11, start=5)
OTHER = random_fragment(FP, 2, seed=12, start=0)
SPAN = 2 * 2 * 3 * 4 * 2  # bytes per tensor of GOOD


def meta_of(fragment: Fragment, **changes: str) -> dict[str, str]:
    meta = {"format": "canonmerge-fragment", "format_version": "1",
            "fingerprint": fragment.fingerprint.canonical_bytes.decode(), "start": str(fragment.start),
            "content_id": fragment.content_id.hex()}
    meta.update(changes)
    return meta


def entry(dtype: str = "BF16", shape: list | None = None, offsets: list | None = None) -> dict:
    return {"dtype": dtype, "shape": shape if shape is not None else [2, 2, 3, 4],
            "data_offsets": offsets if offsets is not None else [0, SPAN]}


def header_of(meta: dict, keys: dict | None = None, values: dict | None = None, **extra: dict) -> dict:
    return {"__metadata__": meta, "keys": keys or entry(), "values": values or entry(offsets=[SPAN, 2 * SPAN]),
            **extra}


def data_of(keys: torch.Tensor, values: torch.Tensor) -> bytes:
    return bytes(tensor_bytes(keys)) + bytes(tensor_bytes(values))


def assemble(header: dict | str | bytes, data: bytes, length: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else (
        header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


GOOD_DATA = data_of(GOOD.keys, GOOD.values)


def good_file(**meta_changes: str) -> bytes:
    return assemble(header_of(meta_of(GOOD, **meta_changes)), GOOD_DATA)


def with_value(tensor: torch.Tensor, index: tuple[int, ...], pattern: int) -> torch.Tensor:
    out = tensor.clone()
    bits(out)[index] = pattern - (1 << 16) if pattern >= 1 << 15 else pattern
    return out


def consistent(fp: Fingerprint, start: int, keys: torch.Tensor, values: torch.Tensor) -> bytes:
    """A file whose declared id matches its (possibly forbidden) content: only the check under
    test can refuse it."""
    meta = {"format": "canonmerge-fragment", "format_version": "1",
            "fingerprint": fp.canonical_bytes.decode(), "start": str(start),
            "content_id": content_id_of(fp, start, keys, values).hex()}
    return assemble(header_of(meta), data_of(keys, values))


def refingerprinted(**changes) -> Fingerprint:
    values = {name: getattr(FP, name) for name in Fingerprint.__dataclass_fields__}
    values.update(changes)
    return Fingerprint(**values)


# version 2: GOOD with its inputs, [3 tokens, hidden 5]
HIDDEN = 5
INPUTS = torch.randn(3, HIDDEN, generator=torch.Generator().manual_seed(13)).to(torch.bfloat16)
GOOD2 = Fragment(FP, GOOD.start, GOOD.keys, GOOD.values, INPUTS)
INPUTS_SPAN = 3 * HIDDEN * 2


def inputs_entry(dtype: str = "BF16", shape: list | None = None, offsets: list | None = None) -> dict:
    return {"dtype": dtype, "shape": shape if shape is not None else [3, HIDDEN],
            "data_offsets": offsets if offsets is not None else [2 * SPAN, 2 * SPAN + INPUTS_SPAN]}


def v2_file(inputs: dict | None = None, data: bytes | None = None, content_id: bytes | None = None,
            tensor: torch.Tensor = INPUTS, **meta_changes: str) -> bytes:
    """A version-2 file; ``tensor`` other inputs with their own (consistent) id unless given one."""
    cid = content_id if content_id is not None else content_id_of(FP, GOOD.start, GOOD.keys, GOOD.values, tensor)
    meta = meta_of(GOOD, format_version="2", content_id=cid.hex(), **meta_changes)
    return assemble(header_of(meta, inputs=inputs or inputs_entry()),
                    GOOD_DATA + bytes(tensor_bytes(tensor)) if data is None else data)


def altered_byte() -> bytes:
    data = bytearray(GOOD_DATA)
    data[6] ^= 0x01  # the low mantissa byte of a bfloat16: stays finite
    return assemble(header_of(meta_of(GOOD)), bytes(data))


def swapped_halves() -> bytes:
    return assemble(header_of(meta_of(GOOD)), GOOD_DATA[SPAN:] + GOOD_DATA[:SPAN])


def duplicate_key_header() -> bytes:
    text = json.dumps(header_of(meta_of(GOOD)), separators=(",", ":"))
    keys_json = json.dumps(entry(), separators=(",", ":"))
    return assemble(text[:-1] + ',"keys":' + keys_json + "}", GOOD_DATA)


def fingerprint_with_spaced_hex() -> bytes:
    data = FP.to_json()
    data["rope_theta_f64"] = "40c3 88 00 00 00"  # 16 characters, 6 bytes
    return good_file(fingerprint=json.dumps(data, sort_keys=True, separators=(",", ":")))


def fingerprint_field(**changes) -> bytes:
    data = FP.to_json()
    data.update(changes)
    return good_file(fingerprint=json.dumps(data, sort_keys=True, separators=(",", ":")))


def overlapping() -> bytes:
    return assemble(header_of(meta_of(GOOD), values=entry(offsets=[SPAN - 2, 2 * SPAN - 2])), GOOD_DATA)


def gap() -> bytes:
    return assemble(header_of(meta_of(GOOD), values=entry(offsets=[SPAN + 2, 2 * SPAN + 2])),
                    GOOD_DATA[:SPAN] + b"\0\0" + GOOD_DATA[SPAN:])


def huge_tokens() -> bytes:
    shape = [2, 2, 10**12, 4]  # the offsets still span the 3 tokens really present
    meta = meta_of(GOOD, fingerprint=refingerprinted(max_positions=1 << 50).canonical_bytes.decode())
    return assemble(header_of(meta, keys=entry(shape=shape),
                              values=entry(shape=shape, offsets=[SPAN, 2 * SPAN])), GOOD_DATA)


def huge_fingerprint_layers() -> bytes:
    shape = [1 << 31, 2, 3, 4]
    meta = meta_of(GOOD, fingerprint=refingerprinted(layers=1 << 31).canonical_bytes.decode())
    return assemble(header_of(meta, keys=entry(shape=shape), values=entry(shape=shape, offsets=[SPAN, 2 * SPAN])),
                    GOOD_DATA)


def beyond_max_positions() -> bytes:
    return consistent(refingerprinted(max_positions=7), 5, GOOD.keys, GOOD.values)


def deep_nesting() -> bytes:
    depth = 200_000
    return assemble('{"__metadata__":' + "[" * depth + "]" * depth + "}", GOOD_DATA)


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], bytes]
    field: str  # the FormatError.field
    says: str  # a phrase the message must contain
    limits: Limits | None = None


NAN, POS_INF, NEG_INF = 0x7FC0, 0x7F80, 0xFF80  # bfloat16 bit patterns

CASES = [
    Case("empty file", lambda: b"", "header_length", "too short"),
    Case("truncated in the length prefix", lambda: good_file()[:5], "header_length", "too short"),
    Case("truncated in the header", lambda: good_file()[:40], "header_length", "past the end"),
    Case("truncated in the data", lambda: good_file()[:-10], "values.data_offsets", "truncated"),
    Case("header length beyond the file", lambda: assemble(header_of(meta_of(GOOD)), GOOD_DATA, 10_000),
         "header_length", "past the end"),
    Case("header length over the limit", lambda: struct.pack("<Q", 1 << 62) + b"{}", "header_length",
         "over the limit"),
    Case("header length too small for JSON", lambda: struct.pack("<Q", 1) + b"{", "header_length",
         "cannot hold"),
    Case("file over the size limit", good_file, "file size", "over the limit", Limits(max_bytes=100)),
    Case("bad header JSON", lambda: assemble('{"__metadata__": {"format": }', GOOD_DATA), "header",
         "not valid JSON"),
    Case("non-UTF-8 header", lambda: assemble(b'{"\xff\xfe": 1}', GOOD_DATA), "header", "UTF-8"),
    Case("header is a JSON list", lambda: assemble("[1, 2]", GOOD_DATA), "header", "one JSON object"),
    Case("header padded with NUL bytes", lambda: assemble(json.dumps(header_of(meta_of(GOOD))) + "\0\0",
                                                            GOOD_DATA), "header", "trailing spaces"),
    Case("NaN constant in the header", lambda: assemble('{"__metadata__": NaN}', GOOD_DATA), "header", "NaN"),
    Case("JSON nested absurdly deep", deep_nesting, "header", "nested more than 64 deep"),
    Case("integer with 5000 digits", lambda: assemble('{"x": ' + "9" * 5000 + "}", GOOD_DATA), "header",
         "over the limit of 64"),
    Case("duplicate JSON keys", duplicate_key_header, "header", "duplicate JSON key 'keys'"),
    Case("duplicate key in the fingerprint", lambda: good_file(
        fingerprint=FP.canonical_bytes.decode()[:-1] + ',"layers":2}'), "fingerprint", "duplicate JSON key"),
    Case("no metadata", lambda: assemble({"keys": entry(), "values": entry(offsets=[SPAN, 2 * SPAN])},
                                         GOOD_DATA), "__metadata__", "missing"),
    Case("metadata field missing", lambda: assemble(header_of(
        {k: v for k, v in meta_of(GOOD).items() if k != "start"}), GOOD_DATA), "__metadata__", "missing"),
    Case("metadata field extra", lambda: good_file(comment="hi"), "__metadata__", "unexpected"),
    Case("metadata value not a string", lambda: assemble(header_of({**meta_of(GOOD), "start": 5}), GOOD_DATA),
         "start", "must be a string"),
    Case("unknown format", lambda: good_file(format="pickle"), "format", "is not"),
    Case("unknown version", lambda: good_file(format_version="3"), "format_version", "not supported"),
    Case("content id not hex", lambda: good_file(content_id="z" * 64), "content_id", "not a content id"),
    Case("content id upper-case", lambda: good_file(content_id=GOOD.content_id.hex().upper()), "content_id",
         "not a content id"),
    Case("path traversal in the content id", lambda: good_file(content_id="../" * 21 + "a"), "content_id",
         "not a content id"),
    Case("negative start", lambda: good_file(start="-1"), "start", "non-negative"),
    Case("start with a plus sign", lambda: good_file(start="+5"), "start", "non-negative"),
    Case("start with leading zeros", lambda: good_file(start="05"), "start", "leading zeros"),
    Case("start beyond 2**63", lambda: good_file(start=str(1 << 64)), "start", "2**63"),
    Case("start+n beyond max positions", beyond_max_positions, "start", "maximum of 7"),
    Case("fingerprint not JSON", lambda: good_file(fingerprint="{layers"), "fingerprint", "not valid JSON"),
    Case("fingerprint not canonical", lambda: good_file(fingerprint=json.dumps(FP.to_json(), indent=1)),
         "fingerprint", "canonical"),
    Case("fingerprint version true", lambda: fingerprint_field(version=True), "fingerprint", "version"),
    Case("fingerprint with zero layers", lambda: fingerprint_field(layers=0), "fingerprint", "layers"),
    Case("fingerprint with an unknown field", lambda: fingerprint_field(extra=1), "fingerprint", "unexpected"),
    Case("fingerprint with unknown dtype", lambda: fingerprint_field(dtype="int8"), "fingerprint", "dtype"),
    Case("fingerprint float with spaces", fingerprint_with_spaced_hex, "fingerprint", "fingerprint"),
    Case("extra tensor", lambda: assemble(header_of(meta_of(GOOD), bias=entry(offsets=[0, 0])), GOOD_DATA),
         "tensors", "bias"),
    Case("missing tensor", lambda: assemble({"__metadata__": meta_of(GOOD), "keys": entry()}, GOOD_DATA[:SPAN]),
         "tensors", "want exactly"),
    Case("tensor entry with an extra field", lambda: assemble(header_of(
        meta_of(GOOD), keys={**entry(), "offset": 0}), GOOD_DATA), "keys", "unexpected"),
    Case("wrong dtype", lambda: assemble(header_of(meta_of(GOOD), values=entry(
        "F16", offsets=[SPAN, 2 * SPAN])), GOOD_DATA), "values.dtype", "'F16'"),
    Case("unknown dtype", lambda: assemble(header_of(meta_of(GOOD), keys=entry("I64")), GOOD_DATA),
         "keys.dtype", "'I64'"),
    Case("fingerprint dtype differs from the tensors'", lambda: consistent(
        refingerprinted(dtype="float16"), 5, GOOD.keys.view(torch.float16), GOOD.values.view(torch.float16)),
         "keys.dtype", "float16"),
    Case("wrong shape (3 dims)", lambda: assemble(header_of(meta_of(GOOD), keys=entry(shape=[2, 6, 4])),
                                                  GOOD_DATA), "keys.shape", "four"),
    Case("wrong shape (negative dim)", lambda: assemble(header_of(meta_of(GOOD), keys=entry(
        shape=[2, 2, -3, 4])), GOOD_DATA), "keys.shape", "non-negative"),
    Case("shape layers differ from the fingerprint", lambda: assemble(header_of(meta_of(GOOD), keys=entry(
        shape=[3, 2, 2, 4])), GOOD_DATA), "keys.shape", "layers L is 3 but the fingerprint says 2"),
    Case("fingerprint kv heads differ from the tensors", lambda: consistent(
        refingerprinted(kv_heads=4), 5, GOOD.keys, GOOD.values), "keys.shape", "kv heads H is 2"),
    Case("values token count differs from keys", lambda: assemble(header_of(meta_of(GOOD), values=entry(
        shape=[2, 2, 2, 4], offsets=[SPAN, 2 * SPAN])), GOOD_DATA), "values.shape", "differs"),
    Case("zero tokens", lambda: assemble(header_of(meta_of(GOOD), keys=entry(shape=[2, 2, 0, 4], offsets=[0, 0]),
                                                   values=entry(shape=[2, 2, 0, 4], offsets=[0, 0])), b""),
         "keys.shape", "at least one token"),
    Case("header claims 10**12 tokens", huge_tokens, "keys.shape", "over the limit"),
    Case("header claims 10**12 tokens, tokens limit raised", huge_tokens, "keys.data_offsets",
         "needs", Limits(max_tokens=10**15)),
    Case("fingerprint claims 2**31 layers", huge_fingerprint_layers, "keys.data_offsets", "needs"),
    Case("offsets not integers", lambda: assemble(header_of(meta_of(GOOD), keys=entry(offsets=[0.0, SPAN])),
                                                  GOOD_DATA), "keys.data_offsets", "integers"),
    Case("offsets reversed", lambda: assemble(header_of(meta_of(GOOD), keys=entry(offsets=[SPAN, 0])),
                                              GOOD_DATA), "keys.data_offsets", "begin <= end"),
    Case("span does not match the shape", lambda: assemble(header_of(meta_of(GOOD), keys=entry(
        offsets=[0, SPAN - 2])), GOOD_DATA), "keys.data_offsets", "needs"),
    Case("overlapping offsets", overlapping, "values.data_offsets", "overlaps"),
    Case("gap between tensors", gap, "values.data_offsets", "gap"),
    Case("trailing bytes after the tensors", lambda: assemble(header_of(meta_of(GOOD)), GOOD_DATA + b"\0" * 8),
         "data", "trailing"),
    Case("keys and values swapped", swapped_halves, "content_id", "corrupt or tampered"),
    Case("one altered data byte", altered_byte, "content_id", "corrupt or tampered"),
    Case("other fragment's id declared", lambda: good_file(content_id=OTHER.content_id.hex()), "content_id",
         "corrupt or tampered"),
    Case("start changed (id covers it)", lambda: good_file(start="6"), "content_id", "corrupt or tampered"),
    Case("fingerprint weights changed (id covers it)", lambda: good_file(
        fingerprint=refingerprinted(weights="synthetic:evil").canonical_bytes.decode()), "content_id",
         "corrupt or tampered"),
    Case("NaN in keys", lambda: consistent(FP, 5, with_value(GOOD.keys, (1, 0, 2, 3), NAN), GOOD.values),
         "keys", "NaN at [layer, head, token, dim] = [1, 0, 2, 3]"),
    Case("+inf in values", lambda: consistent(FP, 5, GOOD.keys, with_value(GOOD.values, (0, 1, 0, 0), POS_INF)),
         "values", "+inf"),
    Case("-inf in keys", lambda: consistent(FP, 5, with_value(GOOD.keys, (0, 0, 0, 1), NEG_INF), GOOD.values),
         "keys", "-inf"),
    # version 2: the inputs tensor, validated as strictly as keys and values, and covered by the id
    Case("version 1 with an inputs tensor", lambda: assemble(header_of(meta_of(GOOD), inputs=inputs_entry()),
                                                             GOOD_DATA + bytes(tensor_bytes(INPUTS))),
         "tensors", "format version 1"),
    Case("version 2 without inputs", lambda: good_file(format_version="2"), "tensors", "format version 2"),
    Case("inputs of another dtype", lambda: v2_file(inputs=inputs_entry("F16")), "inputs.dtype", "'F16'"),
    Case("inputs with three dims", lambda: v2_file(inputs=inputs_entry(shape=[3, 1, HIDDEN])), "inputs.shape",
         "two non-negative"),
    Case("inputs with a row per token missing", lambda: v2_file(inputs=inputs_entry(shape=[2, HIDDEN])),
         "inputs.shape", "2 rows but the keys hold 3 tokens"),
    Case("inputs zero wide", lambda: v2_file(inputs=inputs_entry(shape=[3, 0], offsets=[2 * SPAN, 2 * SPAN]),
                                             data=GOOD_DATA), "inputs.shape", "hidden 0"),
    Case("inputs wider than the limit", v2_file, "inputs.shape", "not within 1..4", Limits(max_hidden=4)),
    Case("inputs span does not match their shape", lambda: v2_file(inputs=inputs_entry(
        offsets=[2 * SPAN, 2 * SPAN + INPUTS_SPAN - 2])), "inputs.data_offsets", "needs"),
    Case("NaN in inputs", lambda: v2_file(tensor=with_value(INPUTS, (2, 4), NAN)), "inputs",
         "NaN at [token, dim] = [2, 4]"),
    Case("one altered inputs byte", lambda: v2_file(content_id=GOOD2.content_id, tensor=with_value(
        INPUTS, (0, 0), 0x3F80)), "content_id", "corrupt or tampered"),
    Case("inputs left out of the declared id", lambda: v2_file(content_id=GOOD.content_id), "content_id",
         "corrupt or tampered"),
]


def test_cases_are_distinct_and_the_base_file_is_valid():
    assert len({c.name for c in CASES}) == len(CASES) >= 20
    assert len({(c.make(), c.limits) for c in CASES}) == len(CASES)  # every case is a different input
    assert fragment_from_bytes(good_file()).content_id == GOOD.content_id
    assert fragment_from_bytes(fragment_to_bytes(GOOD)).content_id == GOOD.content_id
    assert fragment_from_bytes(v2_file()).content_id == GOOD2.content_id != GOOD.content_id
    again = fragment_from_bytes(fragment_to_bytes(GOOD2))
    assert again.version == 2 and torch.equal(again.inputs, INPUTS) and again.content_id == GOOD2.content_id


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry of a directory: bytes of files, targets of symlinks, a tag for directories."""
    out: dict[str, bytes | str] = {}
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.is_symlink():
            out[entry.name] = "symlink -> " + os.readlink(entry.path)
        elif entry.is_dir():
            out[entry.name] = "dir"
        else:
            out[entry.name] = Path(entry.path).read_bytes()
    return out


@pytest.fixture
def store(tmp_path: Path) -> DirectoryStore:
    s = DirectoryStore(tmp_path / "store", create=True)
    s.put(OTHER)
    return s


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_file_is_refused_everywhere(case: Case, tmp_path: Path, store: DirectoryStore,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    data = case.make()
    path = tmp_path / "bad.cmfrag"
    path.write_bytes(data)
    limits = case.limits or Limits()
    for load in (lambda: fragment_from_bytes(data, "bad.cmfrag", limits), lambda: load_fragment(path, limits)):
        with pytest.raises(FormatError) as caught:
            load()
        assert caught.value.field == case.field, str(caught.value)
        assert case.says in str(caught.value)
        assert str(caught.value).startswith(f"bad.cmfrag: {case.field}: ") or str(caught.value).startswith(
            f"{path}: {case.field}: ")
    if case.limits is not None:
        return  # the CLI uses the default limits; see test_absurd_sizes_are_refused_before_allocation
    before = snapshot(store.path)
    with pytest.raises(FormatError):
        store.put_file(path)
    assert snapshot(store.path) == before
    for argv in (("fragment", "inspect", str(path)), ("store", "put", str(store.path), str(path))):
        code, out, err = cli(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert f"{case.field}: " in err and str(path) in err and "Traceback" not in err + out
    assert snapshot(store.path) == before


def test_store_put_of_a_good_and_a_bad_file_writes_nothing(tmp_path: Path, store: DirectoryStore,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.cmfrag", tmp_path / "bad.cmfrag"
    good.write_bytes(good_file())
    bad.write_bytes(altered_byte())
    before = snapshot(store.path)
    code, _, err = cli(capsys, "store", "put", str(store.path), str(good), str(bad))
    assert code == 2 and "content_id" in err
    assert snapshot(store.path) == before
    fresh = tmp_path / "fresh"
    code, _, _ = cli(capsys, "store", "put", str(fresh), str(good), str(bad))
    assert code == 2 and not fresh.exists()  # a failing put does not even create the store


def test_a_fresh_interpreter_reports_bad_files_without_a_traceback(tmp_path: Path) -> None:
    paths = []
    for i, case in enumerate(c for c in CASES if c.limits is None):
        paths.append(tmp_path / f"bad{i}.cmfrag")
        paths[-1].write_bytes(case.make())
    out = subprocess.run([sys.executable, "-m", "canonmerge", "fragment", "inspect", *map(str, paths)],
                         capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stderr.count("canonmerge fragment inspect: error: ") == len(paths)


def test_absurd_sizes_are_refused_before_anything_is_allocated(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import tracemalloc

    big = tmp_path / "big.cmfrag"
    with open(big, "wb") as handle:  # a sparse 3 GiB file: over the default 2 GiB limit
        handle.write(good_file())
        handle.truncate(3 << 30)
    tracemalloc.start()
    try:
        for load in (lambda: load_fragment(big), lambda: fragment_from_bytes(huge_tokens(), "x", Limits(
                max_tokens=10**15))):
            with pytest.raises(FormatError):
                load()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    code, _, err = cli(capsys, "fragment", "inspect", str(big))
    assert code == 2 and "file size: 3221225472 bytes is over the limit" in err


# ------------------------------------------------------------------------------------------------
# store entries and ids from untrusted input

def make_symlink(store: DirectoryStore, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.cmfrag"
    target.write_bytes(fragment_to_bytes(GOOD))
    os.symlink(target, store.path_of(GOOD.content_id))


def make_foreign_file(store: DirectoryStore, tmp_path: Path) -> None:
    (store.path / "notes.txt").write_text("hello")


def make_upper_case_name(store: DirectoryStore, tmp_path: Path) -> None:
    (store.path / (GOOD.content_id.hex().upper() + ".cmfrag")).write_bytes(fragment_to_bytes(GOOD))


def make_misnamed(store: DirectoryStore, tmp_path: Path) -> None:
    store.path_of(GOOD.content_id).write_bytes(fragment_to_bytes(OTHER))


def make_corrupt(store: DirectoryStore, tmp_path: Path) -> None:
    store.path_of(GOOD.content_id).write_bytes(altered_byte())


def make_directory(store: DirectoryStore, tmp_path: Path) -> None:
    store.path_of(GOOD.content_id).mkdir()


def make_temp_symlink(store: DirectoryStore, tmp_path: Path) -> None:
    os.symlink("/etc/passwd", store.path / ".tmp-1-0123456789abcdef")


def make_bad_marker(store: DirectoryStore, tmp_path: Path) -> None:
    (store.path / MARKER_NAME).write_text("something else\n")


STORE_CASES = [
    ("content id differs from the file name", make_misnamed, "file name", "hashes to"),
    ("corrupt file in the store", make_corrupt, "content_id", "corrupt or tampered"),
    ("store marker of another layout", make_bad_marker, "store marker", "unknown store layout"),
]
# what another writer may put into a store: not part of the state, skipped and named, never fatal
FOREIGN_CASES = [
    ("symlink in the store", make_symlink, "a symbolic link"),
    ("file whose name is not an id", make_foreign_file, "notes.txt"),
    ("upper-case id as a file name", make_upper_case_name, "lowercase hex"),
    ("directory named like a fragment", make_directory, "a directory"),
    ("symlink named like a temporary", make_temp_symlink, "a symbolic link"),
]


@pytest.mark.parametrize("name,make,field,says", STORE_CASES, ids=[c[0] for c in STORE_CASES])
def test_bad_store_entry_is_refused_not_skipped(name: str, make, field: str, says: str, tmp_path: Path,
                                                store: DirectoryStore, capsys: pytest.CaptureFixture[str]) -> None:
    make(store, tmp_path)
    before = snapshot(store.path)
    with pytest.raises(FormatError) as caught:
        DirectoryStore(store.path).fragments()
    assert caught.value.field == field and says in str(caught.value), str(caught.value)
    assert str(store.path) in str(caught.value)  # names the file (or the store) at fault
    dst = DirectoryStore(tmp_path / "dst", create=True)
    dst_before = snapshot(dst.path)
    with pytest.raises(FormatError):
        merge_stores(dst, DirectoryStore(store.path))
    assert snapshot(dst.path) == dst_before
    for argv in (("store", "list", str(store.path)), ("store", "merge", str(dst.path), str(store.path)),
                 ("store", "merge", str(tmp_path / "new"), str(store.path)),
                 ("store", "render", str(store.path), "--geometry", "qwen3-tiny")):
        code, out, err = cli(capsys, *argv)
        assert code == 2 and f"{field}: " in err and "Traceback" not in out + err, (argv, err)
    assert snapshot(store.path) == before and snapshot(dst.path) == dst_before
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("name,make,says", FOREIGN_CASES, ids=[c[0] for c in FOREIGN_CASES])
def test_a_foreign_store_entry_is_named_and_skipped(name: str, make, says: str, tmp_path: Path,
                                                    store: DirectoryStore, capsys: pytest.CaptureFixture[str]) -> None:
    held = DirectoryStore(store.path).fragments()
    make(store, tmp_path)
    before = snapshot(store.path)
    assert DirectoryStore(store.path).fragments() == held
    (where, what), = DirectoryStore(store.path).foreign()
    assert where.startswith(str(store.path)) and says in where + " " + what
    dst = tmp_path / "dst"
    for argv in (("store", "list", str(store.path)), ("store", "merge", str(dst), str(store.path)),
                 ("store", "verify", str(store.path))):
        code, out, err = cli(capsys, *argv)
        assert code == 0 and "foreign entry" in err and where in err, (argv, err)
    assert DirectoryStore(dst).fragments() == held and DirectoryStore(dst).foreign() == []
    assert snapshot(store.path) == before


@pytest.mark.parametrize("text", ["z" * 64, "../" + "a" * 61, "../../etc/passwd", "A" * 64, "a" * 63, "",
                                  "a" * 64 + "/", "a" * 64 + ".cmfrag"])
def test_ids_from_untrusted_input_are_parsed_strictly(text: str, store: DirectoryStore) -> None:
    before = snapshot(store.path)
    for use in (store.get, store.path_of):
        with pytest.raises(FormatError) as caught:
            use(text)
        assert caught.value.field == "content id" and "not a content id" in str(caught.value)
    assert text not in store
    assert snapshot(store.path) == before


def test_fragments_of_another_model_are_refused_by_put_and_merge(tmp_path: Path, store: DirectoryStore,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    alien = random_fragment(tiny_fingerprint(weights="synthetic:another-model"), 2, seed=3)
    path = tmp_path / "alien.cmfrag"
    path.write_bytes(fragment_to_bytes(alien))
    before = snapshot(store.path)
    with pytest.raises(FormatError, match="weights"):
        store.put_file(path)
    code, _, err = cli(capsys, "store", "put", str(store.path), str(path))
    assert code == 2 and "fingerprint: differs from the store's fingerprint in weights" in err
    other = DirectoryStore(tmp_path / "other", create=True)
    other.put(alien)
    code, _, err = cli(capsys, "store", "merge", str(store.path), str(other.path))
    assert code == 2 and "weights" in err
    assert snapshot(store.path) == before


def test_render_refuses_fragments_of_another_model_naming_the_fields(store: DirectoryStore,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store.path)
    code, _, err = cli(capsys, "store", "render", str(store.path), "--geometry", "qwen3-tiny")
    assert code == 2 and "fingerprint: differs from the model's" in err
    for field in ("architecture", "layers", "head_dim", "inv_freq_f64", "weights"):
        assert field in err
    assert snapshot(store.path) == before


def test_writers_refuse_fragments_the_format_forbids(tmp_path: Path, store: DirectoryStore) -> None:
    nan = Fragment(FP, 0, with_value(GOOD.keys, (0, 0, 0, 0), NAN), GOOD.values)
    before = snapshot(store.path)
    with pytest.raises(FormatError, match="NaN"):
        fragment_to_bytes(nan)
    with pytest.raises(FormatError, match="NaN"):
        store.put(nan)
    assert snapshot(store.path) == before


def test_non_regular_and_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(FormatError, match="file type: is not a regular file"):
        load_fragment(tmp_path)
    with pytest.raises(FormatError, match="file: cannot open"):
        load_fragment(tmp_path / "missing.cmfrag")
    link = tmp_path / "link.cmfrag"
    (tmp_path / "real.cmfrag").write_bytes(fragment_to_bytes(GOOD))
    os.symlink(tmp_path / "real.cmfrag", link)
    assert load_fragment(link).content_id == GOOD.content_id  # a user's own symlink is followed
    with pytest.raises(FormatError, match="symbolic link"):
        load_fragment(link, follow_symlinks=False)  # but never inside a store
    fifo = tmp_path / "fifo.cmfrag"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="not a regular file"):
        load_fragment(fifo)  # does not block waiting for a writer
    code, _, err = cli(capsys, "store", "list", str(tmp_path / "nowhere"))
    assert code == 2 and "no such store directory" in err
    code, _, err = cli(capsys, "store", "put", str(tmp_path), str(tmp_path / "real.cmfrag"))
    assert code == 2 and "not a canonmerge store" in err
