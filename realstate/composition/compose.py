"""``compose``: the canonical render repaired by re-running its most deviating tokens.

Read only from the render (its bytes, its layout) and the fragments' inputs, never from the
order the state's fragments arrived in, so every permutation, merge tree and re-delivery of one
set composes to one cache on one platform (claim C9; checked by ``canonmerge realstate --compose``).
The composed cache is a render: it is returned, never put back into the state or a store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from realstate.composition.forward import DecoderRun
from realstate.composition.ranking import CANONICAL_SELECTOR, Selector, deviation
from realstate.composition.settings import ComposeSettings
from realstate.kernel.adapter import SpliceCache, cache_from_tensors
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, content_id_of
from realstate.kernel.render import Placement, Rendered, canonical_render
from realstate.models.loaded import LoadedModel
from spec import ArgumentError, FragmentSet

if TYPE_CHECKING:
    from transformers import DynamicCache


@dataclass
class Composed:
    """A composed render: keys/values ``[L, H, T, D]``, the layout it started from, the token places
    re-run (ascending, 0-based) and every token's deviation score at layer ``settings.layers``."""

    fingerprint: Fingerprint
    base: int
    keys: torch.Tensor
    values: torch.Tensor
    layout: list[Placement]
    selected: list[int]
    scores: list[float] = field(repr=False)
    settings: ComposeSettings

    @property
    def tokens(self) -> int:
        return self.keys.shape[2]

    def digest(self) -> str:
        """SHA-256 (hex) of the composed bytes, framed as a render's digest is."""
        return content_id_of(self.fingerprint, self.base, self.keys, self.values).hex()

    def to_cache(self) -> DynamicCache:
        return cache_from_tensors(self.keys, self.values)

    def as_rendered(self) -> Rendered:
        """The same bytes as a ``Rendered`` (what the replay's batched decode takes)."""
        return Rendered(self.fingerprint, self.base, self.keys, self.values, self.layout)


def _members(state: Iterable[Fragment]) -> Iterable[Fragment]:
    return state if isinstance(state, FragmentSet) else list(state)


def _inputs(layout: Sequence[Placement], lm: LoadedModel) -> torch.Tensor:
    """The render's input embeddings ``[1, T, hidden]`` in layout order; a fragment that kept no
    inputs, or other ones than this model takes, is refused by name (never composed without)."""
    hidden = int(lm.model.config.hidden_size)
    pieces = []
    for p in layout:
        f = p.fragment
        if f.fingerprint != lm.fingerprint:
            raise ArgumentError("state", f, f"was made by another model than the one composing "
                                f"({lm.fingerprint.describe_mismatch(f.fingerprint)} differ)")
        if f.inputs is None:
            raise ArgumentError("state", f, "holds no inputs (the layer-0 input embeddings of its tokens); "
                                "a composition re-runs tokens and cannot without them")
        if tuple(f.inputs.shape) != (f.tokens, hidden) or f.inputs.dtype != lm.model.dtype:
            raise ArgumentError("state", f, f"inputs {tuple(f.inputs.shape)} {f.inputs.dtype} are not "
                                f"[{f.tokens}, {hidden}] {lm.model.dtype}, what this model takes")
        pieces.append(f.inputs.to(lm.device))
    return torch.cat(pieces).unsqueeze(0)


@torch.no_grad()
def compose_render(state: Iterable[Fragment], lm: LoadedModel, settings: ComposeSettings = ComposeSettings(),
                   selector: Selector = CANONICAL_SELECTOR, engine: Engine = CANONICAL) -> Composed:
    """The composed render of ``state`` (see ``compose``), with its selection and scores.

    ``selector`` and ``engine`` are the mechanics under test (a planted bug in the negative tests)."""
    settings.validate(lm.fingerprint.layers)
    members = _members(state)
    rendered = canonical_render(members, settings.base, engine)
    inputs = _inputs(rendered.layout, lm)
    c, tokens = settings.layers, rendered.tokens
    keys = rendered.keys.to(lm.device).contiguous()
    values = rendered.values.to(lm.device).contiguous()
    run = DecoderRun(lm, inputs, settings.base)
    fresh_keys = torch.empty_like(keys[:c + 1])
    fresh_values = torch.empty_like(values[:c + 1])
    fresh = SpliceCache(fresh_keys, fresh_values, None)
    hidden = inputs
    for layer in range(c + 1):  # layers 0..c for every token: a prefill of the render's inputs
        hidden = run.layer(layer, hidden, None, fresh)
    scores = deviation(fresh_keys[c], keys[c])
    selected = selector.select(scores, rendered.layout, members, settings.base, settings.recompute,
                               settings.anchors)
    composed_keys, composed_values = keys.clone(), values.clone()
    if selected:
        places = torch.tensor(selected, device=lm.device)
        composed_keys[:c + 1].index_copy_(2, places, fresh_keys.index_select(2, places))
        composed_values[:c + 1].index_copy_(2, places, fresh_values.index_select(2, places))
        every = len(selected) == tokens  # every token re-run: the model's own prefill, call for call
        mixed = SpliceCache(composed_keys, composed_values, None if every else places)
        hidden = hidden if every else hidden.index_select(1, places)
        for layer in range(c + 1, lm.fingerprint.layers):
            hidden = run.layer(layer, hidden, mixed.places, mixed)
    return Composed(rendered.fingerprint, settings.base, composed_keys, composed_values, rendered.layout,
                    selected, scores, settings)


def compose(state: Iterable[Fragment], model: LoadedModel, recompute: float = 0.15, anchors: int = 2,
            layers: int = 1, base: int = 0) -> DynamicCache:
    """The canonical render of ``state`` repaired so its fragments attend to each other.

    Layers ``0..layers`` are re-run for every token; the ``ceil(recompute·n)`` tokens whose fresh
    keys at layer ``layers`` deviate most from the rendered ones (float64, ties by position), plus
    the first ``anchors`` tokens of every fragment but the first in canonical order, are carried
    through the remaining layers against the mixed cache, and their keys and values written back.
    ``recompute=0, anchors=0`` gives ``canonical_merge(state, base)``'s bytes; ``recompute=1`` gives
    one prefill of the canonical sequence of inputs.  Every fragment must carry its ``inputs``.

    Args:
        state: a ``fragment_set`` (or any iterable; duplicates by content id count once).
        model: the ``LoadedModel`` the fragments were made by (``realstate.models.from_model``).
        recompute: r in [0, 1], the share of tokens re-run by deviation.
        anchors: s >= 0, tokens re-run at the start of every fragment but the first.
        layers: c, the last layer re-run for every token (0..L-1).
        base: the absolute position of the first rendered token.

    Example:
        >>> context = compose(fragment_set([a, b, c]), lm, recompute=0.15, anchors=2)  # doctest: +SKIP
        >>> lm.model.generate(input_ids=ids, cache=context, max_new_tokens=4)  # doctest: +SKIP
    """
    settings = ComposeSettings(recompute, anchors, layers, base)
    return compose_render(state, model, settings).to_cache()
