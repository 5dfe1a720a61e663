"""Library use: build fragments from two agents' caches, merge two replicas, render, decode.

Only the public face (``realstate``'s exports) and transformers: the model is a tiny Qwen3 drawn
with ``torch.manual_seed`` (seeded weights, not trained ones), so it runs on a laptop CPU.  With
your own model, build the ``Fingerprint`` the same way from its config and its own rotary
frequencies."""

import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM

from realstate import Fingerprint, Fragment, canonical_merge, fragment_set

torch.manual_seed(0)
config = Qwen3Config(vocab_size=4096, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=32)
model = Qwen3ForCausalLM(config).to(torch.bfloat16).eval()

# What must be equal for two fragments to merge: the geometry, the storage dtype, the rotary
# frequencies the model really multiplies positions by, and which weights made the caches.
fingerprint = Fingerprint(
    architecture="Qwen3ForCausalLM", layers=config.num_hidden_layers, kv_heads=config.num_key_value_heads,
    head_dim=config.head_dim, dtype="bfloat16",
    inv_freq=tuple(model.model.rotary_emb.inv_freq.double().tolist()),
    rope_theta=float(config.rope_parameters["rope_theta"]), max_positions=config.max_position_embeddings,
    weights="example: qwen3 tiny, torch.manual_seed(0)")


def agent_cache(prompt_ids: list[int]) -> DynamicCache:
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.tensor([prompt_ids]), cache=cache, use_cache=True)
    return cache


def greedy(context: DynamicCache, prompt_ids: list[int], k: int) -> list[int]:
    """The final agent: its prompt after the merged context, then ``k`` greedy tokens."""
    ids, out = torch.tensor([prompt_ids]), []
    with torch.no_grad():
        for _ in range(k):
            token = int(model(input_ids=ids, cache=context, use_cache=True).logits[0, -1].argmax())
            out.append(token)
            ids = torch.tensor([[token]])
    return out


a = Fragment.from_cache(agent_cache([101, 102, 103, 104]), fingerprint, start=0)
b = Fragment.from_cache(agent_cache([201, 202, 203]), fingerprint, start=0)

replica_1 = fragment_set([a])
replica_2 = fragment_set([b, a.copy()])  # a arrived here too: set union absorbs it
state = replica_1.merge(replica_2)
assert state == replica_2.merge(replica_1)  # same state whichever way the merge goes

context = canonical_merge(state)  # a DynamicCache, RoPE re-encoded, ready for decoding
decoded = greedy(context, prompt_ids=[7, 8], k=4)
print(f"{len(state)} fragments, {a.tokens + b.tokens} context tokens, decoded {decoded}")
