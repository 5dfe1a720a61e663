"""Device parity: the canonical render's SHA-256 on the CPU against the same render on another
device, over bfloat16, float16 and float32 and the adversarial universes (±0, subnormals, NaN
payloads, infinities, ties).

C7 says replicas that delivered one set render identical bytes; replicas on different hardware
are replicas too, and the render's arithmetic (RoPE applied in float32, rounded once) is where a
device could differ (fused multiply-add, flushed subnormals, NaN payloads rewritten).  A rotated
NaN key is specified (DESIGN.md: the storage dtype's canonical quiet NaN, bfloat16 0x7FC0, float16
0x7E00, float32 0x7FC00000), so the NaN cases must give equal digests too: a device whose NaN
results or casts keep another sign or payload shows as a mismatch.  Each case
renders one set in its listed order and reversed, at base 0 and at a non-zero base, on the CPU
(the reference: torch's operations, default path) and on the device under test with each render
path it offers.  Where the device under test is the CPU itself, only the other CPU path (chunked,
compiled kernel where it applies) is compared: the reference is never compared with itself.

Every run also renders one case with a planted bug (the wrong rotation sign) on the device under
test; that digest must differ from the reference, or the comparison went blind."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from modelcheck.backend import DTYPE_BITS, Geometry
from modelcheck.universes import UNIVERSES, make_geometry
from realstate.evidence.checker_backend import RealstateBackend, synthetic_fingerprint, tensor_from_bits
from realstate.evidence.planted import engine_named
from realstate.kernel.dtypes import BITS_VIEW, storage_dtype
from realstate.kernel.engine import CANONICAL, Engine, chunked
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import canonical_render

DTYPES = ("bfloat16", "float16", "float32")
BASES = (0, 7)  # 7: every fragment starting below it is re-encoded (δ ≠ 0)
CANARY_ENGINE = "wrong-rope-sign"

# per dtype: the bit patterns that decide whether two devices agree bit for bit
SPECIAL_BITS: dict[str, dict[str, int]] = {
    "bfloat16": {"-0": 0x8000, "min_sub": 0x0001, "-min_sub": 0x8001, "max_sub": 0x007F, "min_normal": 0x0080,
                 "qnan": 0x7FC1, "-qnan": 0xFFC3, "snan": 0x7F81, "inf": 0x7F80, "-inf": 0xFF80, "max": 0x7F7F},
    "float16": {"-0": 0x8000, "min_sub": 0x0001, "-min_sub": 0x8001, "max_sub": 0x03FF, "min_normal": 0x0400,
                "qnan": 0x7E01, "-qnan": 0xFE03, "snan": 0x7C01, "inf": 0x7C00, "-inf": 0xFC00, "max": 0x7BFF},
    "float32": {"-0": 0x80000000, "min_sub": 0x00000001, "-min_sub": 0x80000001, "max_sub": 0x007FFFFF,
                "min_normal": 0x00800000, "qnan": 0x7FC00001, "-qnan": 0xFFC00003, "snan": 0x7F800001,
                "inf": 0x7F800000, "-inf": 0xFF800000, "max": 0x7F7FFFFF},
}
# fragments of the specials set: (start, middle-layer key row, value row); a name is a special bit pattern
SPECIAL_ROWS: tuple[tuple[int, tuple[Any, ...], tuple[Any, ...]], ...] = (
    (0, ("qnan", 1.0, 2.0, 3.0), ("snan", "-0", 1.0, 0.0)),         # m = NaN
    (0, ("-qnan", 0.0, 0.0, 0.0), ("-qnan", 2.0, "-inf", 0.0)),      # another NaN payload: a NaN tie
    (1, ("-0", "-0", "-0", "-0"), ("-0", 0.0, "-0", 0.0)),           # m = +0 from -0 keys
    (1, (0.0, 0.0, 0.0, 0.0), (0.0, "-0", 0.0, "-0")),               # +0: a tie with the -0 keys
    (2, ("min_sub", 0.0, 0.0, 0.0), ("max_sub", "-min_sub", 0.0, 1.0)),
    (0, (0.0, 0.0, "-min_sub", 0.0), ("min_sub", 0.0, 0.0, 0.0)),    # the same m: a subnormal tie
    (3, ("max_sub", "min_normal", "min_sub", 0.0), (1.0, 1.0, 1.0, 1.0)),
    (0, (1.0, 2.0, 3.0, 4.0), (0.5, -0.5, 0.25, -0.25)),
    (3, (4.0, 3.0, 2.0, 1.0), (0.5, -0.5, 0.25, -0.25)),             # permuted coordinates: a tie
    (2, ("inf", 1.0, 0.0, 0.0), ("inf", 0.0, 0.0, 0.0)),
    (2, ("-inf", 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)),              # m = +inf again: an inf tie
    (0, ("max", 0.0, 0.0, 0.0), ("max", "max", 0.0, 0.0)),           # huge: rotation near overflow
)


@dataclass(frozen=True)
class Case:
    name: str  # "universe:<name>" or "specials"
    dtype: str
    fragments: tuple[Fragment, ...]


def _bits_of(x: Any, dtype: str) -> int:
    """The unsigned storage bits of a special pattern's name, or of a float ``dtype`` holds exactly."""
    if isinstance(x, str):
        return SPECIAL_BITS[dtype][x]
    width = DTYPE_BITS[dtype]
    signed = int(torch.tensor([x], dtype=storage_dtype(dtype)).view(BITS_VIEW[storage_dtype(dtype)]).item())
    return signed & ((1 << width) - 1)


