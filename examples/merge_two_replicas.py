"""Library use: build fragments from two agents' caches, merge two replicas, render, decode.

Runs on a laptop CPU with the tiny seeded Qwen3 (seeded weights, not real ones); with your own
model use ``realstate.models.loaded.from_model(model)`` or ``load_checkpoint(directory)`` instead."""

import torch
from transformers import DynamicCache

from realstate import Fragment, canonical_merge, fragment_set
from realstate.models.continuation import greedy_continue
from realstate.models.seeded import load_seeded

lm = load_seeded("qwen3-tiny")


def agent_cache(prompt_ids: list[int]) -> DynamicCache:
    cache = DynamicCache()
    with torch.no_grad():
        lm.model(input_ids=torch.tensor([prompt_ids]), cache=cache, use_cache=True)
    return cache


a = Fragment.from_cache(agent_cache([101, 102, 103, 104]), lm.fingerprint, start=0)
b = Fragment.from_cache(agent_cache([201, 202, 203]), lm.fingerprint, start=0)

replica_1 = fragment_set([a])
replica_2 = fragment_set([b, a.copy()])  # a arrived here too: set union absorbs it
state = replica_1.merge(replica_2)
assert state == replica_2.merge(replica_1)  # same state whichever way the merge goes

context = canonical_merge(state)  # a DynamicCache, RoPE re-encoded, ready for decoding
decoded = greedy_continue(lm, context, prompt_ids=[7, 8], k=4)
print(f"{len(state)} fragments, {a.tokens + b.tokens} context tokens, decoded {list(decoded.tokens)}")
