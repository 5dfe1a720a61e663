"""The three renders of DESIGN.md, each returning a transformers ``DynamicCache``.

- ``canonical_merge(set)``: order by the content-derived key, lay out contiguously from ``base``,
  re-encode each fragment once from its stored position, concatenate.
- ``bag_merge(list)``: the same in list order, duplicates kept (the prior-work baseline).
- ``naive_concat(list)``: list order, no re-encoding (what public prior-work code does).

Each has a ``*_render`` twin returning ``Rendered`` (tensors, layout, digest) for checking;
``canonical_renders`` renders many states in one call (each from its own fragments, the torch
calls shared between renders of one layout shape), which is how the checker renders its orderings.
Merging never re-encodes; only a render does, once, from the stored positions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import torch

from realstate.kernel.adapter import cache_from_tensors
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import BatchContentIds, Fragment, content_id_of
from realstate.kernel.rope import reencode_into, render_keys
from realstate.kernel.threads import limited
from spec import InputError

if TYPE_CHECKING:  # annotations only: canonmerge check renders without importing transformers
    from transformers import DynamicCache


class Placement(NamedTuple):
    """Where a fragment goes in a render (a named pair: a checker builds five per ordering, and a
    frozen dataclass costs several times more to make)."""

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
    # a render written in a batch: the batch's ids, this render's slice, and the tensors that slice
    # is (a render whose tensors were replaced since is hashed from them instead)
    batch: tuple[BatchContentIds, int, torch.Tensor, torch.Tensor] | None = field(default=None, repr=False,
                                                                                  compare=False)

    @property
    def tokens(self) -> int:
        return self.keys.shape[2]

    def digest(self) -> str:
        """SHA-256 (hex) of the rendered bytes, with the same framing as a content id."""
        batch = self.batch
        if batch is not None and batch[2] is self.keys and batch[3] is self.values:
            return batch[0].of(batch[1]).hex()
        return content_id_of(self.fingerprint, self.base, self.keys, self.values).hex()

    def to_cache(self) -> DynamicCache:
        """A ``DynamicCache`` holding the rendered tensors (``realstate.kernel.adapter.cache_from_tensors``)."""
        return cache_from_tensors(self.keys, self.values)

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


# renders of at most this many key elements share their torch calls (``render_layouts``): there a
# render's cost is mostly the calls' fixed cost; a larger one is written alone, since stacking
# its sources would only add a copy of them
BATCH_ELEMENTS = 1 << 16

# a per-fragment re-encoding with a batched twin that gives the same bytes for a whole render
_BATCHED_REENCODE: dict[Callable[..., None], Callable[..., torch.Tensor]] = {reencode_into: render_keys}


# a Placement made by tuple's own constructor: the named tuple's generated ``__new__`` is a Python
# call, and a checker lays out every fragment of every ordering it renders (8 per ordering at N = 8)
_new_placement = tuple.__new__


def layout(ordered: Sequence[Fragment], base: int = 0) -> list[Placement]:
    """Offsets o_1 = base, o_{i+1} = o_i + n_i."""
    placements, offset = [], base
    for f in ordered:
        placements.append(_new_placement(Placement, (f, offset)))
        offset += f.tokens
    return placements


class _Prepared(NamedTuple):
    """One layout checked and taken apart for writing: its fragments' tensors and (tokens, δ)."""

    fingerprint: Fingerprint
    placements: list[Placement]
    sources: list[torch.Tensor]
    values: list[torch.Tensor]
    spans: tuple[tuple[int, int], ...]
    total: int


# a _Prepared made by tuple's own constructor, as a Placement is (one per render)
_new_prepared = tuple.__new__


def _prepare(placements: Sequence[Placement], base: int, reencode: bool) -> _Prepared:
    """One pass over the layout (a tiny render's cost is mostly such passes): the fingerprint
    object compared first (equal fingerprints are almost always one object), devices compared
    only where some tensor is not on the CPU."""
    if not placements:
        raise InputError("nothing to render: no fragments")
    fp = placements[0].fragment.fingerprint
    sources, values, spans, total, on_cpu = [], [], [], 0, True
    for p in placements:
        f = p.fragment
        if f.fingerprint is not fp:
            _common_fingerprint([placements[0].fragment, f])  # raises where they differ
        n = f.tokens
        keys = f.keys
        sources.append(keys)
        values.append(f.values)
        spans.append((n, p.offset - f.start if reencode else 0))
        total += n
        on_cpu = on_cpu and keys.is_cpu
    if base < 0 or base + total > fp.max_positions:
        raise InputError(f"render positions {base}..{base + total - 1} exceed the model's maximum "
                         f"{fp.max_positions}")
    if not on_cpu:
        device = sources[0].device
        if any(k.device != device for k in sources):  # rare: gather on the first fragment's device
            sources = [k.to(device) for k in sources]
            values = [v.to(device) for v in values]
    return _new_prepared(_Prepared, (fp, list(placements), sources, values, tuple(spans), total))