def _row_tensor(row: Sequence[Any], dtype: str, layers: int) -> torch.Tensor:
    """``[L, H=1, n=1, D]``: the row in every layer (the order layer included)."""
    return tensor_from_bits([[[[_bits_of(x, dtype) for x in row]]]] * layers, dtype)


def specials(dtype: str) -> Case:
    """The special bit patterns of ``dtype`` in keys (every layer, the order layer included) and values."""
    geometry = make_geometry(kv_heads=1, dtype=dtype, layers=3)
    fp = synthetic_fingerprint(geometry)
    frags = tuple(Fragment(fp, start, _row_tensor(k, dtype, geometry.layers), _row_tensor(v, dtype, geometry.layers))
                  for start, k, v in SPECIAL_ROWS)
    return Case("specials", dtype, frags)


def universe_case(name: str, dtype: str) -> Case:
    """A universe's fragments in ``dtype``: its own bits in its storage dtype, else cast on the CPU
    (round to nearest; what a dtype cannot hold becomes ±inf or ±0, which stays adversarial)."""
    u = UNIVERSES[name]
    native = [RealstateBackend().build(u.geometry, d) for d in u.fragments]
    if dtype == u.geometry.dtype:
        return Case(f"universe:{name}", dtype, tuple(native))
    fp = synthetic_fingerprint(Geometry(u.geometry.layers, u.geometry.kv_heads, u.geometry.head_dim, dtype,
                                        u.geometry.inv_freq))
    target = storage_dtype(dtype)
    return Case(f"universe:{name}", dtype,
                tuple(Fragment(fp, f.start, f.keys.to(target), f.values.to(target)) for f in native))


def cases(dtypes: Sequence[str] = DTYPES, universes: Sequence[str] | None = None) -> list[Case]:
    names = list(UNIVERSES) if universes is None else list(universes)
    return [c for dtype in dtypes for c in [specials(dtype), *(universe_case(n, dtype) for n in names)]]


def subject_engines(device: str) -> dict[str, Engine]:
    """The render paths compared with the CPU reference on ``device`` (never the reference itself)."""
    paths = {"chunked": chunked(CANONICAL, 1)}
    return paths if device == "cpu" else {"default": CANONICAL, **paths}


def _digests(fragments: Sequence[Fragment], engine: Engine, device: str) -> list[str]:
    moved = [f.to(device) for f in fragments]
    return [canonical_render(order, base, engine).digest() for base in BASES for order in (moved, moved[::-1])]


def compare(case: Case, device: str, engines: dict[str, Engine]) -> dict[str, Any]:
    """One case: the reference digests (CPU, default path) and each of ``engines``' on ``device``."""
    reference = _digests(case.fragments, CANONICAL, "cpu")
    row: dict[str, Any] = {"set": case.name, "dtype": case.dtype, "fragments": len(case.fragments),
                           "renders": len(reference), "cpu_sha256": reference, "paths": {}}
    for path, engine in engines.items():
        digests = _digests(case.fragments, engine, device)
        row["paths"][path] = {"sha256": digests, "equal": digests == reference}
    row["equal"] = all(p["equal"] for p in row["paths"].values())
    return row


def canary(device: str) -> dict[str, Any]:
    """The comparison itself, fed a planted wrong rotation sign on ``device``: it must report other bytes."""
    row = compare(universe_case("random", "float32"), device, {CANARY_ENGINE: engine_named(CANARY_ENGINE)})
    return {"set": row["set"], "dtype": row["dtype"], "planted": CANARY_ENGINE, "seen": not row["equal"]}


def run_parity(device: str, dtypes: Sequence[str] = DTYPES, universes: Sequence[str] | None = None) -> dict[str, Any]:
    """Every case on ``device`` against the CPU, plus the canary: the evidence document's parity part."""
    started = time.perf_counter()
    rows = [compare(c, device, subject_engines(device)) for c in cases(dtypes, universes)]
    seen = canary(device)
    return {"device": device, "paths": list(subject_engines(device)), "bases": list(BASES), "cases": rows,
            "renders_compared": sum(r["renders"] * len(r["paths"]) for r in rows),
            "mismatches": [f"{r['set']} {r['dtype']} ({p})" for r in rows for p, v in r["paths"].items()
                           if not v["equal"]],
            "canary": seen, "seconds": round(time.perf_counter() - started, 3)}

