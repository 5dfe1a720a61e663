"""A final agent continuing from a rendered context through the model's normal forward.

It appends its prompt, then greedily decodes ``k`` tokens.  The tokens and the bytes of the last
step's logits are returned so a replay can compare decodes bit for bit."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from realstate.fragment import tensor_bytes
from realstate.models import LoadedModel


@dataclass(frozen=True)
class Continuation:
    tokens: tuple[int, ...]
    last_logits_sha256: str


@torch.no_grad()
def greedy_continue(lm: LoadedModel, context: DynamicCache, prompt_ids: list[int], k: int) -> Continuation:
    """Decode ``k`` tokens greedily after ``prompt_ids``.  ``context`` is consumed (extended)."""
    ids = torch.tensor([prompt_ids], device=lm.device)
    tokens: list[int] = []
    logits = None
    for _ in range(k):
        # logits for the last position only, as generate() asks for them (the prompt's other
        # positions would cost a full LM-head product each and are never read)
        out = lm.model(input_ids=ids, cache=context, use_cache=True, logits_to_keep=1)
        logits = out.logits[0, -1]
        next_token = int(torch.argmax(logits).item())
        tokens.append(next_token)
        ids = torch.tensor([[next_token]], device=lm.device)
    digest = hashlib.sha256(tensor_bytes(logits)).hexdigest() if logits is not None else ""
    return Continuation(tuple(tokens), digest)
