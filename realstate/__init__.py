"""The concrete side of canonmerge: fragments from real transformers Qwen3 caches, content ids,
exact order keys, RoPE re-encoding, the three renders, and the bit-for-bit replay of the claims.

Library use (see README): build ``Fragment``s from your agents' caches with
``Fragment.from_cache``, merge replicas with ``fragment_set(...).merge(...)`` and render with
``canonical_merge`` to get a ``DynamicCache`` ready for decoding; ``compose`` repairs that render
so the fragments attend to each other (``realstate.composition``).

Names are imported on first use (PEP 562), so ``import realstate.replay.settings`` stays torch-free
and the command line starts quickly."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Fingerprint": "realstate.kernel.fingerprint",
    "Fragment": "realstate.kernel.fragment",
    "fragment_set": "realstate.kernel.fragment",
    "from_model": "realstate.models.loaded",  # the model object compose re-runs tokens on
    "Rendered": "realstate.kernel.render",
    "bag_merge": "realstate.kernel.render",
    "canonical_merge": "realstate.kernel.render",
    "canonical_render": "realstate.kernel.render",
    "canonical_renders": "realstate.kernel.render",
    "compose": "realstate.composition.compose",
    "naive_concat": "realstate.kernel.render",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'realstate' has no attribute {name!r}")
