"""The RoPE decoder family realstate supports, as data: one row per transformers class.

A row says where realstate finds, inside a model of that class, what it reads: the decoder
layers, the attention module, the submodule whose output is the keys just *before* RoPE (the
agents capture them for the fidelity check), the rotary module (whose ``inv_freq`` is what the
model really multiplies positions by) and the module holding the model's own
``apply_rotary_pos_emb``.  Nothing else in realstate names a model class.

What fits: attention that applies ``rotate_half`` RoPE over the full head_dim, with frequencies
fixed per model, on every layer, with full (not sliding-window) attention.  Everything else is
refused: by ``REFUSALS`` (config fields, checked before any weight is read), by the class table,
and after loading by ``verified_rotary`` (the rotary module's own cos/sin must be exactly
cos/sin of position x the recorded frequencies, at positions up to the model's maximum) — so a
config that slips past the table still cannot yield a fingerprint that disagrees with the model.

Torch is imported only inside the functions that need it (``realstate.replay.settings`` and
``realstate.models.geometry`` import this module and must stay light)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from spec import InputError

# rope types whose frequencies transformers computes once, from the config, and never changes at
# run time (modeling_rope_utils.dynamic_rope_update only touches 'dynamic' and 'longrope').  yarn
# also multiplies cos/sin by a constant attention_factor: keys are cached already scaled, and a
# rotation commutes with a scalar, so re-encoding them stays exact up to storage rounding.
STATIC_ROPE_TYPES = ("default", "linear", "llama3", "yarn")
SUPPORTED = "rotate_half RoPE over the full head_dim, frequencies fixed per model, full attention on every layer"


@dataclass(frozen=True)
class Architecture:
    class_name: str  # the transformers model class, e.g. "LlamaForCausalLM"
    model_type: str  # its config.model_type
    config_class: str
    modeling_module: str  # holds the class and the model's own apply_rotary_pos_emb
    pre_rope_keys: str  # attention submodule whose output is the keys right before RoPE
    layers: str = "model.layers"  # dotted paths from the model object ...
    attention: str = "self_attn"  # ... from one decoder layer ...
    rotary: str = "model.rotary_emb"  # ... and from the model object again
    decoder: str = "model"

    def module(self) -> ModuleType:
        return importlib.import_module(self.modeling_module)

    def model_class(self) -> Any:
        return getattr(self.module(), self.class_name)

    def make_config(self, **fields: Any) -> Any:
        configuration = importlib.import_module(self.modeling_module.replace(".modeling_", ".configuration_"))
        return getattr(configuration, self.config_class)(**fields)

    def apply_rotary(self) -> Callable[..., tuple[Any, Any]]:
        """The model's own ``apply_rotary_pos_emb(q, k, cos, sin)``."""
        return self.module().apply_rotary_pos_emb


ARCHITECTURES: dict[str, Architecture] = {
    a.class_name: a
    for a in (
        # Qwen3 normalizes each key head (k_norm) before RoPE: that output is [b, n, H, D]
        Architecture("Qwen3ForCausalLM", "qwen3", "Qwen3Config", "transformers.models.qwen3.modeling_qwen3",
                     pre_rope_keys="k_norm"),
        # the others rotate k_proj's output (its bias included, for Qwen2): [b, n, H*D]
        Architecture("Qwen2ForCausalLM", "qwen2", "Qwen2Config", "transformers.models.qwen2.modeling_qwen2",
                     pre_rope_keys="k_proj"),
        Architecture("LlamaForCausalLM", "llama", "LlamaConfig", "transformers.models.llama.modeling_llama",
                     pre_rope_keys="k_proj"),
        Architecture("MistralForCausalLM", "mistral", "MistralConfig",
                     "transformers.models.mistral.modeling_mistral", pre_rope_keys="k_proj"),
    )
}
_BY_MODEL_TYPE = {a.model_type: a for a in ARCHITECTURES.values()}


def resolve(obj: Any, dotted: str) -> Any:
    """``resolve(model, "model.rotary_emb")`` is ``model.model.rotary_emb``."""
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj


# --- what is refused, by config field -------------------------------------------------------

_MISSING = object()


def _set(value: Any) -> bool:
    return value is not _MISSING and value is not None


def _partial(value: Any) -> bool:
    return _set(value) and float(value) != 1.0


def _rope_type_why(value: Any) -> str:
    if "dynamic" in str(value):
        return "frequencies are recomputed from the sequence length (dynamic NTK)"
    if value == "longrope":
        return "the frequency set is chosen by the sequence length (longrope)"
    return f"not a fixed-frequency RoPE realstate knows (fixed ones: {', '.join(STATIC_ROPE_TYPES)})"


@dataclass(frozen=True)
class Refusal:
    field: str  # a config attribute, or "rope_parameters.<key>" for an entry of the rope parameters
    refuses: Callable[[Any], bool]  # the field's value (_MISSING when absent) -> refused?
    why: Callable[[Any], str]


