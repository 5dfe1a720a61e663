"""A fragment: one agent's published cache contribution, identified by its content.

Keys and values are held as one tensor each, ``[L, H, n, D]`` (batch of one squeezed), so a
content id is two hash updates and a render touches each fragment once, not once per layer.
The content id is SHA-256 over a versioned fixed-layout header followed by the raw
little-endian bytes of all keys then all values in layer order (DESIGN.md).  A fragment that
keeps its inputs (the layer-0 input embeddings a composition re-runs) is a version-2 fragment:
its id is taken under another magic, with the inputs' width in the header and their bytes after
the values, so identity covers everything a repair reads; without inputs the id is version 1's,
unchanged."""

from __future__ import annotations

import ctypes
import hashlib
import struct
import sys
from collections.abc import Iterable
from typing import Any

import torch

from realstate.kernel.adapter import tensors_from_cache
from realstate.kernel.dtypes import BITS_VIEW, DTYPE_CODE, dtype_name
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.order_value import exact_order_value
from spec import FragmentSet, InputError, order_key

CONTENT_ID_MAGIC = b"CMFRAG01"
CONTENT_ID_MAGIC_V2 = b"CMFRAG02"  # a fragment with inputs: the header is followed by their width
_INPUTS_WIDTH = struct.Struct("<Q")  # hidden, the inputs' row width
# magic, fingerprint digest, dtype code, 3 pad bytes, L, H, n, D, start
_HEADER = struct.Struct("<8s32sB3xIIQIq")
_LITTLE_ENDIAN = sys.byteorder == "little"


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The raw little-endian bytes of ``t`` without copying a contiguous CPU tensor."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    array = t.view(BITS_VIEW[t.dtype]).numpy()
    if not _LITTLE_ENDIAN:
        array = array.byteswap()
    return memoryview(array).cast("B")


def content_id_of(fingerprint: Fingerprint, start: int, keys: torch.Tensor, values: torch.Tensor,
                  inputs: torch.Tensor | None = None) -> bytes:
    """Version 1 without ``inputs``; version 2 (its own magic, the inputs' width, their bytes
    after the values) with them."""
    layers, heads, tokens, head_dim = keys.shape
    magic = CONTENT_ID_MAGIC if inputs is None else CONTENT_ID_MAGIC_V2
    header = _HEADER.pack(magic, fingerprint.digest, DTYPE_CODE[fingerprint.dtype],
                          layers, heads, tokens, head_dim, start)
    h = hashlib.sha256(header)
    if inputs is not None:
        h.update(_INPUTS_WIDTH.pack(inputs.shape[1]))
    _hash_bytes(h, keys)
    _hash_bytes(h, values)
    if inputs is not None:
        _hash_bytes(h, inputs)
    return h.digest()


def _hash_bytes(h: Any, t: torch.Tensor) -> None:
    """Feed the bytes ``tensor_bytes(t)`` gives to ``h`` (``_readable``)."""
    h.update(_readable(t))


def _readable(t: torch.Tensor) -> Any:
    """The bytes ``tensor_bytes(t)`` gives, as a buffer.  A contiguous CPU tensor on a
    little-endian machine is read where it lies, through its data pointer, while the caller holds
    ``t``: about 1 µs against 8 µs for the numpy view, and the checker hashes every render."""
    if t.is_cpu and t.is_contiguous() and _LITTLE_ENDIAN and t.nbytes:
        return (ctypes.c_char * t.nbytes).from_address(t.data_ptr())
    return tensor_bytes(t)


