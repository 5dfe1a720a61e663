"""Composition with the public face: three agents' fragments, kept with their inputs, composed.

``canonical_merge`` joins caches that never attended to each other; ``compose`` re-runs a share of
the tokens (and every later fragment's first tokens) against the joined cache, so the fragments
see one another, and it stays a function of the set: every delivery order composes the same
bytes.  Seeded tiny Qwen3 weights (``torch.manual_seed``), CPU, a few seconds."""

from itertools import permutations

import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM

from realstate import Fragment, canonical_merge, compose, fragment_set, from_model

torch.manual_seed(0)
config = Qwen3Config(vocab_size=4096, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=32)
model = Qwen3ForCausalLM(config).to(torch.bfloat16).eval()
lm = from_model(model, "seeded", "example: qwen3 tiny, torch.manual_seed(0)")


def fragment(prompt_ids: list[int]) -> Fragment:
    """The agent's cache and its inputs (the layer-0 embeddings a composition re-runs)."""
    ids = torch.tensor([prompt_ids])
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, cache=cache, use_cache=True)
        inputs = model.get_input_embeddings()(ids)[0]
    return Fragment.from_cache(cache, lm.fingerprint, start=0, inputs=inputs)


def cache_bytes(cache: DynamicCache) -> bytes:
    return b"".join(t.view(torch.int16).numpy().tobytes()
                    for layer in cache.layers for t in (layer.keys, layer.values))


agents = [fragment([11, 12, 13, 14, 15]), fragment([21, 22, 23]), fragment([31, 32, 33, 34])]
composed = {cache_bytes(compose(fragment_set(order), lm, recompute=0.15, anchors=2))
            for order in permutations(agents)}
nothing_recomputed = cache_bytes(compose(fragment_set(agents), lm, recompute=0.0, anchors=0))

assert len(composed) == 1  # one composed cache for all 3! orders
assert nothing_recomputed == cache_bytes(canonical_merge(fragment_set(agents)))  # the r = 0 gate
assert composed != {nothing_recomputed}  # the repair changed the cache
print(f"6 delivery orders: 1 composed cache ({len(composed.pop())} bytes), unequal to canonical_merge's")