REFUSALS: tuple[Refusal, ...] = (
    Refusal("partial_rotary_factor", _partial, lambda v: "RoPE covers only part of head_dim (partial rotary)"),
    Refusal("rope_parameters.partial_rotary_factor", _partial,
            lambda v: "RoPE covers only part of head_dim (partial rotary)"),
    Refusal("rotary_pct", _partial, lambda v: "RoPE covers only part of head_dim (partial rotary)"),
    Refusal("rotary_dim", _set, lambda v: "GPT-J-style rotation of interleaved channel pairs over the first "
                                          "rotary_dim channels, not rotate_half over head_dim"),
    Refusal("rope_interleave", lambda v: _set(v) and bool(v),
            lambda v: "interleaved channel pairs, not rotate_half halves"),
    Refusal("rope_parameters.rope_type", lambda v: _set(v) and v not in STATIC_ROPE_TYPES, _rope_type_why),
    Refusal("rope_parameters.mrope_section", _set, lambda v: "multimodal RoPE (mrope): positions are not 1-D"),
    Refusal("rope_parameters", lambda v: isinstance(v, dict) and any(isinstance(x, dict) for x in v.values()),
            lambda v: "a different RoPE per layer type"),
    Refusal("use_sliding_window", lambda v: _set(v) and bool(v), lambda v: "sliding-window attention"),
    Refusal("sliding_window", _set, lambda v: "sliding-window attention (tokens beyond the window are dropped)"),
    Refusal("layer_types", lambda v: _set(v) and any(t != "full_attention" for t in v),
            lambda v: f"mixed attention layers ({', '.join(sorted(set(v)))})"),
    Refusal("alibi", lambda v: _set(v) and bool(v), lambda v: "ALiBi position biases, not RoPE"),
    Refusal("position_embedding_type", lambda v: _set(v) and v not in ("rope", "rotary"),
            lambda v: f"positions by {v!r}, not RoPE"),
)


def config_field(config: Any, field: str) -> Any:
    head, _, key = field.partition(".")
    value = getattr(config, head, _MISSING)
    if key:
        value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
    return value


def architecture_of(config: Any, class_name: str | None = None) -> Architecture:
    """The table row for a model of ``class_name`` (or the class its config names) with this
    config; ``InputError`` naming every config field that does not fit, or the class."""
    problems = [f"{r.field}={config_field(config, r.field)!r}: {r.why(config_field(config, r.field))}"
                for r in REFUSALS if r.refuses(config_field(config, r.field))]
    if problems:
        raise InputError(f"{'; '.join(problems)}. realstate supports {SUPPORTED}")
    names = [class_name] if class_name else list(getattr(config, "architectures", None) or [])
    for name in names:
        if name in ARCHITECTURES:
            return ARCHITECTURES[name]
    model_type = getattr(config, "model_type", None)
    if not names and model_type in _BY_MODEL_TYPE:
        return _BY_MODEL_TYPE[model_type]
    shown = class_name if class_name else f"architectures={names!r}"
    raise InputError(f"{shown} (model_type {model_type!r}) is not a supported decoder; supported: "
                     f"{', '.join(ARCHITECTURES)}")


# --- what the loaded model really computes ---------------------------------------------------

@dataclass(frozen=True)
class Rotary:
    inv_freq: tuple[float, ...]  # the rotary buffer widened exactly to float64
    attention_scaling: float  # the constant the model multiplies cos/sin by (1.0 but for yarn)
    rope_type: str

    def label(self, class_name: str) -> str:
        """The fingerprint's architecture string: the class name, plus the rope type and scaling
        when they are not the plain default (so the default's fingerprints never change)."""
        if self.rope_type == "default" and self.attention_scaling == 1.0:
            return class_name
        return f"{class_name} rope={self.rope_type} attention_scaling={self.attention_scaling!r}"


def probe_positions(max_positions: int) -> list[int]:
    """Small positions, every 2^k - 1, and the model's last position."""
    probes = {0, 1, 2, 3, 100, 1000, max_positions - 1}
    probes |= {(1 << k) - 1 for k in range(1, 63) if (1 << k) - 1 < max_positions}
    return sorted(p for p in probes if 0 <= p < max_positions)


def verified_rotary(model: Any, arch: Architecture) -> Rotary:
    """Read the rotary module's frequencies and check that its own forward computes cos/sin
    exactly from them (times ``attention_scaling``) at every probe position up to the model's
    maximum: frequencies that change with position or length are refused here."""
    import torch

    rotary = resolve(model, arch.rotary)
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    where = f"{type(model).__name__} {arch.rotary}"
    buffer = getattr(rotary, "inv_freq", None)
    if not isinstance(buffer, torch.Tensor) or buffer.dim() != 1 or buffer.numel() != head_dim // 2:
        shape = None if not isinstance(buffer, torch.Tensor) else tuple(buffer.shape)
        raise InputError(f"{where}.inv_freq has shape {shape}, want ({head_dim // 2},) = head_dim/2: "
                         f"realstate supports {SUPPORTED}")
    inv_freq = tuple(buffer.detach().to("cpu", torch.float64).tolist())
    scaling = float(getattr(rotary, "attention_scaling", 1.0))
    device = buffer.device
    want = torch.tensor(inv_freq, dtype=torch.float64).to(torch.float32).to(device)
    x = torch.zeros(1, dtype=torch.float32, device=device)
    with torch.no_grad():
        for p in probe_positions(int(config.max_position_embeddings)):
            position = torch.tensor([[p]], device=device)
            cos, sin = rotary(x, position)
            angles = position[..., None].float() * want  # the model's own expression, same shapes
            both = torch.cat((angles, angles), dim=-1)
            if not (torch.equal(cos, both.cos() * scaling) and torch.equal(sin, both.sin() * scaling)):
                raise InputError(f"{where}: its cos/sin at position {p} are not cos/sin(position x inv_freq) of "
                                 f"its inv_freq buffer read before: the frequencies change with position or length; "
                                 f"realstate supports {SUPPORTED}")
    if tuple(rotary.inv_freq.detach().to("cpu", torch.float64).tolist()) != inv_freq:
        raise InputError(f"{where}: computing cos/sin changed inv_freq (frequencies depend on the sequence length)")
    return Rotary(inv_freq, scaling, str(getattr(rotary, "rope_type", "default")))
