"""Models of the supported RoPE decoder family: seeded geometries, local checkpoints and GGUF
weights (offline, validated before anything is loaded), named packages; the agents that build
caches from them and the final agent's greedy continuation.

The loaders are imported on first use (PEP 562), so ``import realstate.models.geometry`` stays
torch-free for the command line."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LoadedModel": "realstate.models.loaded",
    "from_model": "realstate.models.loaded",
    "load_seeded": "realstate.models.seeded",
    "load_checkpoint": "realstate.models.checkpoint",
    "load_gguf": "realstate.models.gguf",
    "load_named": "realstate.models.gguf",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'realstate.models' has no attribute {name!r}")
