"""Loading a Qwen3 model: a published geometry with seeded weights, or a local checkpoint (offline).

Nothing is downloaded.  The report always says which source was used; seeded weights are never
called real.  The fingerprint records the rotary frequencies read from the loaded model and a
SHA-256 of its weights, so fragments from different weights or dtypes can never merge."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import Qwen3ForCausalLM

from realstate.dtypes import BITS_VIEW, storage_dtype
from realstate.fingerprint import Fingerprint
from realstate.fragment import tensor_bytes
from realstate.geometry import geometry
from realstate.settings import DEFAULT_GEOMETRY
from spec import InputError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


@dataclass
class LoadedModel:
    model: Qwen3ForCausalLM
    fingerprint: Fingerprint
    source: str  # "seeded" or "checkpoint"
    source_detail: str  # geometry and seed, or the checkpoint path
    geometry: str
    dtype: str
    device: torch.device
    tokenizer: Any | None = None

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    def describe(self) -> dict[str, Any]:
        return {
            "geometry": self.geometry,
            "weights_source": self.source,
            "weights_detail": self.source_detail,
            "weights_digest": self.fingerprint.weights,
            "dtype": self.dtype,
            "device": str(self.device),
            "layers": self.fingerprint.layers,
            "kv_heads": self.fingerprint.kv_heads,
            "head_dim": self.fingerprint.head_dim,
            "inv_freq_dtype": str(self.model.model.rotary_emb.inv_freq.dtype).removeprefix("torch."),
            "tokenizer": self.tokenizer is not None,
        }


def resolve_device(name: str) -> torch.device:
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA GPU is available to torch on this machine")
        return torch.device("cuda")
    raise InputError(f"unknown device {name!r}; use cpu or cuda")


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


def model_inv_freq(model: Qwen3ForCausalLM) -> tuple[float, ...]:
    """The rotary frequencies the model's forward really multiplies positions by (widened exactly)."""
    rotary = model.model.rotary_emb
    if getattr(rotary, "rope_type", "default") != "default":
        raise InputError(f"rope type {rotary.rope_type!r} is not supported; only 'default' is")
    return tuple(rotary.inv_freq.detach().to("cpu", torch.float64).tolist())


def fingerprint_of(model: Qwen3ForCausalLM, dtype: str, weights: str) -> Fingerprint:
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rope = getattr(config, "rope_parameters", None) or {}
    return Fingerprint(
        architecture=type(model).__name__,
        layers=int(config.num_hidden_layers),
        kv_heads=int(config.num_key_value_heads),
        head_dim=int(head_dim),
        dtype=dtype,
        inv_freq=model_inv_freq(model),
        rope_theta=float(rope.get("rope_theta", getattr(config, "rope_theta", 0.0)) or 0.0),
        max_positions=int(config.max_position_embeddings),
        weights=weights,
    )


def load_seeded(geometry_name: str = DEFAULT_GEOMETRY, dtype: str = "bfloat16", device: str = "cpu",
                seed: int = 0) -> LoadedModel:
    """A published (or the tiny) geometry with weights drawn from ``torch.manual_seed(seed)``."""
    geo = geometry(geometry_name)
    torch_dtype = storage_dtype(dtype)
    target = resolve_device(device)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM._from_config(geo.config(), dtype=torch_dtype)
    model.eval().to(target)
    weights = weights_digest(model)
    return LoadedModel(model, fingerprint_of(model, dtype, weights), "seeded",
                       f"geometry {geo.name}, torch.manual_seed({seed}), transformers default init",
                       geo.name, dtype, target)


def load_checkpoint(path: str | Path, dtype: str = "bfloat16", device: str = "cpu") -> LoadedModel:
    """A local Qwen3 checkpoint directory, loaded with no network access."""
    directory = Path(path)
    if not directory.is_dir():
        raise InputError(f"--checkpoint {directory}: not a directory")
    if not (directory / "config.json").is_file():
        raise InputError(f"--checkpoint {directory}: no config.json (not a transformers checkpoint)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(directory, local_files_only=True)
    if config.model_type != "qwen3":
        raise InputError(f"--checkpoint {directory}: model_type {config.model_type!r}, want 'qwen3'")
    rope_type = (getattr(config, "rope_parameters", None) or {}).get("rope_type", "default")
    if rope_type != "default":
        raise InputError(f"--checkpoint {directory}: rope type {rope_type!r} is not supported; only 'default'")
    torch_dtype = storage_dtype(dtype)
    target = resolve_device(device)
    model = Qwen3ForCausalLM.from_pretrained(directory, dtype=torch_dtype, local_files_only=True)
    model.eval().to(target)
    tokenizer = None
    # AutoTokenizer invents an empty tokenizer from the config when no files exist: look first
    if any((directory / name).is_file() for name in TOKENIZER_FILES):
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
        except (OSError, ValueError, TypeError) as exc:
            raise InputError(f"--checkpoint {directory}: tokenizer files present but unreadable: {exc}") from None
    weights = weights_digest(model)
    return LoadedModel(model, fingerprint_of(model, dtype, weights), "checkpoint", str(directory.resolve()),
                       f"checkpoint ({config.num_hidden_layers} layers)", dtype, target, tokenizer)


def from_model(model: Qwen3ForCausalLM, source: str = "user", detail: str = "a model object passed in",
               tokenizer: Any | None = None) -> LoadedModel:
    """Wrap a Qwen3 model you already hold (library use).  Its storage dtype, device and rotary
    frequencies are read from the model itself, e.g. after ``model.to(torch.bfloat16)``."""
    from realstate.dtypes import dtype_name

    dtype = dtype_name(next(model.parameters()).dtype)
    device = next(model.parameters()).device
    model.eval()
    weights = weights_digest(model)
    return LoadedModel(model, fingerprint_of(model, dtype, weights), source, detail,
                       f"user model ({model.config.num_hidden_layers} layers)", dtype, device, tokenizer)
