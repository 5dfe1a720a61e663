"""The fingerprint: what must be equal for two fragments to merge (DESIGN.md, "Fragment").

It carries the rotary frequencies the loaded model *actually uses* (as float64 bit patterns),
because re-encoding with any other frequencies disagrees with the model at large offsets."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from realstate.kernel.dtypes import STORAGE_DTYPES
from spec import InputError

FINGERPRINT_VERSION = 1
ROPE_CONVENTION = "neox-rotate-half"
_F64_HEX = re.compile(r"[0-9a-f]{16}")


def _f64_bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def _f64_from_bits(h: str) -> float:
    return struct.unpack(">d", bytes.fromhex(h))[0]


@dataclass(frozen=True)
class Fingerprint:
    architecture: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    inv_freq: tuple[float, ...]  # the model's own rotary frequencies, widened exactly to float64
    rope_theta: float  # informational: the config value; never used to re-encode
    max_positions: int
    weights: str  # "sha256:<hex>" of the weights, or an explicit id for synthetic fragments

    def __post_init__(self) -> None:
        problems = []
        if not self.architecture:
            problems.append("architecture is empty")
        for name in ("layers", "kv_heads", "head_dim", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.head_dim, int) and self.head_dim % 2:
            problems.append(f"head_dim must be even for rotary embeddings, got {self.head_dim}")
        if self.dtype not in STORAGE_DTYPES:
            problems.append(f"dtype {self.dtype!r} is not one of {', '.join(STORAGE_DTYPES)}")
        if isinstance(self.head_dim, int) and len(self.inv_freq) != self.head_dim // 2:
            problems.append(f"inv_freq has {len(self.inv_freq)} entries, want head_dim/2 = {self.head_dim // 2}")
        if not all(isinstance(f, float) and f == f and 0.0 < f < float("inf") for f in self.inv_freq):
            problems.append("inv_freq entries must be finite positive floats")
        if not self.weights:
            problems.append("weights is empty")
        if problems:
            raise InputError("bad fingerprint: " + "; ".join(problems))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": FINGERPRINT_VERSION,
            "architecture": self.architecture,
            "layers": self.layers,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "dtype": self.dtype,
            "rope": ROPE_CONVENTION,
            "inv_freq_f64": [_f64_bits(f) for f in self.inv_freq],
            "rope_theta_f64": _f64_bits(self.rope_theta),
            "max_positions": self.max_positions,
            "weights": self.weights,
        }

    @classmethod
    def from_json(cls, data: Any) -> Fingerprint:
        """Parse and validate; every problem is an ``InputError`` naming the field."""
        if not isinstance(data, dict):
            raise InputError("fingerprint must be a JSON object")
        expected = {"version", "architecture", "layers", "kv_heads", "head_dim", "dtype", "rope",
                    "inv_freq_f64", "rope_theta_f64", "max_positions", "weights"}
        if set(data) != expected:
            missing, extra = expected - set(data), set(data) - expected
            raise InputError(f"fingerprint fields: missing {sorted(missing)}, unexpected {sorted(extra)}")
        if type(data["version"]) is not int or data["version"] != FINGERPRINT_VERSION:
            raise InputError(f"fingerprint version {data['version']!r} is not supported (want {FINGERPRINT_VERSION})")
        if data["rope"] != ROPE_CONVENTION:
            raise InputError(f"fingerprint rope {data['rope']!r}: only {ROPE_CONVENTION!r} is supported")
        for name in ("architecture", "dtype", "weights", "rope_theta_f64"):
            if not isinstance(data[name], str):
                raise InputError(f"fingerprint field {name} must be a string")
        freqs = data["inv_freq_f64"]
        if not isinstance(freqs, list) or not all(isinstance(h, str) and _F64_HEX.fullmatch(h) for h in freqs):
            raise InputError("fingerprint field inv_freq_f64 must be a list of 16-digit lowercase hex "
                             "float64 bit patterns")
        if not _F64_HEX.fullmatch(data["rope_theta_f64"]):
            raise InputError("fingerprint field rope_theta_f64 must be a 16-digit lowercase hex float64 bit pattern")
        inv_freq = tuple(_f64_from_bits(h) for h in freqs)
        theta = _f64_from_bits(data["rope_theta_f64"])
        return cls(data["architecture"], data["layers"], data["kv_heads"], data["head_dim"],
                   data["dtype"], inv_freq, theta, data["max_positions"], data["weights"])

    @cached_property
    def canonical_bytes(self) -> bytes:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode("ascii")

    @cached_property
    def digest(self) -> bytes:
        """SHA-256 of the canonical encoding; this is what the content-id header carries."""
        return hashlib.sha256(self.canonical_bytes).digest()

    def describe_mismatch(self, other: Fingerprint) -> str:
        diffs = [k for k, v in self.to_json().items() if other.to_json()[k] != v]
        return ", ".join(diffs) or "none"
