"""realstate's render as a ``modelcheck.backend.Backend``: what ``canonmerge check`` checks.

Fragments of a checker universe become real ``Fragment``s (torch tensors built from the exact
bit patterns) under a synthetic fingerprint, and every digest comes from realstate's own
``canonical_render`` / ``bag_render`` — the checker never sees a copy of the render."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import torch

from modelcheck.backend import DTYPE_BITS, FragmentDesc, Geometry
from realstate.kernel.dtypes import storage_dtype
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import bag_render, canonical_render, canonical_renders
from spec import FragmentSet

SYNTHETIC_MAX_POSITIONS = 1 << 20


def synthetic_fingerprint(geometry: Geometry) -> Fingerprint:
    return Fingerprint(
        architecture="modelcheck-synthetic",
        layers=geometry.layers,
        kv_heads=geometry.kv_heads,
        head_dim=geometry.head_dim,
        dtype=geometry.dtype,
        inv_freq=tuple(float(f) for f in geometry.inv_freq),
        rope_theta=10000.0,
        max_positions=SYNTHETIC_MAX_POSITIONS,
        weights="synthetic:modelcheck-universe",
    )


def tensor_from_bits(bits: object, dtype_name: str) -> torch.Tensor:
    """Exact tensor from nested lists of unsigned bit patterns of ``dtype_name``'s width."""
    width = DTYPE_BITS[dtype_name]
    unsigned = np.array(bits, dtype=np.uint16 if width == 16 else np.uint32)
    signed = unsigned.view(np.int16 if width == 16 else np.int32)
    return torch.from_numpy(signed.copy()).view(storage_dtype(dtype_name))


class RealstateBackend:
    """realstate's own code behind modelcheck's ``Backend`` protocol.  ``engine`` is the
    canonical one, or a planted-bug preset from ``realstate.evidence.planted`` (named in ``mutant``)."""

    def __init__(self, engine: Engine = CANONICAL) -> None:
        self.engine = engine
        self.name = "realstate"
        self.mutant = None if engine is CANONICAL else engine.name
        self._fingerprints: dict[Geometry, Fingerprint] = {}

    def _fingerprint(self, geometry: Geometry) -> Fingerprint:
        fp = self._fingerprints.get(geometry)
        if fp is None:
            fp = self._fingerprints[geometry] = synthetic_fingerprint(geometry)
        return fp

    def build(self, geometry: Geometry, desc: FragmentDesc) -> Fragment:
        fp = self._fingerprint(geometry)
        keys = tensor_from_bits(desc.keys, geometry.dtype)
        values = tensor_from_bits(desc.values, geometry.dtype)
        return Fragment(fp, desc.start, keys, values)

    def copy(self, fragment: Fragment) -> Fragment:
        return fragment.copy()

    def content_id(self, fragment: Fragment) -> bytes:
        return fragment.content_id

    def order_value(self, fragment: Fragment) -> float:
        return fragment.order_value

    def order_key(self, fragment: Fragment) -> bytes:
        return fragment.order_key

    def singleton(self, fragment: Fragment) -> object:
        return self.engine.collect([fragment])

    def merge(self, a: object, b: object) -> object:
        return a.merge(b)  # type: ignore[attr-defined]

    def abstract(self, state: object) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(f.content_id for f in state)  # type: ignore[attr-defined]

    def state_key(self, state: object) -> Hashable:
        return tuple(sorted(f.content_id for f in state))  # type: ignore[attr-defined]

    def render_order(self, state: object) -> list[bytes]:
        return [p.fragment.content_id for p in canonical_render(state, engine=self.engine).layout]  # type: ignore[arg-type]

    def order_of(self, fragments: Sequence[Fragment]) -> list[bytes]:
        return [f.content_id for f in self.engine.order(list(fragments))]

    def render_digest(self, state: object, base: int = 0) -> str:
        return canonical_render(state, base, engine=self.engine).digest()  # type: ignore[arg-type]

    def render_digests(self, states: Sequence[object], base: int = 0) -> list[str]:
        return [r.digest() for r in canonical_renders(states, base, engine=self.engine)]  # type: ignore[arg-type]

    def bag_digest(self, fragments: Sequence[Fragment], base: int = 0) -> str:
        return bag_render(fragments, base, engine=self.engine).digest()

    # --- for the byte oracle (modelcheck.oracle_link) ------------------------------------------

    def fingerprint_digest(self, geometry: Geometry) -> bytes:
        return self._fingerprint(geometry).digest

    def render_bytes(self, state: object, base: int = 0) -> Any:
        from realstate.evidence.oracle_bridge import render_bytes

        return render_bytes(canonical_render(state, base, engine=self.engine))  # type: ignore[arg-type]

    def bag_bytes(self, fragments: Sequence[Fragment], base: int = 0) -> Any:
        from realstate.evidence.oracle_bridge import render_bytes

        return render_bytes(bag_render(fragments, base, engine=self.engine))

    def render_as_fragment(self, fragments: Sequence[Fragment]) -> Fragment:
        return bag_render(fragments, engine=self.engine).as_fragment()


def make_backend(mutant: str | None = None) -> RealstateBackend:
    """The backend ``canonmerge check`` runs: realstate's canonical engine, or with ``mutant``
    the named planted-bug engine preset (``canonmerge check --plant``), which still runs
    realstate's real render with one mechanic swapped."""
    if mutant is None:
        return RealstateBackend(CANONICAL)
    from realstate.evidence.planted import engine_named

    return RealstateBackend(engine_named(mutant))


def make_worker_backend(mutant: str | None = None) -> RealstateBackend:
    """``make_backend`` for a checker worker process (pool or Ray): one torch thread, since each
    worker is given one core and renders tiny tensors (more threads only contend)."""
    torch.set_num_threads(1)
    return make_backend(mutant)
