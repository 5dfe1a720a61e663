"""Per-layer figures on the agents' activations: what trained weights show and seeded ones cannot.

Trained models have outlier key channels (a few head dimensions far larger than the rest), which
is where bf16 re-encoding and the order statistic m could behave differently.  Per layer this
reports the largest |k| channel of the pre-RoPE keys (RoPE mixes channel pairs, so the channel is
read before it), the worst re-encoding error and cosine the fidelity check measured on rendered
caches at that layer, and the smallest relative gap between two fragments' m computed at that
layer (the order key uses the middle layer only; the other layers show how well separated m
would be there).  A table of measurements, not a claim: it has nothing to hold or fail."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from realstate.kernel.order_value import exact_order_value
from realstate.models.agents import AgentRun
from realstate.replay.fidelity import FidelityRow


@dataclass(frozen=True)
class LayerActivations:
    layer: int
    channel: tuple[int, int]  # (kv head, dim) of the largest |pre-RoPE key|
    channel_max: float
    channel_ratio: float  # that channel's max |k| over the median channel's max |k|
    rope_max_abs_error: float | None  # worst over the fidelity placements; None when C8 did not run
    rope_min_cosine: float | None
    m_min_relative_gap: float | None  # None with fewer than two fragments
    m_pair: tuple[str, str] | None  # the two agents with that gap

    def to_json(self) -> dict[str, object]:
        return {"layer": self.layer, "channel": {"head": self.channel[0], "dim": self.channel[1]},
                "channel_max_abs": self.channel_max, "channel_over_median": self.channel_ratio,
                "rope_max_abs_error": self.rope_max_abs_error, "rope_min_cosine": self.rope_min_cosine,
                "m_min_relative_gap": self.m_min_relative_gap,
                "m_pair": list(self.m_pair) if self.m_pair else None}


def relative_gap(a: float, b: float) -> float:
    """``|a - b| / max(|a|, |b|)`` (0 for two zeros, NaN if either is NaN)."""
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def layer_activations(runs: Sequence[AgentRun], fidelity_rows: Sequence[FidelityRow] = ()) -> list[LayerActivations]:
    """The per-layer figures for the agents' runs (module doc)."""
    layers = runs[0].pre_rope_keys.shape[0]
    rows = []
    for layer in range(layers):
        # [H, D]: each channel's largest |k| over every agent and position
        per_channel = torch.stack([r.pre_rope_keys[layer].detach().to("cpu", torch.float64).abs().amax(dim=1)
                                   for r in runs]).amax(dim=0)
        flat = int(per_channel.argmax())
        head, dim = divmod(flat, per_channel.shape[1])
        peak = float(per_channel[head, dim])
        median = float(per_channel.flatten().median())
        m = [(r.name, exact_order_value(r.fragment.keys[layer])) for r in runs]
        gaps = [(relative_gap(a, b), (x, y)) for (x, a), (y, b) in itertools.combinations(m, 2)]
        gap, pair = min(gaps, key=lambda g: (math.isnan(g[0]), g[0])) if gaps else (None, None)
        errors = [x.rope_max_abs_error[layer] for x in fidelity_rows]
        cosines = [x.rope_min_cosine[layer] for x in fidelity_rows]
        rows.append(LayerActivations(layer, (head, dim), peak, peak / median if median else math.inf,
                                     max(errors) if errors else None, min(cosines) if cosines else None,
                                     gap, pair))
    return rows
