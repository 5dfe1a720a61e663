"""The one place realstate touches transformers' cache objects, in both directions — the way
``DynamicCache`` once paired ``from_legacy_cache`` with ``to_legacy_cache``:

- ``tensors_from_cache``: an agent's cache (``cache.layers[i].keys/.values``, ``[1, H, n, D]``)
  into the ``[L, H, n, D]`` keys and values one ``Fragment`` holds (``Fragment.from_cache``);
- ``cache_from_tensors``: rendered ``[L, H, T, D]`` keys and values into a ``DynamicCache`` ready
  for ``model(...)`` or ``model.generate(...)``;
- ``batch_cache_from_tensors``: several renders of one length as one cache of a batch of B, so
  a final agent can decode from all of them in one forward per token;
- ``SpliceCache``: what a decoder layer's attention writes into and reads from while a
  composition (``realstate.composition``) re-runs some tokens of a render: the layer's fresh keys
  and values written at those tokens' places in a whole render, the whole render returned.

Only public cache API is used: the layers' ``keys``/``values`` attributes to read, and
``DynamicCache.update`` on an empty cache to build (it copies each layer once, so the cache
never aliases the render's buffers: decoding cannot write into a render)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from spec import InputError

if TYPE_CHECKING:  # imported where a cache is built: the checker renders without transformers
    from transformers import DynamicCache


def tensors_from_cache(cache: Any, layer_count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The keys and values ``[L, H, n, D]`` of a transformers cache of a batch of one with
    ``layer_count`` layers.  A sliding-window layer is refused: it has dropped the tokens beyond
    its window."""
    layers = getattr(cache, "layers", None)
    if layers is None or len(layers) != layer_count:
        got = "no .layers" if layers is None else f"{len(layers)} layers"
        raise InputError(f"cache has {got}; the fingerprint wants {layer_count}")
    for i, layer in enumerate(layers):
        if getattr(layer, "is_sliding", False):
            raise InputError(f"cache layer {i} is a sliding-window layer ({type(layer).__name__}); "
                             "it drops tokens, so it is not one agent's whole contribution")
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if not isinstance(keys, torch.Tensor) or keys.dim() != 4 or keys.shape[0] != 1:
            raise InputError(f"cache layer {i}: want keys [1, H, n, D] (batch of one)")
        if not isinstance(values, torch.Tensor) or values.shape != keys.shape:
            raise InputError(f"cache layer {i}: values {None if values is None else tuple(values.shape)} do not "
                             f"match keys {tuple(keys.shape)}")
    keys = torch.stack([layer.keys[0] for layer in layers])
    values = torch.stack([layer.values[0] for layer in layers])
    return keys, values


def cache_from_tensors(keys: torch.Tensor, values: torch.Tensor) -> DynamicCache:
    """A ``DynamicCache`` holding ``keys``/``values`` ``[L, H, T, D]`` as ``L`` layers of ``[1, H, T, D]``."""
    if keys.dim() != 4 or keys.shape != values.shape:
        raise InputError(f"want keys and values of one shape [L, H, T, D], got {tuple(keys.shape)} and "
                         f"{tuple(values.shape)}")
    from transformers import DynamicCache

    cache = DynamicCache()
    for layer in range(keys.shape[0]):
        cache.update(keys[layer].unsqueeze(0), values[layer].unsqueeze(0), layer)
    return cache


def batch_cache_from_tensors(keys: Sequence[torch.Tensor], values: Sequence[torch.Tensor]) -> DynamicCache:
    """A ``DynamicCache`` of batch ``B = len(keys)``: row ``b`` holds ``keys[b]``/``values[b]``
    (each ``[L, H, T, D]``, all of one shape), layer ``l`` as ``[B, H, T, D]``."""
    if not keys or len(keys) != len(values) or any(k.shape != keys[0].shape or v.shape != keys[0].shape
                                                   for k, v in zip(keys, values)):
        raise InputError(f"want B >= 1 keys and values of one shape [L, H, T, D], got {len(keys)} keys, "
                         f"{len(values)} values of shapes {sorted({tuple(t.shape) for t in (*keys, *values)})}")
    from transformers import DynamicCache

    cache = DynamicCache()
    for layer in range(keys[0].shape[0]):
        cache.update(torch.stack([k[layer] for k in keys]), torch.stack([v[layer] for v in values]), layer)
    return cache


class SpliceCache:
    """The object a composition passes as a decoder layer's cache.  Transformers' attention calls
    ``update(keys, values, layer_idx, ...)`` with the step's RoPE'd keys and values ``[1, H, S, D]``
    and attends to what it returns; here they are written into ``keys``/``values`` (``[L, H, T, D]``,
    contiguous) at token places ``places`` (``None``: all ``T``, in order) and the layer's whole
    ``[1, H, T, D]`` is returned, so the re-run tokens attend to the others' rendered keys and
    values and to each other's fresh ones.  Only ``update`` is offered: a model that asks its cache
    for anything else is not one this seam knows, and fails loudly rather than silently."""

    __slots__ = ("keys", "values", "places")

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, places: torch.Tensor | None) -> None:
        if keys.dim() != 4 or keys.shape != values.shape or not keys.is_contiguous() or not values.is_contiguous():
            raise InputError(f"want contiguous keys and values of one shape [L, H, T, D], got {tuple(keys.shape)} "
                             f"and {tuple(values.shape)}")
        self.keys, self.values, self.places = keys, values, places

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        if self.places is None:
            keys.copy_(key_states[0])
            values.copy_(value_states[0])
        else:
            keys.index_copy_(1, self.places, key_states[0])
            values.index_copy_(1, self.places, value_states[0])
        return keys.unsqueeze(0), values.unsqueeze(0)
