"""Agents that build caches the way latent-reasoning systems do.

An agent prefills its prompt, then optionally runs ``latent_steps`` steps that feed the last
hidden state back as the next input embedding (no token is sampled).  Its cache is its fragment.
The input embeddings are kept so the fidelity check can re-encode the very same inputs at
another offset."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from realstate.kernel.dtypes import raw_bits
from realstate.kernel.fragment import Fragment
from realstate.models.loaded import LoadedModel
from spec import ArgumentError, InputError

DEFAULT_TEXT_PROMPTS = (
    "Agent A: the first document says the bridge opened in 1932.",
    "Agent B: reading the second document, the architect was born in a coastal town and trained abroad.",
    "Agent C: the third source lists three later renovations.",
    "Agent D: according to the fourth document, traffic doubled in the decade after it opened, and tolls ended.",
    "Agent E: a fifth note.",
)
# what the final agent says before it decodes when the model has a tokenizer (the first document
# holds the answer); short, because every permutation's render is decoded after it
DEFAULT_QUESTION = "\nThe bridge opened in"


@dataclass
class AgentRun:
    name: str
    prompt_ids: list[int]
    latent_steps: int
    inputs_embeds: torch.Tensor  # [1, n, hidden]: prompt embeddings then the fed-back hidden states
    fragment: Fragment
    pre_rope_keys: torch.Tensor  # [L, H, n, D]: each layer's keys just before RoPE, as the run computed them


def seeded_prompts(count: int, vocab: int, seed: int = 0, base_length: int = 6) -> list[list[int]]:
    """``count`` prompts of different lengths (base, base+3, …) with seeded token ids."""
    prompts = []
    for i in range(count):
        g = torch.Generator().manual_seed(seed * 1000 + i)
        prompts.append(torch.randint(0, vocab, (base_length + 3 * i,), generator=g).tolist())
    return prompts


def text_prompts(lm: LoadedModel, texts: list[str]) -> list[list[int]]:
    if lm.tokenizer is None:
        raise InputError("text prompts need a tokenizer; this model has none (use seeded prompts)")
    return [lm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


@torch.no_grad()
def encode_again(lm: LoadedModel, run: AgentRun, start: int) -> DynamicCache:
    """The agent's recorded inputs encoded again at positions ``start..``, in the same steps the
    agent took (the prompt in one prefill, then one latent embedding at a time), so that at the
    agent's own start it reproduces the agent's cache bit for bit."""
    prompt = len(run.prompt_ids)
    steps = [(0, prompt)] + [(prompt + i, prompt + i + 1) for i in range(run.latent_steps)]
    cache = DynamicCache()
    for a, b in steps:
        positions = torch.arange(start + a, start + b, device=lm.device).unsqueeze(0)
        lm.decoder(inputs_embeds=run.inputs_embeds[:, a:b], position_ids=positions, cache=cache, use_cache=True)
    return cache


@torch.no_grad()
def run_agent(lm: LoadedModel, name: str, prompt_ids: list[int], latent_steps: int = 0,
              start: int = 0, keep_inputs: bool = False) -> AgentRun:
    """One agent's prefill and latent steps. ``keep_inputs``: its fragment keeps the layer-0
    inputs it was computed from (a version-2 fragment, which a composition can re-run); without,
    a version-1 fragment, whose content id covers its keys and values alone."""
    if not prompt_ids:
        raise ArgumentError("prompt_ids", prompt_ids, f"is empty (agent {name})")
    if latent_steps < 0:
        raise ArgumentError("latent_steps", latent_steps, "must be >= 0")
    ids = torch.tensor([prompt_ids], device=lm.device)
    embeds = lm.model.get_input_embeddings()(ids)
    positions = torch.arange(start, start + ids.shape[1], device=lm.device).unsqueeze(0)
    cache = DynamicCache()
    with _capture_pre_rope_keys(lm) as captured:
        out = lm.decoder(inputs_embeds=embeds, position_ids=positions, cache=cache, use_cache=True)
        pieces = [embeds]
        for _ in range(latent_steps):
            hidden = out.last_hidden_state[:, -1:, :]
            position = torch.tensor([[start + sum(p.shape[1] for p in pieces)]], device=lm.device)
            pieces.append(hidden)
            out = lm.decoder(inputs_embeds=hidden, position_ids=position, cache=cache, use_cache=True)
    inputs = torch.cat(pieces, dim=1)
    fragment = Fragment.from_cache(cache, lm.fingerprint, start=start, inputs=inputs[0] if keep_inputs else None)
    head_dim = lm.fingerprint.head_dim
    pre_rope = torch.stack([torch.cat(chunks, dim=1)[0].view(-1, lm.fingerprint.kv_heads, head_dim).transpose(0, 1)
                            for chunks in captured])
    check_capture(lm, name, pre_rope, fragment)
    return AgentRun(name, list(prompt_ids), latent_steps, inputs, fragment, pre_rope)


def check_capture(lm: LoadedModel, name: str, pre_rope_keys: torch.Tensor, fragment: Fragment) -> None:
    """The captured pre-RoPE keys, rotated by the model's own RoPE, must be the cached keys bit for
    bit; otherwise the architecture row names the wrong submodule (or the attention is not the
    stock one) and no fidelity figure built on the capture could be trusted."""
    again = lm.rope(pre_rope_keys, fragment.start)
    if not torch.equal(raw_bits(again), raw_bits(fragment.keys)):
        arch = lm.architecture
        raise InputError(f"agent {name}: the keys captured from {arch.attention}.{arch.pre_rope_keys} of "
                         f"{arch.class_name}, rotated by the model's own RoPE, do not reproduce its cache: "
                         "this model's attention is not the one realstate.models.architectures describes")


@contextmanager
def _capture_pre_rope_keys(lm: LoadedModel) -> Iterator[list[list[torch.Tensor]]]:
    """Record the output of each layer's pre-RoPE key module (the architecture row names it):
    ``[1, n, H, D]`` after Qwen3's k_norm, ``[1, n, H*D]`` from k_proj elsewhere."""
    arch = lm.architecture
    captured: list[list[torch.Tensor]] = [[] for _ in lm.layers]
    handles = [
        getattr(getattr(layer, arch.attention), arch.pre_rope_keys).register_forward_hook(
            lambda _module, _inputs, output, i=i: captured[i].append(output.detach()))
        for i, layer in enumerate(lm.layers)
    ]
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()


