"""Which tokens a composition re-runs: a function of the render's bytes and layout only.

- ``deviation``: each token's float64 squared distance between its fresh and its rendered keys at
  one layer, summed over the head dimension, then over heads, on one thread (a reduction's bits can
  depend on how it is split between threads);
- ``ranked``: token places by deviation, largest first, ties by place; a sort on an exact key
  (totalOrder bits of the float64, then the place), never ``torch.topk``, whose order among equal
  values is unspecified;
- ``Selector``: the top ``ceil(r·n)`` (an exact rational ceiling: ``0.15·20`` is 3, not 4) plus
  the anchors, the first ``s`` tokens of every fragment but the first *in canonical order*."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import torch

from realstate.kernel.fragment import Fragment
from realstate.kernel.render import Placement
from realstate.kernel.threads import pinned
from spec import total_order_bits


def deviation(fresh: torch.Tensor, rendered: torch.Tensor) -> list[float]:
    """Per token, ``sum_h sum_d (fresh - rendered)^2`` in float64, for keys ``[H, T, D]``."""
    with pinned(1):
        difference = fresh.to(torch.float64) - rendered.to(torch.float64)
        return (difference * difference).sum(dim=-1).sum(dim=0).tolist()


def ranked(scores: Sequence[float]) -> list[int]:
    """Token places by score, largest first, equal scores by place."""
    return sorted(range(len(scores)), key=lambda t: (-total_order_bits(scores[t]), t))


def top_count(recompute: float, tokens: int) -> int:
    """``ceil(r·n)`` computed exactly (``Fraction`` of the float ``r``)."""
    return math.ceil(Fraction(recompute) * tokens)


def canonical_anchored(layout: Sequence[Placement], state: Iterable[Fragment]) -> list[Placement]:
    """The placements that get anchors: every fragment's but the first's, in canonical order
    (the layout's); the state's own iteration order is never read."""
    return list(layout[1:])


@dataclass(frozen=True)
class Selector:
    """How the tokens to re-run are chosen (a field a planted bug replaces, as an ``Engine``'s are)."""

    name: str
    anchored: Callable[[Sequence[Placement], Iterable[Fragment]], list[Placement]] = canonical_anchored
    rank: Callable[[Sequence[float]], list[int]] = ranked

    def select(self, scores: Sequence[float], layout: Sequence[Placement], state: Iterable[Fragment], base: int,
               recompute: float, anchors: int) -> list[int]:
        """The token places (0-based within the render) to re-run, ascending."""
        chosen = set(self.rank(scores)[:top_count(recompute, len(scores))])
        for placement in self.anchored(layout, state):
            start = placement.offset - base
            chosen.update(range(start, start + min(anchors, placement.fragment.tokens)))
        return sorted(chosen)


CANONICAL_SELECTOR = Selector("canonical")
