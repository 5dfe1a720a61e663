"""PackLLM-style output fusion, the output-level baseline (Mavromatis et al., 2024, "Pack of LLMs"),
adapted as the core paper does: the same model prompted separately with each agent's document,
next-token distributions fused with weights from each context's perplexity.

Weights (PackLLM-sim, temperature 1): ``w_i = softmax_i(-log PPL_i)``, where ``PPL_i`` is the
perplexity of the final prompt's tokens (after its first) given context ``i``: the context that
makes the question most predictable weighs most.  The fused next token is the argmax of
``sum_i w_i softmax(logits_i)``, fed back to every context.  Budget matched to the cache-level
conditions: the same document tokens in total (each document once), the same final prompt, the
same greedy decoding budget; no latent steps (it is text-level)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

TEMPERATURE = 1.0


@dataclass(frozen=True)
class Fusion:
    log_perplexities: tuple[float, ...]
    weights: tuple[float, ...]


def fusion_weights(prompt_logits: torch.Tensor, next_ids: torch.Tensor) -> Fusion:
    """``prompt_logits [m, Q-1, V]`` (each context's logits over the final prompt but its last
    position) and ``next_ids [m, Q-1]`` (the tokens they predict) give the fusion weights."""
    if next_ids.shape[-1] == 0:  # a one-token final prompt predicts nothing: equal weights
        nll = torch.zeros(next_ids.shape[0], dtype=torch.float64, device=next_ids.device)
    else:
        log_probs = torch.log_softmax(prompt_logits.double(), dim=-1)
        nll = -log_probs.gather(-1, next_ids[..., None]).squeeze(-1).mean(dim=-1)  # log PPL per context
    weights = torch.softmax(-nll / TEMPERATURE, dim=0)
    return Fusion(tuple(float(x) for x in nll), tuple(float(w) for w in weights))


def fuse(logits: torch.Tensor, fusion: Fusion) -> int:
    """The fused greedy token from each context's next-token logits ``[m, V]``."""
    weights = torch.tensor(fusion.weights, dtype=torch.float64, device=logits.device)
    mixture = (weights[:, None] * torch.softmax(logits.double(), dim=-1)).sum(dim=0)
    return int(mixture.argmax())
