"""A geometry with seeded weights (``torch.manual_seed``): what every command runs when no
checkpoint or named model is given, always labelled as seeded."""

from __future__ import annotations

import torch

from realstate.kernel.dtypes import storage_dtype
from realstate.models.architectures import architecture_of
from realstate.models.geometry import DEFAULT_GEOMETRY, geometry
from realstate.models.loaded import LoadedModel, finish_loading, resolve_device, weights_digest


def load_seeded(geometry_name: str = DEFAULT_GEOMETRY, dtype: str = "bfloat16", device: str = "cpu",
                seed: int = 0) -> LoadedModel:
    """A geometry with weights drawn from ``torch.manual_seed(seed)`` (never called real weights).

    Args:
        geometry_name: a name in ``realstate.models.geometry.GEOMETRIES`` (``qwen3-tiny``, ``llama-tiny``, ...).
        dtype: storage dtype of weights and caches: ``bfloat16``, ``float16`` or ``float32``.
        device: ``cpu`` or ``cuda``.
        seed: the torch seed the weights are drawn with.

    Example:
        >>> lm = load_seeded("llama-tiny")
        >>> lm.fingerprint.architecture, lm.source
        ('LlamaForCausalLM', 'seeded')
    """
    geo = geometry(geometry_name)
    config = geo.config()
    arch = architecture_of(config, geo.architecture)
    torch_dtype = storage_dtype(dtype)
    target = resolve_device(device)
    torch.manual_seed(seed)
    model = arch.model_class()._from_config(config, dtype=torch_dtype)
    return finish_loading(model, arch, dtype, target, weights_digest(model), "seeded",
                          f"geometry {geo.name}, torch.manual_seed({seed}), transformers default init", geo.name)
