"""The compiled small path (``realstate.kernel.fused.rotate_rows``: one call rotates a small
render's keys where they lie) writes the bytes of the torch small path it replaced
(``engine.unfused``: torch's operations only), digest for digest, on the checker's adversarial
universes (±0, subnormals, NaN payloads, infinities, ties, float32) and on random adversarial keys.

A key that re-encodes to NaN included: DESIGN.md fixes it as the storage dtype's canonical quiet
NaN, which both paths write (torch's own casts were not even one pattern: its vectorized bfloat16
rounding writes 0xFFFF, its scalar tail 0x7FC0, by where the element falls)."""

from __future__ import annotations

import itertools

import pytest
import torch

from modelcheck.universes import UNIVERSES
from realstate.evidence.checker_backend import RealstateBackend
from realstate.kernel import fused, rope
from realstate.kernel.engine import CANONICAL, unfused
from realstate.kernel.render import bag_render, canonical_render, canonical_renders
from tests.test_realstate_fused import HEAD_DIM, INV_FREQ, adversarial_keys

TORCH_ONLY = unfused(CANONICAL)


def _fragments(name: str):
    universe = UNIVERSES[name]
    backend = RealstateBackend()
    return [backend.build(universe.geometry, d) for d in universe.fragments]


@pytest.mark.parametrize("name", sorted(UNIVERSES))
def test_every_render_of_a_universe_has_the_torch_small_paths_digest(name):
    frags = _fragments(name)
    compared = 0
    assert rope.fused_kernel(frags[0].keys) is not None or frags[0].keys.dtype not in fused.DTYPES
    for size in range(1, min(len(frags), 4) + 1):
        for subset in itertools.combinations(frags, size):
            for base in (0, 5):
                _same(canonical_render(subset, base), canonical_render(subset, base, TORCH_ONLY))
                _same(bag_render(subset[::-1], base), bag_render(subset[::-1], base, TORCH_ONLY))
                compared += 2
    assert compared >= 20
    states = [frags[:k] for k in range(1, len(frags) + 1)]  # the checker's batched renders too
    for new, old in zip(canonical_renders(states, 3), canonical_renders(states, 3, TORCH_ONLY)):
        _same(new, old)


def _same(new, old) -> None:
    """Two renders with one digest and the same key bits (rotated NaNs included)."""
    assert torch.equal(_bits(new.keys), _bits(old.keys))
    assert new.digest() == old.digest()


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


@pytest.mark.parametrize("dtype", fused.DTYPES)
def test_random_adversarial_keys_render_alike_on_both_small_paths(dtype):
    """Non-NaN keys over the whole exponent range, δ = 0 pieces between rotated runs."""
    sources = [adversarial_keys(dtype, (3, 2, n, HEAD_DIM), seed) for seed, n in enumerate((5, 3, 7, 2, 4))]
    spans = ((5, 11), (3, 0), (7, -4), (2, 9), (4, 1_000_003))
    new = rope.render_keys(sources, spans, INV_FREQ)
    old = rope.render_keys(sources, spans, INV_FREQ, fused=False)
    bits = torch.int16 if dtype != torch.float32 else torch.int32
    assert torch.equal(new.view(bits), old.view(bits))


def test_the_comparison_sees_a_difference():
    """A check that cannot fail is a defect: a render whose one rotated element is changed by
    one unit in the last place no longer has the torch path's digest."""
    frags = _fragments("random")[:3]
    reference = canonical_render(frags, 2, TORCH_ONLY)
    changed = canonical_render(frags, 2)
    changed.keys.view(torch.int16)[0, 0, -1, 0] += 1
    assert changed.digest() != reference.digest()


@pytest.mark.parametrize("dtype", fused.DTYPES)
def test_rotate_rows_writes_where_the_keys_lie_and_refuses_a_strided_buffer(dtype):
    """The kernel writes through a view of the tensor's own bytes: the tensor handed in holds
    the rotated keys afterwards (those of the torch path), and a buffer that cannot be viewed so
    (strided) is refused, never rotated in a copy."""
    sources = [adversarial_keys(dtype, (3, 2, n, HEAD_DIM), seed) for seed, n in enumerate((4, 3))]
    spans = ((4, 5), (3, -2))
    dest = torch.cat(sources, dim=2)
    runs, cos, sin = rope._row_plan(INV_FREQ, spans, 7)
    fused.rotate_rows(dest, runs, cos, sin)
    want = rope.render_keys(sources, spans, INV_FREQ, fused=False)
    assert torch.equal(_bits(dest), _bits(want))
    strided = torch.cat(sources, dim=2).transpose(0, 1)
    with pytest.raises(ValueError, match="contiguous"):
        fused.rotate_rows(strided, runs, cos, sin)
