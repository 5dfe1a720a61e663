"""Content ids and render digests: SHA-256 over a fixed 72-byte header, then the raw
little-endian bytes of all keys, then all values (docs/FORMAT.md, "Content id").

Header layout (little-endian integers, offsets in bytes):

    0   8  magic "CMFRAG01"
    8  32  fingerprint digest (SHA-256 of the fingerprint's canonical JSON)
   40   1  dtype code: bfloat16 1, float16 2, float32 3
   41   3  zero
   44   4  L, unsigned
   48   4  H, unsigned
   52   8  n (tokens), unsigned
   60   4  D, unsigned
   64   8  start, signed two's complement

A render digest uses the same framing over the rendered tensors, with n = the rendered token
count and start = the render's base.

A fragment that keeps its inputs (format version 2) is identified under magic "CMFRAG02": the
same header, then its inputs' width (hidden, 8 bytes unsigned), the keys, the values, and the
inputs' raw little-endian bytes ([n, hidden], the fragment's dtype)."""

from __future__ import annotations

import hashlib

MAGIC = b"CMFRAG01"
MAGIC_WITH_INPUTS = b"CMFRAG02"
HEADER_BYTES = 72


def header(fingerprint_digest: bytes, dtype_code: int, layers: int, heads: int, tokens: int,
           head_dim: int, start: int, magic: bytes = MAGIC) -> bytes:
    if len(fingerprint_digest) != 32:
        raise ValueError(f"a fingerprint digest is 32 bytes, got {len(fingerprint_digest)}")
    parts = [
        magic,
        fingerprint_digest,
        dtype_code.to_bytes(1, "little"),
        bytes(3),
        layers.to_bytes(4, "little"),
        heads.to_bytes(4, "little"),
        tokens.to_bytes(8, "little"),
        head_dim.to_bytes(4, "little"),
        start.to_bytes(8, "little", signed=True),
    ]
    out = b"".join(parts)
    assert len(out) == HEADER_BYTES
    return out


def framed_digest(fingerprint_digest: bytes, dtype_code: int, shape: tuple[int, int, int, int],
                  start: int, keys: bytes, values: bytes) -> bytes:
    """SHA-256(header ++ keys ++ values): a content id, or a render digest with start = base."""
    layers, heads, tokens, head_dim = shape
    h = hashlib.sha256(header(fingerprint_digest, dtype_code, layers, heads, tokens, head_dim, start))
    h.update(keys)
    h.update(values)
    return h.digest()


def digest_with_inputs(fingerprint_digest: bytes, dtype_code: int, shape: tuple[int, int, int, int],
                       start: int, keys: bytes, values: bytes, inputs: bytes, hidden: int) -> bytes:
    """SHA-256(header under CMFRAG02 ++ hidden ++ keys ++ values ++ inputs): a version-2 content id."""
    layers, heads, tokens, head_dim = shape
    h = hashlib.sha256(header(fingerprint_digest, dtype_code, layers, heads, tokens, head_dim, start,
                              MAGIC_WITH_INPUTS))
    h.update(hidden.to_bytes(8, "little"))
    h.update(keys)
    h.update(values)
    h.update(inputs)
    return h.digest()
