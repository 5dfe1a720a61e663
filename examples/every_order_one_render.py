"""Order independence with the public face: three agents' fragments delivered in every order.

CanonicalMerge renders one SHA-256 for all 3! orders (and for a re-delivered copy); BagMerge, the
arrival-order concatenation it replaces, gives a different cache for each order.  Seeded tiny
Qwen3 weights (``torch.manual_seed``), CPU, a few seconds."""

from itertools import permutations

import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM

from realstate import Fingerprint, Fragment, bag_merge, canonical_render, fragment_set

torch.manual_seed(0)
config = Qwen3Config(vocab_size=4096, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=32)
model = Qwen3ForCausalLM(config).to(torch.bfloat16).eval()
fingerprint = Fingerprint(
    architecture="Qwen3ForCausalLM", layers=config.num_hidden_layers, kv_heads=config.num_key_value_heads,
    head_dim=config.head_dim, dtype="bfloat16",
    inv_freq=tuple(model.model.rotary_emb.inv_freq.double().tolist()),
    rope_theta=float(config.rope_parameters["rope_theta"]), max_positions=config.max_position_embeddings,
    weights="example: qwen3 tiny, torch.manual_seed(0)")


def fragment(prompt_ids: list[int]) -> Fragment:
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.tensor([prompt_ids]), cache=cache, use_cache=True)
    return Fragment.from_cache(cache, fingerprint, start=0)


def cache_bytes(cache: DynamicCache) -> bytes:
    """Every layer's keys then values, as raw bytes (bfloat16 viewed as int16)."""
    return b"".join(t.view(torch.int16).numpy().tobytes()
                    for layer in cache.layers for t in (layer.keys, layer.values))


agents = [fragment([11, 12, 13, 14, 15]), fragment([21, 22, 23]), fragment([31, 32, 33, 34])]
orders = list(permutations(agents))

canonical = {canonical_render(fragment_set(order)).digest() for order in orders}
canonical.add(canonical_render(fragment_set([*agents, agents[0].copy()])).digest())  # a re-delivery
bag = {cache_bytes(bag_merge(list(order))) for order in orders}

assert len(canonical) == 1 and len(bag) == len(orders)
print(f"{len(orders)} delivery orders: CanonicalMerge {len(canonical)} render, BagMerge {len(bag)} different caches")
print(f"render digest (SHA-256): {canonical.pop()}")
