"""Benchmark settings: plain data, torch-free, so the command line validates flags before paying
for torch.  Every field lands in the JSON document; the seed drives everything random (seeded
weights, derangement ties, moment-matched noise, bootstrap resamples)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from realstate.models.geometry import GEOMETRIES, MODELS
from spec import ArgumentError
from spec.arguments import integer, integers, number, seed

DEFAULT_MODEL = "smollm2-135m"
DEFAULT_LATENT_STEPS = (0, 2)
QUICK_LATENT_STEPS = (0, 1)
QUICK_PROBLEMS_PER_FAMILY = 1
TOST_MARGIN = 0.10  # accuracy points: CanonicalMerge vs the best fixed BagMerge order, fixed before any run
SPLITS = ("eval", "dev")
MAX_LATENT_STEPS = 4096  # also checked against the model's positions once it is loaded
MAX_NEW_TOKENS = 4096
MAX_BOOTSTRAP = 100_000  # resamples are drawn as one [resamples, cells] array


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
        if not self.latent_steps or len(set(self.latent_steps)) != len(self.latent_steps):
            raise ArgumentError("latent_steps", self.latent_steps, "must be distinct non-negative budgets")
        integers("latent_steps", self.latent_steps, 0, MAX_LATENT_STEPS)
        if 0 not in self.latent_steps:
            raise ArgumentError("latent_steps", self.latent_steps, "must include 0 (the text-level references, "
                                "PackLLM and the full prompt, are decoded in the 0-step regime)")
        if self.split not in SPLITS:
            raise ArgumentError("split", self.split, f"must be one of {', '.join(SPLITS)}")
        if self.problems is not None and self.hotpotqa is not None:
            raise ArgumentError("problems", self.problems, "and hotpotqa are two problem sources; give one")
        seed("seed", self.seed)
        integer("hotpotqa_agents", self.hotpotqa_agents, 2, 4)
        integer("hotpotqa_distractors", self.hotpotqa_distractors, 0, 100)
        if self.limit is not None:
            integer("limit", self.limit, 1, 10**6)
        integer("max_new_tokens", self.max_new_tokens, 1, MAX_NEW_TOKENS)
        integer("bootstrap", self.bootstrap, 100, MAX_BOOTSTRAP, " resamples")
        number("tost_margin", self.tost_margin, 1e-9, 1 - 1e-9, " accuracy (open interval (0, 1))")
        if self.threads is not None:
            integer("threads", self.threads, 1, 1024)
        if self.device not in ("cpu", "cuda"):
            raise ArgumentError("device", self.device, "must be cpu or cuda")

    def effective_latent_steps(self) -> tuple[int, ...]:
        return QUICK_LATENT_STEPS if self.quick and self.latent_steps == DEFAULT_LATENT_STEPS else self.latent_steps

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["latent_steps"] = list(self.effective_latent_steps())
        out["families"] = list(self.families)
        return out
