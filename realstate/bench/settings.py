"""Benchmark settings: plain data, torch-free, so the command line validates flags before paying
for torch.  Every field lands in the JSON document; the seed drives everything random (seeded
weights, derangement ties, moment-matched noise, bootstrap resamples)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from realstate.models.geometry import GEOMETRIES, MODELS
from spec import ArgumentError

DEFAULT_MODEL = "smollm2-135m"
DEFAULT_LATENT_STEPS = (0, 2)
QUICK_LATENT_STEPS = (0, 1)
QUICK_PROBLEMS_PER_FAMILY = 1
TOST_MARGIN = 0.10  # accuracy points: CanonicalMerge vs the best fixed BagMerge order, fixed before any run
SPLITS = ("eval", "dev")


@dataclass(frozen=True)
class BenchSettings:
    model: str | None = DEFAULT_MODEL  # a named real-weight model; None when geometry or checkpoint is given
    geometry: str | None = None  # seeded weights of a named geometry
    checkpoint: str | None = None  # local weights (directory or .gguf)
    dtype: str = "float32"  # GGUF weights dequantize to float32 exactly; bf16 would round them again
    device: str = "cpu"
    seed: int = 0
    latent_steps: tuple[int, ...] = DEFAULT_LATENT_STEPS
    split: str = "eval"
    problems: str | None = None  # a JSONL file instead of the committed split
    hotpotqa: str | None = None  # a HotpotQA distractor-setting JSON file instead
    hotpotqa_agents: int = 2
    hotpotqa_distractors: int = 2
    quick: bool = False
    limit: int | None = None  # at most this many problems per family (after --quick's own cut)
    max_new_tokens: int = 4
    bootstrap: int = 2000
    tost_margin: float = TOST_MARGIN
    threads: int | None = None  # torch intra-op threads; None keeps torch's default
    families: tuple[str, ...] = field(default=())  # only these families (empty: all)

    def validate(self) -> None:
        sources = [n for n, v in (("model", self.model), ("geometry", self.geometry),
                                  ("checkpoint", self.checkpoint)) if v is not None]
        if len(sources) != 1:
            raise ArgumentError("model", self.model, f"give exactly one weight source (model, geometry or "
                                                     f"checkpoint); got {', '.join(sources) or 'none'}")
        if self.model is not None and self.model not in MODELS:
            raise ArgumentError("model", self.model, f"is not a known model; known: {', '.join(MODELS)}")
        if self.geometry is not None and self.geometry not in GEOMETRIES:
            raise ArgumentError("geometry", self.geometry, f"is not a known geometry; known: {', '.join(GEOMETRIES)}")
        if not self.latent_steps or any(s < 0 for s in self.latent_steps) or len(set(self.latent_steps)) != len(
                self.latent_steps):
            raise ArgumentError("latent_steps", self.latent_steps, "must be distinct non-negative budgets")
        if 0 not in self.latent_steps:
            raise ArgumentError("latent_steps", self.latent_steps, "must include 0 (the text-level references, "
                                "PackLLM and the full prompt, are decoded in the 0-step regime)")
        if self.split not in SPLITS:
            raise ArgumentError("split", self.split, f"must be one of {', '.join(SPLITS)}")
        if self.problems is not None and self.hotpotqa is not None:
            raise ArgumentError("problems", self.problems, "and hotpotqa are two problem sources; give one")
        if self.limit is not None and self.limit < 1:
            raise ArgumentError("limit", self.limit, "must be >= 1")
        if self.max_new_tokens < 1:
            raise ArgumentError("max_new_tokens", self.max_new_tokens, "must be >= 1")
        if self.bootstrap < 100:
            raise ArgumentError("bootstrap", self.bootstrap, "must be >= 100 resamples")
        if not 0.0 < self.tost_margin < 1.0:
            raise ArgumentError("tost_margin", self.tost_margin, "must be in (0, 1) accuracy")
        if self.threads is not None and self.threads < 1:
            raise ArgumentError("threads", self.threads, "must be >= 1")

    def effective_latent_steps(self) -> tuple[int, ...]:
        return QUICK_LATENT_STEPS if self.quick and self.latent_steps == DEFAULT_LATENT_STEPS else self.latent_steps

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["latent_steps"] = list(self.effective_latent_steps())
        out["families"] = list(self.families)
        return out
