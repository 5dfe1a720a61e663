"""A final agent continuing from a rendered context through the model's normal forward.

It appends its prompt, then greedily decodes ``k`` tokens.  The tokens and the bytes of the last
step's logits are returned so a replay can compare decodes bit for bit.  ``greedy_continue_many``
does the same from several renders of one length at once (a batch of B rows, one forward per
token for all of them): a replay decodes every permutation's render that way, ~B times fewer
forward calls.  Rows never mix (attention is per row, nothing is padded); tests check that a row
of the batch decodes the same tokens and logits bytes as the render decoded alone, on the tiny
test geometry.  At real sizes the logits bytes can depend on the batch's row count (a CPU matrix
product blocks and sums by the shape it is given; seen at the qwen3-1.7b geometry), never on the
other rows' contents or a row's place, so the replay decodes all of an arity's renders in
batches of one row count."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from realstate.kernel.adapter import batch_cache_from_tensors
from realstate.kernel.fragment import tensor_bytes
from realstate.models.loaded import LoadedModel


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


@torch.no_grad()
def greedy_continue_many(lm: LoadedModel, keys: Sequence[torch.Tensor], values: Sequence[torch.Tensor],
                         prompt_ids: list[int], k: int) -> list[Continuation]:
    """``greedy_continue`` from each render (``keys[b]``/``values[b]``, ``[L, H, T, D]``, one
    shape) as one batch; one ``Continuation`` per render, in order."""
    context = batch_cache_from_tensors(keys, values)
    rows = len(keys)
    ids = torch.tensor([prompt_ids] * rows, device=lm.device)
    steps: list[torch.Tensor] = []
    logits = None
    for _ in range(k):
        out = lm.model(input_ids=ids, cache=context, use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1]
        ids = torch.argmax(logits, dim=-1, keepdim=True)
        steps.append(ids[:, 0])
    tokens = torch.stack(steps, dim=1).tolist() if steps else [[] for _ in range(rows)]
    return [Continuation(tuple(int(t) for t in tokens[b]),
                         hashlib.sha256(tensor_bytes(logits[b])).hexdigest() if logits is not None else "")
            for b in range(rows)]
