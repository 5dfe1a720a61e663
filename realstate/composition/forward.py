"""The model's own decoder layers, run one at a time over some tokens of a render.

A composition needs what a whole prefill hides: the keys after layer ``c`` for every token, then
later layers for a subset of tokens only, against keys and values of which most come from the
render.  So the layers are called one by one, with the arguments the model's own forward gives
them (the rotary tables of the positions, the causal mask the model builds, the position ids),
and a ``realstate.kernel.adapter.SpliceCache`` as their cache.  Where every token runs, the mask is
the model's own prefill mask (for sdpa usually ``None``, i.e. its causal kernel): the composition
of all tokens is then the model's prefill call for call, which the r = 1 gate checks byte for byte."""

from __future__ import annotations

from typing import Any

import torch

from realstate.kernel.adapter import SpliceCache
from realstate.models.loaded import LoadedModel
from spec import InputError


class DecoderRun:
    """Layer by layer over the inputs ``[1, T, hidden]`` at positions ``base..base+T-1``."""

    def __init__(self, lm: LoadedModel, inputs: torch.Tensor, base: int) -> None:
        from transformers.masking_utils import create_causal_mask

        config = lm.model.config
        tokens = inputs.shape[1]
        self.lm, self.layers = lm, lm.layers
        self.positions = torch.arange(base, base + tokens, device=inputs.device).unsqueeze(0)
        cos, sin = lm.rotary(inputs, self.positions)
        self.cos, self.sin = cos, sin
        arguments = {"config": config, "inputs_embeds": inputs, "attention_mask": None, "cache": None,
                     "position_ids": self.positions}
        self.causal = create_causal_mask(**arguments)  # exactly what the model's prefill passes its layers
        self._arguments = arguments
        self._materialized: Any = None

    def rows(self, places: torch.Tensor) -> Any:
        """The causal mask's rows for queries at ``places`` (keys: every token of the render)."""
        if self._materialized is None:
            from transformers.masking_utils import create_causal_mask

            mask = create_causal_mask(**self._arguments, allow_is_causal_skip=False)
            if not isinstance(mask, torch.Tensor) or mask.dim() != 4:
                implementation = getattr(self.lm.model.config, "_attn_implementation", None)
                raise InputError(f"attention implementation {implementation!r} takes no explicit [B, 1, Q, K] mask; "
                                 "a composition re-runs some tokens only and needs one (use sdpa or eager)")
            self._materialized = mask
        return self._materialized.index_select(2, places)

    def layer(self, index: int, hidden: torch.Tensor, places: torch.Tensor | None, cache: SpliceCache) -> torch.Tensor:
        """Layer ``index`` on ``hidden`` (the tokens at ``places``; ``None``: every token, in order)."""
        if places is None:
            mask, positions, cos, sin = self.causal, self.positions, self.cos, self.sin
        else:
            mask, positions = self.rows(places), self.positions.index_select(1, places)
            cos, sin = self.cos.index_select(1, places), self.sin.index_select(1, places)
        return self.layers[index](hidden, attention_mask=mask, position_embeddings=(cos, sin),
                                  position_ids=positions, cache=cache, use_cache=True)
