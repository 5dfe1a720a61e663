"""A loaded model as every command sees it: the model object, its fingerprint (architecture, the
rotary frequencies it really uses, checked against its own rotary forward, and what the weights
are), where the weights came from, dtype, device and tokenizer.  Seeded weights are never called
real: the source is part of every report."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from realstate.kernel.dtypes import BITS_VIEW
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import tensor_bytes
from realstate.models.architectures import Architecture, architecture_of, resolve, verified_rotary
from spec import ArgumentError, InputError

_HASH_CHUNK = 1 << 22

@dataclass
class LoadedModel:
    model: Any  # a transformers *ForCausalLM of a supported architecture
    fingerprint: Fingerprint
    source: str  # "seeded", "checkpoint", "package" or what from_model was told
    source_detail: str  # geometry and seed, the checkpoint path, or the package and what the weights are
    geometry: str
    dtype: str
    device: torch.device
    tokenizer: Any | None = None
    arch: Architecture | None = field(default=None)
    load_messages: tuple[str, ...] = ()  # what third-party code printed while loading, escaped and summarised

    def __post_init__(self) -> None:
        if self.arch is None:
            self.arch = architecture_of(self.model.config, type(self.model).__name__)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    @property
    def decoder(self) -> Any:
        """The model without its LM head (what agents run to get hidden states)."""
        return resolve(self.model, self.architecture.decoder)

    @property
    def layers(self) -> Any:
        return resolve(self.model, self.architecture.layers)

    @property
    def rotary(self) -> Any:
        return resolve(self.model, self.architecture.rotary)

    @property
    def architecture(self) -> Architecture:
        assert self.arch is not None  # set in __post_init__
        return self.arch

    @torch.no_grad()
    def rope(self, pre_rope_keys: torch.Tensor, start: int) -> torch.Tensor:
        """What the model itself caches for keys ``[..., H, n, D]`` taken just before RoPE, at
        positions ``start..``: its own rotary module and its own ``apply_rotary_pos_emb``."""
        n = pre_rope_keys.shape[-2]
        positions = torch.arange(start, start + n, device=pre_rope_keys.device).unsqueeze(0)
        cos, sin = self.rotary(pre_rope_keys, positions)
        _, keys = self.architecture.apply_rotary()(pre_rope_keys, pre_rope_keys, cos, sin)
        return keys

    def describe(self) -> dict[str, Any]:
        return {
            "architecture": self.fingerprint.architecture,
            "geometry": self.geometry,
            "weights_source": self.source,
            "weights_detail": self.source_detail,
            "weights_digest": self.fingerprint.weights,
            "dtype": self.dtype,
            "device": str(self.device),
            "layers": self.fingerprint.layers,
            "kv_heads": self.fingerprint.kv_heads,
            "head_dim": self.fingerprint.head_dim,
            "inv_freq_dtype": str(self.rotary.inv_freq.dtype).removeprefix("torch."),
            "tokenizer": self.tokenizer is not None,
            "load_messages": list(self.load_messages),
        }


def resolve_device(name: str) -> torch.device:
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ArgumentError("device", name, "asked for, but no CUDA GPU is available to torch on this machine")
        return torch.device("cuda")
    raise ArgumentError("device", name, "is not a device; use cpu or cuda")


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 over every parameter and persistent buffer, in name order, with dtype and shape."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(f"{name}|{str(tensor.dtype).removeprefix('torch.')}|{tuple(tensor.shape)}\n".encode())
        if tensor.dtype in BITS_VIEW:
            h.update(tensor_bytes(tensor))
        else:
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return "sha256:" + h.hexdigest()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read once in 4 MiB chunks."""
    h = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                h.update(chunk)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return h.hexdigest()


def model_inv_freq(model: Any) -> tuple[float, ...]:
    """The rotary frequencies the model's forward really multiplies positions by (widened exactly),
    after checking its rotary module computes cos/sin from exactly these at every probed position."""
    return verified_rotary(model, architecture_of(model.config, type(model).__name__)).inv_freq


def fingerprint_of(model: Any, dtype: str, weights: str) -> Fingerprint:
    config = model.config
    arch = architecture_of(config, type(model).__name__)
    rotary = verified_rotary(model, arch)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rope = getattr(config, "rope_parameters", None) or {}
    return Fingerprint(
        architecture=rotary.label(arch.class_name),
        layers=int(config.num_hidden_layers),
        kv_heads=int(config.num_key_value_heads),
        head_dim=int(head_dim),
        dtype=dtype,
        inv_freq=rotary.inv_freq,
        rope_theta=float(rope.get("rope_theta", getattr(config, "rope_theta", 0.0)) or 0.0),
        max_positions=int(config.max_position_embeddings),
        weights=weights,
    )


def finish_loading(model: Any, arch: Architecture, dtype: str, device: torch.device, weights: str, source: str,
                   detail: str, name: str, tokenizer: Any | None = None,
                   load_messages: tuple[str, ...] = ()) -> LoadedModel:
    model.eval().to(device)
    return LoadedModel(model, fingerprint_of(model, dtype, weights), source, detail, name, dtype, device,
                       tokenizer, arch, load_messages)


def from_model(model: Any, source: str = "user", detail: str = "a model object passed in",
               tokenizer: Any | None = None) -> LoadedModel:
    """Wrap a model you already hold (library use).  Its storage dtype, device and rotary
    frequencies are read from the model itself, e.g. after ``model.to(torch.bfloat16)``.

    Args:
        model: a ``Qwen3ForCausalLM``, ``Qwen2ForCausalLM``, ``LlamaForCausalLM`` or ``MistralForCausalLM``.
        source: what the report calls the weights' source.
        detail: one line on where the weights came from.
        tokenizer: its tokenizer, if text prompts are wanted.

    Example:
        >>> from transformers import LlamaConfig, LlamaForCausalLM
        >>> model = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        ...                                      num_attention_heads=2, num_key_value_heads=1, vocab_size=100))
        >>> from_model(model).fingerprint.architecture
        'LlamaForCausalLM'
    """
    from realstate.kernel.dtypes import dtype_name

    arch = architecture_of(model.config, type(model).__name__)
    dtype = dtype_name(next(model.parameters()).dtype)
    device = next(model.parameters()).device
    return finish_loading(model, arch, dtype, device, weights_digest(model), source, detail,
                          f"user model ({model.config.num_hidden_layers} layers)", tokenizer)


def checked_architecture(config: Any, argument: str, shown: str) -> Architecture:
    try:
        return architecture_of(config)
    except InputError as exc:
        raise ArgumentError(argument, shown, f"does not fit: {exc}") from None
