"""The soak's fragments: small, seeded, the same bits in every process.

Agent ``a``'s ``j``-th fragment is a pure function of ``(seed, a, j)`` and the size flags, so
the harness knows every fragment any agent can publish (to check that nothing is lost and nothing
invented) without receiving them.  The fingerprint says ``synthetic:soak``: these are not model
caches (the distributed replay, ``canonmerge replicate``, uses real ones); the bit-level claim
under test, convergence, does not depend on the values."""

from __future__ import annotations

import torch

from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment
from realstate.processes.soak.settings import FragmentShape


def soak_fingerprint(shape: FragmentShape) -> Fingerprint:
    inv_freq = tuple(1.0 / (10000.0 ** (2 * i / shape.head_dim)) for i in range(shape.head_dim // 2))
    return Fingerprint("SoakSynthetic", shape.layers, shape.kv_heads, shape.head_dim, "bfloat16", inv_freq,
                       10000.0, 1 << 20, "synthetic:soak")


def soak_fragment(seed: int, agent: int, index: int, shape: FragmentShape = FragmentShape()) -> Fragment:
    # reduced mod 2**64 (torch's seed range): the same seed as before wherever it fitted
    generator = torch.Generator().manual_seed((((seed * 1_000_003) + agent) * 1_000_003 + index) % (1 << 64))
    span = shape.max_tokens - shape.min_tokens + 1
    tokens = shape.min_tokens + int(torch.randint(span, (1,), generator=generator))
    start = int(torch.randint(64, (1,), generator=generator))
    size = (shape.layers, shape.kv_heads, tokens, shape.head_dim)
    keys = torch.randn(size, generator=generator).to(torch.bfloat16)
    values = torch.randn(size, generator=generator).to(torch.bfloat16)
    return Fragment(soak_fingerprint(shape), start, keys, values)
