"""The three renders of DESIGN.md, each returning a transformers ``DynamicCache``.

- ``canonical_merge(set)``: order by the content-derived key, lay out contiguously from ``base``,
  re-encode each fragment once from its stored position, concatenate.
- ``bag_merge(list)``: the same in list order, duplicates kept (the prior-work baseline).
- ``naive_concat(list)``: list order, no re-encoding (what public prior-work code does).

Each has a ``*_render`` twin returning ``Rendered`` (tensors, layout, digest) for checking.
Merging never re-encodes; only a render does, once, from the stored positions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from realstate.engine import CANONICAL, Engine
from realstate.fingerprint import Fingerprint
from realstate.fragment import Fragment, content_id_of
from realstate.rope import reencode_into, render_keys
from spec import InputError


@dataclass(frozen=True)
class Placement:
    fragment: Fragment
    offset: int


@dataclass
class Rendered:
    """A rendered context: keys/values ``[L, H, T, D]`` plus where each fragment went."""

    fingerprint: Fingerprint
    base: int
    keys: torch.Tensor
    values: torch.Tensor
    layout: list[Placement]

    @property
    def tokens(self) -> int:
        return self.keys.shape[2]

    def digest(self) -> str:
        """SHA-256 (hex) of the rendered bytes, with the same framing as a content id."""
        return content_id_of(self.fingerprint, self.base, self.keys, self.values).hex()

    def to_cache(self) -> DynamicCache:
        """A ``DynamicCache`` whose layers are views of the rendered tensors (no copy)."""
        cache = DynamicCache()
        for layer in range(self.keys.shape[0]):
            k = self.keys[layer].unsqueeze(0)
            v = self.values[layer].unsqueeze(0)
            cache_layer = DynamicLayer()
            cache_layer.lazy_initialization(k, v)
            cache_layer.keys, cache_layer.values = k, v
            cache.layers.append(cache_layer)
        return cache

    def as_fragment(self) -> Fragment:
        """The render packaged as one fragment at ``base`` (used to show incremental merging)."""
        return Fragment(self.fingerprint, self.base, self.keys.clone(), self.values.clone())


def _common_fingerprint(fragments: Sequence[Fragment]) -> Fingerprint:
    if not fragments:
        raise InputError("nothing to render: no fragments")
    first = fragments[0].fingerprint
    for f in fragments[1:]:
        if f.fingerprint is not first and f.fingerprint != first:
            raise InputError(f"fragments {fragments[0]!r} and {f!r} have different fingerprints "
                             f"({first.describe_mismatch(f.fingerprint)} differ); they never merge")
    return first


# a per-fragment re-encoding with a batched twin that gives the same bytes for a whole render
_BATCHED_REENCODE: dict[Callable[..., None], Callable[..., torch.Tensor]] = {reencode_into: render_keys}


def layout(ordered: Sequence[Fragment], base: int = 0) -> list[Placement]:
    """Offsets o_1 = base, o_{i+1} = o_i + n_i."""
    placements, offset = [], base
    for f in ordered:
        placements.append(Placement(f, offset))
        offset += f.tokens
    return placements


def render_layout(placements: Sequence[Placement], base: int = 0, engine: Engine = CANONICAL,
                  reencode: bool = True) -> Rendered:
    """Write every fragment, re-encoded to its offset, into one buffer per tensor: values by one
    concatenation, keys by one batched re-encoding (an engine whose re-encoding has no batched
    twin, e.g. a planted bug, is called once per fragment instead)."""
    fragments = [p.fragment for p in placements]
    fp = _common_fingerprint(fragments)
    sources, values, spans, total = [], [], [], 0
    for p, f in zip(placements, fragments):
        n = f.keys.shape[2]
        sources.append(f.keys)
        values.append(f.values)
        spans.append((n, p.offset - f.start if reencode else 0))
        total += n
    if base < 0 or base + total > fp.max_positions:
        raise InputError(f"render positions {base}..{base + total - 1} exceed the model's maximum "
                         f"{fp.max_positions}")
    device = sources[0].device
    if any(k.device != device for k in sources):  # rare: gather on the first fragment's device
        sources = [k.to(device) for k in sources]
        values = [v.to(device) for v in values]
    inv_freq = engine.frequencies(fp)
    batched = _BATCHED_REENCODE.get(engine.reencode)
    if batched is not None:
        keys = batched(sources, tuple(spans), inv_freq)
    else:
        keys = torch.empty((fp.layers, fp.kv_heads, total, fp.head_dim), dtype=sources[0].dtype, device=device)
        position = 0
        for source, (n, delta) in zip(sources, spans):
            engine.reencode(keys[:, :, position:position + n], source, delta, inv_freq)
            position += n
    return Rendered(fp, base, keys, torch.cat(values, dim=2), list(placements))


def canonical_render(fragments: Iterable[Fragment], base: int = 0, engine: Engine = CANONICAL) -> Rendered:
    """CanonicalMerge of the *set* of ``fragments`` (duplicates by content id count once)."""
    members = list(engine.collect(fragments))
    return render_layout(layout(engine.order(members), base), base, engine)


def bag_render(fragments: Sequence[Fragment], base: int = 0, engine: Engine = CANONICAL) -> Rendered:
    return render_layout(layout(list(fragments), base), base, engine)


def naive_render(fragments: Sequence[Fragment], base: int = 0) -> Rendered:
    return render_layout(layout(list(fragments), base), base, reencode=False)


def canonical_merge(fragments: Iterable[Fragment], base: int = 0) -> DynamicCache:
    return canonical_render(fragments, base).to_cache()


def bag_merge(fragments: Sequence[Fragment], base: int = 0) -> DynamicCache:
    return bag_render(fragments, base).to_cache()


def naive_concat(fragments: Sequence[Fragment], base: int = 0) -> DynamicCache:
    return naive_render(fragments, base).to_cache()