def run_agents(lm: LoadedModel, count: int, latent_steps: int = 0, seed: int = 0,
               texts: list[str] | None = None, starts: Sequence[int] = (),
               keep_inputs: bool = False) -> list[AgentRun]:
    """``count`` agents with prompts of different lengths: text through the tokenizer when the
    model has one (and texts are given or defaults exist), seeded token ids otherwise.  Agent
    ``i`` encodes from position ``starts[i]`` (0 where ``starts`` gives none), as an agent that
    continues after a shared prefix would."""
    if count < 1:
        raise ArgumentError("count", count, "must be at least 1 agent")
    if len(starts) > count or any(s < 0 for s in starts):
        raise ArgumentError("starts", tuple(starts), f"must be at most {count} positions, each >= 0")
    if texts is not None or lm.tokenizer is not None:
        pool = list(texts) if texts is not None else list(DEFAULT_TEXT_PROMPTS)
        if len(pool) < count:
            raise ArgumentError("texts", tuple(pool),
                                f"gives {len(pool)} prompts for {count} agents; give one per agent")
        prompts = text_prompts(lm, pool[:count])
    else:
        prompts = seeded_prompts(count, lm.vocab_size, seed)
    positions = [*starts, *[0] * (count - len(starts))]
    limit = lm.fingerprint.max_positions
    for i, (p, start) in enumerate(zip(prompts, positions)):
        if start + len(p) + latent_steps > limit:
            raise ArgumentError("starts", tuple(starts), f"puts agent {i} past the model's {limit} positions")
    return [run_agent(lm, chr(ord("A") + i) if i < 26 else f"agent{i}", p, latent_steps, start, keep_inputs)
            for i, (p, start) in enumerate(zip(prompts, positions))]
