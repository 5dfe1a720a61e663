"""Qwen3 model geometries: the published ones (DESIGN.md) and a tiny embedded default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from spec import InputError

if TYPE_CHECKING:
    from transformers import Qwen3Config


@dataclass(frozen=True)
class Geometry:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    rope_theta: float = 1e6
    max_positions: int = 40960
    tied_embeddings: bool = True

    def config(self) -> Qwen3Config:
        from transformers import Qwen3Config

        return Qwen3Config(
            vocab_size=self.vocab,
            hidden_size=self.hidden,
            intermediate_size=self.intermediate,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            head_dim=self.head_dim,
            max_position_embeddings=self.max_positions,
            rope_theta=self.rope_theta,
            tie_word_embeddings=self.tied_embeddings,
            rms_norm_eps=1e-6,
        )


GEOMETRIES: dict[str, Geometry] = {
    g.name: g
    for g in (
        # embedded default: every claim checkable on a laptop CPU in about a minute
        Geometry("qwen3-tiny", layers=4, hidden=128, heads=4, kv_heads=2, head_dim=32,
                 intermediate=384, vocab=4096),
        Geometry("qwen3-1.7b", layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128,
                 intermediate=6144, vocab=151936),
        Geometry("qwen3-4b", layers=36, hidden=2560, heads=32, kv_heads=8, head_dim=128,
                 intermediate=9728, vocab=151936),
    )
}


def geometry(name: str) -> Geometry:
    try:
        return GEOMETRIES[name]
    except KeyError:
        raise InputError(f"unknown geometry {name!r}; known: {', '.join(GEOMETRIES)}") from None