class BatchContentIds:
    """``content_id_of(fingerprint, start, keys[i], values[i])`` for each slice ``i`` of keys and
    values ``[B, L, H, T, D]``: the renders a checker writes together share one shape and base,
    so the header is hashed once and each buffer is read where it lies, slice by slice.  A tiny
    render's content id is mostly per-call cost (a header, four tensor queries per tensor), which
    a batch of 128 would otherwise pay 128 times; each id still covers its own slice's bytes."""

    __slots__ = ("_prefix", "_held", "_keys", "_values", "_key_step", "_value_step")

    def __init__(self, fingerprint: Fingerprint, start: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        count, *shape = keys.shape   # every slice's [L, H, T, D]: one header for all of them
        self._prefix = hashlib.sha256(_HEADER.pack(CONTENT_ID_MAGIC, fingerprint.digest, DTYPE_CODE[fingerprint.dtype],
                                                   *shape, start))
        self._held = (keys, values)  # the buffers the views below read stay alive with this object
        self._keys, self._values = memoryview(_readable(keys)), memoryview(_readable(values))
        self._key_step, self._value_step = len(self._keys) // count, len(self._values) // count

    def of(self, index: int) -> bytes:
        h = self._prefix.copy()
        k, v = self._key_step, self._value_step
        h.update(self._keys[index * k:(index + 1) * k])
        h.update(self._values[index * v:(index + 1) * v])
        return h.digest()


class Fragment:
    """An immutable-by-contract cache contribution.  Do not mutate the tensors after creation:
    the content id was computed from their bytes."""

    __slots__ = ("fingerprint", "start", "keys", "values", "tokens", "content_id", "inputs", "_order_value",
                 "_order_key")

    def __init__(self, fingerprint: Fingerprint, start: int, keys: torch.Tensor, values: torch.Tensor,
                 inputs: torch.Tensor | None = None) -> None:
        _validate(fingerprint, start, keys, values)
        _validate_inputs(inputs, fingerprint, keys)
        # the layer-0 input embeddings [n, hidden] of the fragment's tokens, where the agent kept
        # them: what a composition (realstate.composition) re-runs; None where it did not
        self.inputs = None if inputs is None else inputs.contiguous()
        self.fingerprint = fingerprint
        self.start = start
        self.keys = keys.contiguous()
        self.values = values.contiguous()
        self.tokens: int = keys.shape[2]  # read by every render: kept rather than asked of the tensor
        self.content_id = content_id_of(fingerprint, start, self.keys, self.values, self.inputs)
        self._order_value: float | None = None
        self._order_key: bytes | None = None

    @classmethod
    def from_cache(cls, cache: Any, fingerprint: Fingerprint, start: int = 0,
                   inputs: torch.Tensor | None = None) -> Fragment:
        """Take a transformers cache of a batch of one (``realstate.kernel.adapter.tensors_from_cache``).

        ``start`` is the absolute position the cache's first token was encoded at; ``inputs``,
        the ``[n, hidden]`` input embeddings the cache was computed from, if kept."""
        return cls(fingerprint, start, *tensors_from_cache(cache, fingerprint.layers), inputs=inputs)

    @property
    def version(self) -> int:
        """The fragment's format version: 2 where it keeps its inputs, 1 where it does not."""
        return 1 if self.inputs is None else 2

    @property
    def device(self) -> torch.device:
        return self.keys.device

    def middle_layer_keys(self) -> torch.Tensor:
        return self.keys[self.fingerprint.layers // 2]

    @property
    def order_value(self) -> float:
        """m, computed once from the stored bytes (exact; see ``realstate.kernel.order_value``)."""
        if self._order_value is None:
            self._order_value = exact_order_value(self.middle_layer_keys())
        return self._order_value

    @property
    def order_key(self) -> bytes:
        """``(total_order_bits(m), content id)``, built and checked once: a render sorts by it
        every time, and neither m nor the id can change."""
        if self._order_key is None:
            self._order_key = order_key(self.order_value, self.content_id)
        return self._order_key

    def copy(self) -> Fragment:
        """A distinct object with equal content (what a re-delivery over the network gives)."""
        return Fragment(self.fingerprint, self.start, self.keys.clone(), self.values.clone(),
                        None if self.inputs is None else self.inputs.clone())

    def to(self, device: str | torch.device) -> Fragment:
        return Fragment(self.fingerprint, self.start, self.keys.to(device), self.values.to(device),
                        None if self.inputs is None else self.inputs.to(device))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fragment) and other.content_id == self.content_id

    def __hash__(self) -> int:
        return hash(self.content_id)

    def __repr__(self) -> str:
        return (f"Fragment(id={self.content_id.hex()[:12]}, start={self.start}, tokens={self.tokens}, "
                f"dtype={self.fingerprint.dtype})")


def _validate(fp: Fingerprint, start: int, keys: torch.Tensor, values: torch.Tensor) -> None:
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise InputError(f"fragment start must be a non-negative integer, got {start!r}")
    for name, t in (("keys", keys), ("values", values)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"fragment {name} must be a tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise InputError(f"fragment {name} must be [L, H, n, D], got shape {tuple(t.shape)}")
        if dtype_name(t.dtype) != fp.dtype:
            raise InputError(f"fragment {name} dtype {dtype_name(t.dtype)} != fingerprint dtype {fp.dtype}")
    want = (fp.layers, fp.kv_heads, keys.shape[2], fp.head_dim)
    if tuple(keys.shape) != want or tuple(values.shape) != want:
        raise InputError(f"fragment keys {tuple(keys.shape)} / values {tuple(values.shape)} do not match the "
                         f"fingerprint's [L={fp.layers}, H={fp.kv_heads}, n, D={fp.head_dim}]")
    if keys.shape[2] == 0:
        raise InputError("a fragment must hold at least one token")
    if keys.device != values.device:
        raise InputError(f"keys on {keys.device} but values on {values.device}")
    if start + keys.shape[2] > fp.max_positions:
        raise InputError(f"fragment positions {start}..{start + keys.shape[2] - 1} exceed the model's "
                         f"maximum {fp.max_positions}")


def _validate_inputs(inputs: torch.Tensor | None, fp: Fingerprint, keys: torch.Tensor) -> None:
    """Inputs are ``[n, hidden]`` rows in the fingerprint's storage dtype, beside the keys: the
    content id hashes their bytes, so their dtype is part of what a fragment is."""
    if inputs is None:
        return
    tokens = keys.shape[2]
    if not isinstance(inputs, torch.Tensor) or inputs.dim() != 2 or inputs.shape[0] != tokens or inputs.shape[1] < 1:
        shape = tuple(inputs.shape) if isinstance(inputs, torch.Tensor) else type(inputs).__name__
        raise InputError(f"fragment inputs must be [n={tokens}, hidden >= 1], got {shape}")
    if inputs.dtype != keys.dtype:
        raise InputError(f"fragment inputs are {dtype_name(inputs.dtype)} but the fingerprint stores {fp.dtype}")
    if inputs.device != keys.device:
        raise InputError(f"fragment inputs are on {inputs.device} but the keys on {keys.device}")


def fragment_set(fragments: Iterable[Fragment]) -> FragmentSet[Fragment]:
    """The replicated state holding ``fragments`` (dedup by content id, never by object).  A
    ``FragmentSet`` is that state already (its ids were checked when it was made): it is returned
    as it is rather than rebuilt, which a checker would do once per render."""
    if isinstance(fragments, FragmentSet):
        return fragments
    return FragmentSet.of(fragments, lambda f: f.content_id)
