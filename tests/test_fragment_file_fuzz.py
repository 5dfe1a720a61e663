"""Fuzzing the fragment loader: mutated, truncated and spliced valid files either load as one of
the original fragments (same id, same bits) or raise ``FormatError`` — nothing else.

Byte-level mutations test robustness; header-aware ones (rewrite a number or a string of the JSON
header and fix the length prefix) reach the deeper layout checks.  Budget: 200 examples,
derandomized under the CI profile (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import struct
import tempfile

import torch
from hypothesis import event, given, settings
from hypothesis import strategies as st

from realstate.exchange.fragment_file import Limits, fragment_from_bytes, fragment_to_bytes, load_fragment
from realstate.kernel.fragment import content_id_of
from spec import FormatError
from tests.realstate_helpers import bits, random_fragment, tiny_fingerprint

BASES = [
    random_fragment(tiny_fingerprint("bfloat16"), 3, seed=1, start=4),
    random_fragment(tiny_fingerprint("float16", layers=3), 2, seed=2),
    random_fragment(tiny_fingerprint("float32", heads=1, head_dim=2), 4, seed=3, start=100),
]
FILES = [fragment_to_bytes(f) for f in BASES]
BY_ID = {f.content_id: f for f in BASES}
LIMITS = Limits(max_bytes=1 << 16, max_tokens=1 << 10)  # small limits: the fuzzer can reach them
INTERESTING = [0, 1, 2, 3, 4, 7, 8, 16, 24, 48, 255, 65536, 1 << 31, 1 << 32, 1 << 63, 10**30, -1]
NUMBER = re.compile(rb"-?\d+")
STRING = re.compile(rb'"[^"\\]*"')
# weighted: header-aware rewrites and data-byte flips reach the deep checks; the rest, robustness
KINDS = ["flip", "set", "truncate", "insert", "delete", "splice", "prefix"] + ["number"] * 4 + \
    ["string"] * 2 + ["data_byte"] * 2


def header_region(data: bytes) -> tuple[int, int]:
    if len(data) < 8:
        return 0, 0
    length = struct.unpack("<Q", data[:8])[0]
    return 8, min(len(data), 8 + length)


def with_header(data: bytes, header: bytes) -> bytes:
    begin, end = header_region(data)
    return struct.pack("<Q", len(header)) + header + data[end:]


@st.composite
def mutation(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(KINDS))
    size = len(data)
    if kind in ("flip", "set", "data_byte") and size:
        end = header_region(data)[1]
        i = draw(st.integers(end, size - 1) if kind == "data_byte" and end < size else st.integers(0, size - 1))
        value = data[i] ^ (1 << draw(st.integers(0, 7))) if kind == "flip" else draw(st.integers(0, 255))
        return data[:i] + bytes([value]) + data[i + 1:]
    if kind == "truncate":
        return data[:draw(st.integers(0, size))]
    if kind == "insert":
        i = draw(st.integers(0, size))
        return data[:i] + draw(st.binary(min_size=1, max_size=16)) + data[i:]
    if kind == "delete" and size:
        i = draw(st.integers(0, size - 1))
        return data[:i] + data[i + draw(st.integers(1, 16)):]
    if kind == "splice":
        other = draw(st.sampled_from(FILES))
        return data[:draw(st.integers(0, size))] + other[draw(st.integers(0, len(other))):]
    if kind == "prefix":
        return struct.pack("<Q", draw(st.sampled_from([n for n in INTERESTING if 0 <= n < 1 << 64]))) + data[8:]
    begin, end = header_region(data)
    header = data[begin:end]
    pattern = NUMBER if kind == "number" else STRING
    matches = list(pattern.finditer(header))
    if not matches:
        return data
    m = draw(st.sampled_from(matches))
    if kind == "number":
        new = str(draw(st.sampled_from(INTERESTING) | st.integers(-5, 5000))).encode()
    else:
        new = draw(st.sampled_from([b'""', b'"BF16"', b'"F16"', b'"F32"', b'"keys"', b'"values"', b'"1"',
                                    b'"start"', b'"0"', b'"__metadata__"', b"null", b"[]", b"{}", b"1.5"]))
    return with_header(data, header[:m.start()] + new + header[m.end():])


@st.composite
def mutated_file(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from(FILES))
    for _ in range(draw(st.integers(1, 2))):
        data = draw(mutation(data))
    return data


def check_outcome(load, record: bool = False) -> str:
    try:
        fragment = load()
    except FormatError as exc:
        assert exc.field and str(exc).startswith(f"{exc.source}: {exc.field}: ")
        if record:
            event(f"refused: {exc.field}")
        return "refused"
    original = BY_ID.get(fragment.content_id)
    assert original is not None, "accepted a fragment that is none of the originals"
    assert content_id_of(fragment.fingerprint, fragment.start, fragment.keys, fragment.values) == fragment.content_id
    assert original.start == fragment.start and original.fingerprint == fragment.fingerprint
    assert torch.equal(bits(original.keys), bits(fragment.keys))
    assert torch.equal(bits(original.values), bits(fragment.values))
    return "accepted"


@settings(max_examples=200)
@given(mutated_file())
def test_loader_returns_an_original_fragment_or_refuses(data: bytes) -> None:
    outcome = check_outcome(lambda: fragment_from_bytes(data, "fuzz.cmfrag", LIMITS), record=True)
    handle, path = tempfile.mkstemp(suffix=".cmfrag")
    try:
        os.write(handle, data)
        os.close(handle)
        assert check_outcome(lambda: load_fragment(path, LIMITS)) == outcome
    finally:
        os.unlink(path)


def test_the_originals_load_and_the_mutations_are_not_vacuous() -> None:
    for data, fragment in zip(FILES, BASES):
        assert check_outcome(lambda: fragment_from_bytes(data, "x", LIMITS)) == "accepted"
    flipped = bytearray(FILES[0])
    flipped[-1] ^= 1
    assert check_outcome(lambda: fragment_from_bytes(bytes(flipped), "x", LIMITS)) == "refused"