def render_layout(placements: Sequence[Placement], base: int, engine: Engine = CANONICAL,
                  reencode: bool = True) -> Rendered:
    """Write every fragment, re-encoded to its offset, into one buffer per tensor: values by one
    concatenation, keys by one batched re-encoding (an engine whose re-encoding has no batched
    twin, e.g. a planted bug, is called once per fragment instead)."""
    p = _prepare(placements, base, reencode)
    batched = _BATCHED_REENCODE.get(engine.reencode)
    if batched is None:
        return _render_each(p, base, engine)
    fp = p.fingerprint
    with limited(p.total * fp.layers * fp.kv_heads * fp.head_dim):
        keys = batched(p.sources, p.spans, engine.frequencies(fp), chunk_elements=engine.chunk_elements,
                       fused=engine.fused, threads=engine.threads, tokens=p.total)
        return Rendered(fp, base, keys, torch.cat(p.values, dim=2), p.placements)


def render_layouts(layouts: Sequence[Sequence[Placement]], base: int, engine: Engine = CANONICAL,
                   reencode: bool = True) -> list[Rendered]:
    """``render_layout`` of each layout, in order.  Small layouts (``BATCH_ELEMENTS``, or the
    engine's ``batch_elements``) with the same fingerprint object, device and (tokens, δ) spans
    are written together: their i-th sources stacked on a new leading axis, so one re-encoding
    and one concatenation write them all as [B·L, H, T, D].  The arithmetic is elementwise and the spans are each layout's own, so
    every render holds the bytes it would alone (tested); what is shared is only the fixed cost
    of the torch calls, which is most of the cost of a checker's tiny render.  Each render's
    tensors are contiguous views into its batch."""
    if len(layouts) == 1:  # one render (every call but the checker's): nothing to group
        return [render_layout(layouts[0], base, engine, reencode)]
    prepared = [_prepare(p, base, reencode) for p in layouts]
    batched = _BATCHED_REENCODE.get(engine.reencode)
    if batched is None:
        return [_render_each(p, base, engine) for p in prepared]
    rendered: list[Rendered] = [None] * len(prepared)  # type: ignore[list-item]
    groups: dict[tuple[int, tuple[tuple[int, int], ...], torch.device], list[int]] = {}
    bound = BATCH_ELEMENTS if engine.batch_elements is None else engine.batch_elements
    for i, p in enumerate(prepared):
        fp = p.fingerprint
        if p.total * fp.layers * fp.kv_heads * fp.head_dim > bound:
            rendered[i] = _render_batch([p], base, engine, batched)[0]
        else:
            groups.setdefault((id(fp), p.spans, p.sources[0].device), []).append(i)
    for members in groups.values():
        batch = [prepared[i] for i in members]
        for i, r in zip(members, _render_batch(batch, base, engine, batched)):
            rendered[i] = r
    return rendered


def _render_batch(batch: list[_Prepared], base: int, engine: Engine,
                  batched: Callable[..., torch.Tensor]) -> list[Rendered]:
    first = batch[0]
    fp = first.fingerprint
    with limited(len(batch) * first.total * fp.layers * fp.kv_heads * fp.head_dim):  # elements per tensor
        return _write_batch(batch, base, engine, batched)


def _write_batch(batch: list[_Prepared], base: int, engine: Engine,
                 batched: Callable[..., torch.Tensor]) -> list[Rendered]:
    first = batch[0]
    fp = first.fingerprint
    inv_freq = engine.frequencies(fp)
    if len(batch) == 1:  # a render too large to share its calls, or alone in its group
        keys = batched(first.sources, first.spans, inv_freq, chunk_elements=engine.chunk_elements,
                       fused=engine.fused, threads=engine.threads, tokens=first.total)
        return [Rendered(fp, base, keys, torch.cat(first.values, dim=2), first.placements)]
    count = len(batch)
    stacked = [torch.stack(column).flatten(0, 1) for column in zip(*(p.sources for p in batch))]
    keys = batched(stacked, first.spans, inv_freq, chunk_elements=engine.chunk_elements, fused=engine.fused,
                   threads=engine.threads)
    keys = keys.view(count, -1, *keys.shape[1:])
    values = torch.cat([torch.stack(column) for column in zip(*(p.values for p in batch))], dim=3)
    ids = BatchContentIds(fp, base, keys, values)
    return [Rendered(fp, base, k, v, p.placements, (ids, i, k, v))
            for i, (k, v, p) in enumerate(zip(keys.unbind(), values.unbind(), batch))]


