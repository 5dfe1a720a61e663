"""Replay settings: plain data, importable without torch so the command line starts fast."""

from __future__ import annotations

from dataclasses import dataclass

from spec import InputError

DEFAULT_GEOMETRY = "qwen3-tiny"
GEOMETRY_NAMES = ("qwen3-tiny", "qwen3-1.7b", "qwen3-4b")


@dataclass(frozen=True)
class ReplaySettings:
    geometry: str = DEFAULT_GEOMETRY
    checkpoint: str | None = None
    agents: int = 5
    latent_steps: int = 2
    device: str = "cpu"
    dtype: str = "bfloat16"
    seed: int = 0
    decode_tokens: int = 4
    fidelity_offsets: tuple[int, ...] = (1, 100, 1000, 10000, 30000)
    prompts: tuple[str, ...] | None = None
    iteration: str = "arrival"  # FragmentSet iteration order while checking (spec.fragment_set)

    def validate(self) -> None:
        if not 1 <= self.agents <= 6:
            raise InputError(f"--agents must be 1..6 (every permutation is rendered), got {self.agents}")
        if self.latent_steps < 0:
            raise InputError(f"--latent-steps must be >= 0, got {self.latent_steps}")
        if self.decode_tokens < 1:
            raise InputError(f"--decode-tokens must be >= 1, got {self.decode_tokens}")
        if any(o < 0 for o in self.fidelity_offsets):
            raise InputError("fidelity offsets must be >= 0")
        if self.iteration not in ("id", "arrival", "shuffled"):
            raise InputError(f"--iteration must be id, arrival or shuffled, got {self.iteration!r}")
