"""C8 fidelity: a re-encoded fragment against the same inputs encoded at the target offset.

Two comparisons per layer, both in float64 (max abs error, min cosine over key vectors):

- **rope** — the model's own RoPE (its rotary module and its architecture's
  ``apply_rotary_pos_emb``, in its own dtype; ``LoadedModel.rope``) applied at the target
  positions to the very pre-RoPE keys the agent's run computed.  Hidden states are held fixed,
  so the only differences are storage rounding: this is the re-encoding fidelity C8 states, and
  the one the threshold applies to.
- **prefill** — the agent's same inputs run through the model again at the target positions,
  in the same steps the agent took (at the agent's own start this reproduces its cache bit for
  bit).  Beyond layer 0 this also carries the model's own low-precision arithmetic at other
  positions (in bf16 the hidden states drift by 1e-4 to 1e-3 in cosine), which no re-encoding
  can remove; it is reported, not thresholded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fragment import Fragment
from realstate.models.agents import AgentRun, check_capture, encode_again
from realstate.models.loaded import LoadedModel


@dataclass(frozen=True)
class FidelityRow:
    agent: str
    offset: int  # where the agent's fragment was placed (its first token's position)
    rope_max_abs_error: tuple[float, ...]  # per layer
    rope_min_cosine: tuple[float, ...]
    prefill_max_abs_error: tuple[float, ...]
    prefill_min_cosine: tuple[float, ...]
    base: int = 0  # the base of the render the keys were read from

    def to_json(self) -> dict[str, object]:
        return {"agent": self.agent, "offset": self.offset, "base": self.base,
                "rope_max_abs_error": list(self.rope_max_abs_error),
                "rope_min_cosine": list(self.rope_min_cosine),
                "prefill_max_abs_error": list(self.prefill_max_abs_error),
                "prefill_min_cosine": list(self.prefill_min_cosine)}


def compare_keys(moved: torch.Tensor, direct: torch.Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per layer of ``[L, H, n, D]``: max abs error and min cosine over key vectors."""
    a = moved.detach().to("cpu", torch.float64)
    b = direct.detach().to("cpu", torch.float64)
    err = (a - b).abs().amax(dim=(1, 2, 3))
    cos = torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-300).amin(dim=(1, 2))
    return tuple(err.tolist()), tuple(cos.tolist())


def model_rope(lm: LoadedModel, pre_rope_keys: torch.Tensor, start: int) -> torch.Tensor:
    """What the model itself would cache for these pre-RoPE keys at positions ``start..``."""
    return lm.rope(pre_rope_keys, start)


def placement_fidelity(lm: LoadedModel, run: AgentRun, moved: torch.Tensor, offset: int,
                       base: int = 0) -> FidelityRow:
    """The agent's keys as a render placed them at ``offset`` (``moved``: the render's slice,
    ``[L, H, n, D]``) against the model's own RoPE of the same pre-RoPE keys at ``offset``, and
    against a full re-prefill there (reported, not thresholded)."""
    rope_err, rope_cos = compare_keys(moved, model_rope(lm, run.pre_rope_keys, offset))
    direct = Fragment.from_cache(encode_again(lm, run, offset), lm.fingerprint, offset)
    pre_err, pre_cos = compare_keys(moved, direct.keys)
    return FidelityRow(run.name, offset, rope_err, rope_cos, pre_err, pre_cos, base)


def fidelity(lm: LoadedModel, run: AgentRun, offsets: Sequence[int], engine: Engine = CANONICAL) -> list[FidelityRow]:
    """The re-encoding function alone (no render) moved to each offset; the replay measures C8 on
    rendered caches instead (``placement_fidelity`` on each placement's slice)."""
    check_capture(lm, run.name, run.pre_rope_keys, run.fragment)
    rows = []
    inv_freq = engine.frequencies(run.fragment.fingerprint)
    for offset in offsets:
        moved = torch.empty_like(run.fragment.keys)
        engine.reencode(moved, run.fragment.keys, offset - run.fragment.start, inv_freq)
        rows.append(placement_fidelity(lm, run, moved, offset))
    return rows
