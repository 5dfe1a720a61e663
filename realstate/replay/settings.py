"""Replay settings: plain data, importable without torch so the command line starts fast.

Library errors name the argument as the library spells it (``agents=7 must be 1..6``);
``spec.ArgumentError`` carries the name so the command line can re-spell it as its flag."""

from __future__ import annotations

from dataclasses import dataclass

from realstate.composition.settings import ComposeSettings
from realstate.models.geometry import DEFAULT_GEOMETRY, GEOMETRIES, MODELS
from spec import ArgumentError
from spec.arguments import integer, integers, seed

MAX_POSITION = 2**31 - 1  # a position a model could take; each run checks its own model's maximum
MAX_OFFSET = 2**63 - 1  # fidelity offsets past the model's positions are clamped to its last one


@dataclass(frozen=True)
class ReplaySettings:
    geometry: str = DEFAULT_GEOMETRY
    checkpoint: str | None = None  # a transformers checkpoint directory, or GGUF weights (file or directory)
    agents: int = 5
    latent_steps: int = 2
    device: str = "cpu"
    dtype: str = "bfloat16"
    seed: int = 0
    decode_tokens: int = 4
    fidelity_offsets: tuple[int, ...] = (1, 100, 1000, 10000, 30000)
    prompts: tuple[str, ...] | None = None
    iteration: str = "arrival"  # FragmentSet iteration order while checking (spec.fragment_set)
    model: str | None = None  # a named real-weight model (realstate.models.geometry.MODELS)
    question: str | None = None  # the final agent's prompt in words (models with a tokenizer)
    agent_starts: tuple[int, ...] = ()  # the position agent i encodes from (0 where none is given)
    compose: bool = False  # also run C9's checks (realstate.replay.composition)
    composition: ComposeSettings = ComposeSettings()  # r, s and c of those checks (base: always 0)

    def validate(self) -> None:
        """Every field in range, before any model loads (positions are checked against the model
        once it is loaded: ``realstate.replay.positions``)."""
        integer("agents", self.agents, 1, 6, " (every permutation is rendered)")
        integer("latent_steps", self.latent_steps, 0, MAX_POSITION)
        integer("decode_tokens", self.decode_tokens, 1, MAX_POSITION)
        seed("seed", self.seed)
        if not self.fidelity_offsets:
            raise ArgumentError("fidelity_offsets", self.fidelity_offsets, "must name at least one offset")
        integers("fidelity_offsets", self.fidelity_offsets, 0, MAX_OFFSET)
        if len(self.agent_starts) > self.agents:
            raise ArgumentError("agent_starts", self.agent_starts, f"must be at most {self.agents} positions, "
                                "each >= 0")
        integers("agent_starts", self.agent_starts, 0, MAX_POSITION)
        if self.device not in ("cpu", "cuda"):
            raise ArgumentError("device", self.device, "must be cpu or cuda")
        if self.checkpoint is not None and self.model is not None:
            raise ArgumentError("model", self.model, "and checkpoint are two weight sources; give one")
        if self.model is not None and self.model not in MODELS:
            raise ArgumentError("model", self.model, f"is not a known model; known: {', '.join(MODELS)}")
        if self.prompts is not None and len(self.prompts) < self.agents:
            raise ArgumentError("prompts", self.prompts, f"gives {len(self.prompts)} prompts for {self.agents} agents; "
                                "give one per agent")
        if self.geometry not in GEOMETRIES:
            raise ArgumentError("geometry", self.geometry, f"is not a known geometry; known: {', '.join(GEOMETRIES)}")
        if not isinstance(self.compose, bool):
            raise ArgumentError("compose", self.compose, "must be True or False")
        self.composition.validate()
        if self.composition.base:
            raise ArgumentError("base", self.composition.base, "must be 0: the replay composes at base 0")
        if self.iteration not in ("id", "arrival", "shuffled"):
            raise ArgumentError("iteration", self.iteration, "must be id, arrival or shuffled")
