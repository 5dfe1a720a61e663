"""What a checkpoint's configuration may say, checked before anything is allocated or imported
for it: every size an integer within bounds, the sizes consistent with each other, dtype and
RoPE names from a list, and no key that makes transformers run code, load other files or
quantize.

The bounds are generous for real models (the largest public decoders have ~130 layers, 128
heads, hidden size 16–25k, vocabularies of 256k and contexts of 10M tokens) and small enough
that a config claiming 10^7 layers is refused in microseconds, from the dict, before transformers
builds anything.  A value is an integer only if it is one: ``true``, ``4.0`` and ``"4"`` are
refused, never converted."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from realstate.models.bounded_files import Source

# field -> (least, most) it may be
SIZE_BOUNDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, 1024),
    "num_attention_heads": (1, 1024),
    "num_key_value_heads": (1, 1024),
    "head_dim": (2, 1024),
    "hidden_size": (1, 1 << 17),
    "intermediate_size": (1, 1 << 19),
    "vocab_size": (1, 1 << 22),
    "max_position_embeddings": (1, 1 << 24),
}
NULLABLE = ("head_dim", "num_key_value_heads")  # transformers derives these when they are null
MAX_PROJECTION = 1 << 17  # heads x head_dim (the query projection's width)
DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64")
# every rope type transformers computes frequencies for that realstate knows of: the fixed ones
# load, the others are refused by the architecture table with the reason (dynamic, longrope)
KNOWN_ROPE_TYPES = ("default", "linear", "llama3", "yarn", "dynamic", "longrope")
ROPE_NUMBERS = ("rope_theta", "factor", "attention_factor", "beta_fast", "beta_slow", "low_freq_factor",
                "high_freq_factor", "original_max_position_embeddings")
MAX_ARCHITECTURES = 16

# keys that make transformers do more than build a known architecture from numbers
FORBIDDEN_KEYS: dict[str, str] = {
    "auto_map": "names Python code in the checkpoint to run (custom code is never run)",
    "quantization_config": "asks for a quantizer (only plain float safetensors and GGUF are loaded)",
    "transformers_weights": "names another weights file to load",
    "attn_implementation": "chooses an attention kernel, which may be code from elsewhere",
    "_attn_implementation": "chooses an attention kernel, which may be code from elsewhere",
    "experts_implementation": "chooses an experts kernel, which may be code from elsewhere",
    "kernel_config": "asks for kernels from elsewhere",
    "fusion_config": "patches the model's modules",
    "custom_pipelines": "names pipeline code",
}


def size_problem(shown: str, field: str, value: Any) -> str | None:
    """Why ``value`` is not a valid ``field`` (named ``shown`` in the message), or None."""
    low, high = SIZE_BOUNDS[field]
    if type(value) is not int:  # bool is an int subclass: refused too
        return f"{shown}={value!r} is not an integer (a {type(value).__name__})"
    if not low <= value <= high:
        return f"{shown}={value} is out of bounds ({low}..{high})"
    return None


def check_config_dict(raw: dict[str, Any], source: Source, file: str = "config.json") -> None:
    """The checks that need only the parsed JSON (module doc); a refusal names the field and value."""
    for key, why in FORBIDDEN_KEYS.items():
        if key in raw:
            raise source.refuse(f"{file}: {key} {why}; refused")
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise source.refuse(f"{file}: model_type={model_type!r} is not a model type name")
    problems = [p for field in SIZE_BOUNDS if field in raw and not (field in NULLABLE and raw[field] is None)
                for p in [size_problem(field, field, raw[field])] if p]
    if not problems and type(raw.get("head_dim")) is int and raw["head_dim"] % 2:
        problems.append(f"head_dim={raw['head_dim']} is odd (RoPE rotates pairs of channels)")
    for key in ("dtype", "torch_dtype"):
        if raw.get(key) is not None and raw[key] not in DTYPE_NAMES:
            problems.append(f"{key}={raw[key]!r} is not a dtype name ({', '.join(DTYPE_NAMES)})")
    problems += _rope_problems(raw)
    problems += _layer_type_problems(raw)
    if "tie_word_embeddings" in raw and not isinstance(raw["tie_word_embeddings"], bool):
        problems.append(f"tie_word_embeddings={raw['tie_word_embeddings']!r} is not true or false")
    names = raw.get("architectures")
    if names is not None and (not isinstance(names, list) or len(names) > MAX_ARCHITECTURES
                              or not all(isinstance(n, str) for n in names)):
        problems.append(f"architectures={names!r} is not a short list of class names")
    if problems:
        raise source.refuse(f"{file}: {'; '.join(problems)}")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if model_type not in CONFIG_MAPPING_NAMES:
        raise source.refuse(f"{file}: model_type={model_type!r} is not a model type transformers defines "
                            "(a custom model type needs the checkpoint's own code, which is never run)")


def _rope_problems(raw: Mapping[str, Any]) -> list[str]:
    problems = []
    if "rope_theta" in raw:
        problems += _number_problems("rope_theta", raw["rope_theta"])
    for key in ("rope_scaling", "rope_parameters"):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.append(f"{key}={value!r} is not an object")
            continue
        if any(isinstance(v, dict) for v in value.values()):
            continue  # one RoPE per layer type: the architecture table refuses it, saying so
        for name in ("rope_type", "type"):
            if name in value and value[name] not in KNOWN_ROPE_TYPES:
                problems.append(f"{key}.{name}={value[name]!r} is not a rope type realstate knows "
                                f"({', '.join(KNOWN_ROPE_TYPES)})")
        for name in ROPE_NUMBERS:
            if name in value and value[name] is not None:
                problems += _number_problems(f"{key}.{name}", value[name])
    return problems


def _number_problems(shown: str, value: Any) -> list[str]:
    if type(value) not in (int, float) or not math.isfinite(value) or value <= 0:
        return [f"{shown}={value!r} is not a finite positive number"]
    return []


def _layer_type_problems(raw: Mapping[str, Any]) -> list[str]:
    kinds, layers = raw.get("layer_types"), raw.get("num_hidden_layers")
    if kinds is None:
        return []
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        return [f"layer_types={kinds!r} is not a list of names"]
    if type(layers) is int and len(kinds) != layers:
        return [f"layer_types has {len(kinds)} entries for num_hidden_layers={layers}"]
    return []


def check_config_object(config: Any, source: Source, file: str = "config.json") -> None:
    """The sizes as transformers resolved them (defaults filled in): all present, in bounds and
    consistent with each other."""
    values = {field: getattr(config, field, None) for field in SIZE_BOUNDS}
    if values["head_dim"] is None and type(values["hidden_size"]) is int and type(values["num_attention_heads"]) is int:
        if values["num_attention_heads"] and values["hidden_size"] % values["num_attention_heads"]:
            raise source.refuse(f"{file}: hidden_size={values['hidden_size']} is not a multiple of "
                                f"num_attention_heads={values['num_attention_heads']} (head_dim is not given)")
        values["head_dim"] = values["hidden_size"] // max(values["num_attention_heads"], 1)
    problems = [p for field, value in values.items() for p in [size_problem(field, field, value)] if p]
    if problems:
        raise source.refuse(f"{file}: {'; '.join(problems)}")
    heads, kv_heads, head_dim = values["num_attention_heads"], values["num_key_value_heads"], values["head_dim"]
    if heads % kv_heads:
        problems.append(f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}")
    if head_dim % 2:
        problems.append(f"head_dim={head_dim} is odd (RoPE rotates pairs of channels)")
    if heads * head_dim > MAX_PROJECTION:
        problems.append(f"num_attention_heads x head_dim = {heads} x {head_dim} is more than {MAX_PROJECTION}")
    if problems:
        raise source.refuse(f"{file}: {'; '.join(problems)}")
