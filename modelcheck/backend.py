"""What the checker needs from a concrete implementation, and the torch-free fragment descriptions.

modelcheck imports only ``spec``: the backend under check (realstate's, in the CLI) is passed
in.  Fragment universes are plain data — bit patterns of the storage dtype — so that a universe
can hold −0, NaN payloads and subnormals exactly, and so it can be saved in a trace and rebuilt
bit for bit by ``--replay``."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from spec import FragmentSet

DTYPE_BITS = {"float32": 32, "float16": 16, "bfloat16": 16}

# keys[l][h][t][d]: bit pattern (unsigned int of the dtype's width) of one stored element
Bits4 = tuple[tuple[tuple[tuple[int, ...], ...], ...], ...]


@dataclass(frozen=True)
class Geometry:
    """The shape every fragment of a universe shares (the fingerprint, in miniature)."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    inv_freq: tuple[float, ...]  # head_dim // 2 rotary frequencies, float64

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_BITS:
            raise ValueError(f"unknown dtype {self.dtype!r}; known: {', '.join(DTYPE_BITS)}")
        if self.head_dim % 2 or len(self.inv_freq) != self.head_dim // 2:
            raise ValueError("head_dim must be even with head_dim // 2 rotary frequencies")


@dataclass(frozen=True)
class FragmentDesc:
    """One fragment as data: absolute start position and key/value bit patterns [L][H][n][D]."""

    start: int
    keys: Bits4
    values: Bits4

    @property
    def tokens(self) -> int:
        return len(self.keys[0][0])


@dataclass(frozen=True)
class Universe:
    """A named family of fragments, listed so that every prefix is an interesting set."""

    name: str
    description: str
    geometry: Geometry
    fragments: tuple[FragmentDesc, ...]
    base: int = 0  # where renders of this universe start (non-zero catches a render ignoring base)


F = TypeVar("F")
S = TypeVar("S")


class Backend(Protocol[F, S]):
    """A concrete merge/render implementation under check.

    ``S`` is the replicated state the implementation keeps; the correct one is a
    ``FragmentSet`` of fragments, mutants keep other things (lists, trees)."""

    name: str

    def build(self, geometry: Geometry, desc: FragmentDesc) -> F:
        """A concrete fragment from its description."""

    def copy(self, fragment: F) -> F:
        """A distinct object with the same content, as a peer would deliver it again."""

    def content_id(self, fragment: F) -> bytes: ...

    def order_value(self, fragment: F) -> float:
        """The order statistic ``m`` (mean key norm at the middle layer), exact float64."""

    def order_key(self, fragment: F) -> bytes:
        """The spec's full order key ``spec.order_key(m, content_id)``."""

    def singleton(self, fragment: F) -> S:
        """The state of a replica that has received exactly this fragment."""

    def merge(self, a: S, b: S) -> S:
        """The state join."""

    def abstract(self, state: S) -> FragmentSet[bytes]:
        """Abstraction function: the set of content ids the state holds."""

    def state_key(self, state: S) -> Hashable:
        """A complete, hashable description of the concrete state (visited sets, memo keys)."""

    def render_order(self, state: S) -> list[bytes]:
        """Content ids in the order the canonical render lays the fragments out."""

    def order_of(self, fragments: Sequence[F]) -> list[bytes]:
        """Content ids in the order the render's own sort puts ``fragments`` (given in this
        input order) — the sort driven directly, not through a state's iteration."""

    def render_digest(self, state: S, base: int = 0) -> str:
        """SHA-256 hex of the canonical render of ``state`` at ``base`` (the real render, every call)."""

    def bag_digest(self, fragments: Sequence[F], base: int = 0) -> str:
        """SHA-256 hex of BagMerge of ``fragments`` in list order at ``base``, duplicates kept."""

    # Optional: render_digests(states, base) -> list[str], render_digest of each state, in order
    # (each state still rendered from its own fragments; only fixed per-call costs may be shared).
    # Optional, for the byte oracle (a backend without them is not compared with oracle/):
    #   fingerprint_digest(geometry) -> bytes            the 32-byte digest its content ids frame
    #   render_bytes(state, base) -> oracle.RenderBytes  its canonical render, as bytes
    #   bag_bytes(fragments, base) -> oracle.RenderBytes its BagMerge, as bytes

    def render_as_fragment(self, fragments: Sequence[F]) -> F:
        """BagMerge of ``fragments`` in list order, packaged as a new fragment at start 0.

        Only mutants use it (incremental 'render of a render' merging)."""


def render_digests(backend: Backend, states: Sequence[Any], base: int = 0) -> list[str]:
    """``backend.render_digest`` of each state, in order: through the backend's optional
    ``render_digests`` when it has one (the fixed cost of its calls shared, never a render)."""
    many = getattr(backend, "render_digests", None)
    if many is None:
        return [backend.render_digest(s, base) for s in states]
    return many(states, base)
