"""Greedy decoding of many contexts at once: one batched forward per step for every condition of
a problem (all k! BagMerge orders, CanonicalMerge fed every input order, the references, the
controls and PackLLM's separately prompted contexts).

Contexts of different lengths are left-padded with zeros that the attention mask hides, and each
row keeps its own positions (it continues at its own context length), so a short context is
decoded as if alone.  Rows in one batch are independent computations: identical rows give
identical bits (the answer-uniqueness check compares CanonicalMerge rows within one batch).
Rows that share a ``group`` are decoded together PackLLM-style (``realstate.bench.packllm``)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from realstate.bench.packllm import Fusion, fuse, fusion_weights
from realstate.bench.prompts import TextCodec
from realstate.bench.scoring import finished
from realstate.kernel.fragment import tensor_bytes
from realstate.models.loaded import LoadedModel


@dataclass
class Row:
    """One context to decode from: keys/values ``[L, H, t, D]`` (``t`` may be 0: no context)."""

    condition: str
    keys: torch.Tensor
    values: torch.Tensor
    group: str | None = None  # rows of one group are fused into one answer (PackLLM)

    @property
    def tokens(self) -> int:
        return int(self.keys.shape[2])


@dataclass(frozen=True)
class Decoded:
    tokens: tuple[int, ...]
    text: str
    first_logits_sha256: str  # the logits right after the final prompt, as bytes


@dataclass
class BatchResult:
    rows: list[Decoded]
    fusions: dict[str, Fusion] = field(default_factory=dict)
    steps: int = 0
    prompt_tokens: int = 0  # rows x prompt length, what the prefill of the final prompt cost


def empty_context(lm: LoadedModel) -> tuple[torch.Tensor, torch.Tensor]:
    fp = lm.fingerprint
    shape = (fp.layers, fp.kv_heads, 0, fp.head_dim)
    dtype = lm.model.get_input_embeddings().weight.dtype
    return torch.empty(shape, dtype=dtype, device=lm.device), torch.empty(shape, dtype=dtype, device=lm.device)


def padded_cache(rows: Sequence[Row]) -> tuple[DynamicCache, int]:
    """A batched cache: row ``r`` right-aligned, zeros to its left (masked out)."""
    longest = max(r.tokens for r in rows)
    first = rows[0].keys
    layers, heads, _, head_dim = first.shape
    keys = torch.zeros((layers, len(rows), heads, longest, head_dim), dtype=first.dtype, device=first.device)
    values = torch.zeros_like(keys)
    for b, row in enumerate(rows):
        if row.tokens:
            keys[:, b, :, longest - row.tokens:] = row.keys
            values[:, b, :, longest - row.tokens:] = row.values
    cache = DynamicCache()
    for layer in range(layers):
        cache.update(keys[layer], values[layer], layer)
    return cache, longest


def _digest(logits: torch.Tensor) -> str:
    return hashlib.sha256(tensor_bytes(logits.float())).hexdigest()


@torch.no_grad()
def decode_rows(lm: LoadedModel, codec: TextCodec, rows: Sequence[Row], prompt_ids: Sequence[int],
                max_new_tokens: int) -> BatchResult:
    """Append ``prompt_ids`` to every row's context and decode greedily until every row's answer
    has finished (``scoring.finished``) or ``max_new_tokens`` tokens were decoded."""
    cache, longest = padded_cache(rows)
    batch, prompt = len(rows), len(prompt_ids)
    device = lm.device
    lengths = torch.tensor([r.tokens for r in rows], device=device)
    mask = torch.zeros((batch, longest + prompt), dtype=torch.long, device=device)
    for b, row in enumerate(rows):
        mask[b, longest - row.tokens:] = 1
    positions = lengths[:, None] + torch.arange(prompt, device=device)[None, :]
    ids = torch.tensor([list(prompt_ids)] * batch, device=device)
    head = lm.model.get_output_embeddings()
    hidden = lm.decoder(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache,
                        use_cache=True).last_hidden_state
    logits = head(hidden[:, -1]).float()
    digests = [_digest(logits[b]) for b in range(batch)]
    groups: dict[str, list[int]] = {}
    for b, row in enumerate(rows):
        if row.group is not None:
            groups.setdefault(row.group, []).append(b)
    fusions = {name: fusion_weights(head(hidden[members, :-1]).float(), ids[members, 1:])
               for name, members in groups.items()}
    tokens: list[list[int]] = [[] for _ in rows]
    done = [False] * batch
    steps = 0
    for step in range(max_new_tokens):
        chosen = logits.argmax(dim=-1).tolist()
        for name, members in groups.items():
            fused = fuse(logits[members], fusions[name])
            for b in members:
                chosen[b] = fused
        for b in range(batch):
            if not done[b]:
                tokens[b].append(int(chosen[b]))
                done[b] = chosen[b] in codec.stop_ids or finished(codec.decode(tokens[b]))
        steps = step + 1
        if all(done) or step + 1 == max_new_tokens:
            break
        mask = torch.cat([mask, torch.ones((batch, 1), dtype=mask.dtype, device=device)], dim=1)
        step_positions = (lengths + prompt + step)[:, None]
        step_ids = torch.tensor([[c] for c in chosen], device=device)
        hidden = lm.decoder(input_ids=step_ids, attention_mask=mask, position_ids=step_positions, cache=cache,
                            use_cache=True).last_hidden_state
        logits = head(hidden[:, -1]).float()
    decoded = [Decoded(tuple(t), codec.decode(t), d) for t, d in zip(tokens, digests)]
    return BatchResult(decoded, fusions, steps, batch * prompt)