def _render_each(p: _Prepared, base: int, engine: Engine) -> Rendered:
    """The per-fragment path: ``engine.reencode`` writes each fragment's slice of the keys."""
    fp = p.fingerprint
    with limited(p.total * fp.layers * fp.kv_heads * fp.head_dim):
        return _write_each(p, base, engine)


def _write_each(p: _Prepared, base: int, engine: Engine) -> Rendered:
    fp = p.fingerprint
    inv_freq = engine.frequencies(fp)
    keys = torch.empty((fp.layers, fp.kv_heads, p.total, fp.head_dim), dtype=p.sources[0].dtype,
                       device=p.sources[0].device)
    position = 0
    for source, (n, delta) in zip(p.sources, p.spans):
        engine.reencode(keys[:, :, position:position + n], source, delta, inv_freq)
        position += n
    return Rendered(fp, base, keys, torch.cat(p.values, dim=2), p.placements)


def canonical_renders(states: Iterable[Iterable[Fragment]], base: int = 0,
                      engine: Engine = CANONICAL) -> list[Rendered]:
    """``canonical_render`` of each state: each one's members collected and ordered on their own
    (nothing is shared between states but the torch calls of ``render_layouts``)."""
    return render_layouts(_canonical_layouts(states, base, engine), base, engine)


def canonical_render(fragments: Iterable[Fragment], base: int = 0, engine: Engine = CANONICAL) -> Rendered:
    """CanonicalMerge of the *set* of ``fragments`` (duplicates by content id count once)."""
    return render_layout(_canonical_layouts([fragments], base, engine)[0], base, engine)


def _canonical_layouts(states: Iterable[Iterable[Fragment]], base: int, engine: Engine) -> list[list[Placement]]:
    """Each state's members collected and ordered on their own: the one place both renders take
    the canonical order from, so a single render and a batch can never order differently."""
    layouts = []
    for state in states:
        members = list(engine.collect(state))
        layouts.append(layout(engine.order(members), base))
    return layouts


def bag_render(fragments: Sequence[Fragment], base: int = 0, engine: Engine = CANONICAL) -> Rendered:
    return render_layout(layout(list(fragments), base), base, engine)


def naive_render(fragments: Sequence[Fragment], base: int = 0, engine: Engine = CANONICAL) -> Rendered:
    return render_layout(layout(list(fragments), base), base, engine, reencode=False)


def canonical_merge(fragments: Iterable[Fragment], base: int = 0) -> DynamicCache:
    """CanonicalMerge: the fragments as a set, ordered by their content-derived key, laid out from
    ``base`` and RoPE re-encoded once from their stored positions; any arrival order, merge tree or
    re-delivery of the same set gives the same bytes.

    Args:
        fragments: a ``fragment_set`` (or any iterable; duplicates by content id count once).
        base: the absolute position of the first rendered token.

    Example:
        >>> state = fragment_set([a]).merge(fragment_set([b, a.copy()]))  # doctest: +SKIP
        >>> context = canonical_merge(state)  # doctest: +SKIP
        >>> lm.model.generate(input_ids=ids, cache=context, max_new_tokens=4)  # doctest: +SKIP
    """
    return canonical_render(fragments, base).to_cache()


def bag_merge(fragments: Sequence[Fragment], base: int = 0) -> DynamicCache:
    """BagMerge, the prior-work baseline: the fragments in list order, duplicates kept, laid out
    from ``base`` and RoPE re-encoded; a different order (or a re-delivery) gives other bytes.

    Args:
        fragments: the fragments in arrival order.
        base: the absolute position of the first rendered token.

    Example:
        >>> bag_merge([a, b]).get_seq_length() == a.tokens + b.tokens  # doctest: +SKIP
        True
    """
    return bag_render(fragments, base).to_cache()


def naive_concat(fragments: Sequence[Fragment], base: int = 0) -> DynamicCache:
    """The fragments concatenated in list order with no RoPE re-encoding (what public prior-work
    code does): each keeps the positions it was encoded at, so later ones collide with earlier ones.

    Args:
        fragments: the fragments in arrival order.
        base: recorded as the render's base; no key is moved.

    Example:
        >>> naive_concat([a, b]).get_seq_length() == a.tokens + b.tokens  # doctest: +SKIP
        True
    """
    return naive_render(fragments, base).to_cache()

