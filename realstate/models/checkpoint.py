"""A local transformers checkpoint directory (``config.json`` + safetensors), loaded offline and
never trusted: no code from it runs, no pickle is opened, nothing is downloaded, nothing asks a
question on stdin, and the weights are exactly the checkpoint's or it is refused.

In order, before transformers is asked to load anything: the directory's names (code and
pickles refused), ``config.json`` (regular, bounded, JSON, every size an integer in bounds, no
key that runs code — ``realstate.models.config_check``), the architecture, the tensors the
safetensors headers list against the ones the architecture needs (``expected_tensors``), the
tokenizer files.  Then transformers loads from a private view holding only those files, with
``trust_remote_code=False``, its output captured (``loader_output``), and its own loading report
checked for missing or unexpected keys."""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path
from typing import Any

from realstate.kernel.dtypes import storage_dtype
from realstate.models.architectures import Architecture
from realstate.models.bounded_files import MIB, Source, directory_names, printable, read_json_object
from realstate.models.checkpoint_files import checkpoint_view, refuse_code_and_pickles, tokenizer_files
from realstate.models.config_check import check_config_dict, check_config_object
from realstate.models.expected_tensors import (
    Held,
    check_layer_count,
    check_loading_info,
    compare,
    needed_tensors,
    skeleton,
)
from realstate.models.gguf import load_gguf
from realstate.models.loaded import LoadedModel, checked_architecture, finish_loading, resolve_device, weights_digest
from realstate.models.loader_output import captured_output, escaped
from realstate.models.safetensors_header import FLOAT_DTYPES, INDEX, WeightFiles, read_weight_files
from spec import ArgumentError

MAX_CONFIG = 4 * MIB


def load_checkpoint(path: str | Path, dtype: str = "bfloat16", device: str = "cpu") -> LoadedModel:
    """Local weights, loaded with no network access: a transformers checkpoint directory (with
    ``config.json`` and safetensors weights), a ``.gguf`` file, or a directory holding exactly one
    ``.gguf`` file.  Anything refused is an ``ArgumentError`` naming ``checkpoint``.

    Args:
        path: the directory or file.
        dtype: storage dtype the weights are loaded (GGUF: dequantized) to.
        device: ``cpu`` or ``cuda``.

    Example:
        >>> lm = load_checkpoint("my-qwen3-dir")  # doctest: +SKIP
        >>> lm.source, lm.fingerprint.weights[:7]  # doctest: +SKIP
        ('checkpoint', 'sha256:')
    """
    source = Source("checkpoint", str(path))
    target_path = Path(path)
    try:
        mode = os.stat(target_path).st_mode
    except OSError:
        mode = 0
    if stat.S_ISREG(mode):
        if target_path.suffix.lower() != ".gguf":
            raise source.refuse("is a file but not a .gguf file")
        return load_gguf(target_path, dtype, device)
    if not stat.S_ISDIR(mode):
        raise source.refuse("is not a directory or a .gguf file")
    names = directory_names(target_path, source)
    refuse_code_and_pickles(names, source)
    if "config.json" not in names:
        ggufs = [n for n in names if n.lower().endswith(".gguf")]
        if len(ggufs) == 1:
            return load_gguf(target_path / ggufs[0], dtype, device)
        if ggufs:
            raise source.refuse(f"holds several GGUF files ({', '.join(map(printable, ggufs))}); name one")
        raise source.refuse("has no config.json and no .gguf file (neither a transformers checkpoint nor GGUF weights)")
    raw = read_json_object(target_path / "config.json", MAX_CONFIG, source)
    check_config_dict(raw, source)
    config = _config_object(raw, source)
    arch = checked_architecture(config, "checkpoint", str(path))
    if arch.model_type != config.model_type:
        raise source.refuse(f"config.json: architectures names {arch.class_name} (model_type {arch.model_type!r}) "
                            f"but model_type is {config.model_type!r}")
    check_config_object(config, source)
    torch_dtype = storage_dtype(dtype)
    target = resolve_device(device)
    weights = read_weight_files(target_path, names, source)
    _check_tensors(weights, arch, config, source)
    tokenizer_names = tokenizer_files(target_path, names, source)
    written: dict[str, Any] = {"config.json": raw}
    if weights.index is not None:
        written[INDEX] = {"metadata": {}, "weight_map": {n: t.file for n, t in weights.tensors.items()}}
    with checkpoint_view(target_path, weights.files + tokenizer_names, written) as view, captured_output() as said:
        model = _load_model(arch, view, config, torch_dtype, source)
        tokenizer = _load_tokenizer(view, source) if tokenizer_names else None
    return finish_loading(model, arch, dtype, target, weights_digest(model), "checkpoint", str(target_path.resolve()),
                          f"checkpoint ({config.num_hidden_layers} layers)", tokenizer, said.summary())


def _config_object(raw: dict[str, Any], source: Source) -> Any:
    """The transformers config of the validated dict, built by the config class transformers itself
    defines for its ``model_type`` (never ``AutoConfig``, which would follow an ``auto_map``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    try:
        with captured_output():
            return CONFIG_MAPPING[raw["model_type"]].from_dict(copy.deepcopy(raw))
    except Exception as exc:  # noqa: BLE001  transformers' validators (huggingface_hub's among them) refuse it
        if isinstance(exc, ArgumentError):
            raise
        raise source.refuse(f"config.json cannot be read by transformers: {escaped(str(exc))[:400]}") from None


def _check_tensors(weights: WeightFiles, arch: Architecture, config: Any, source: Source) -> None:
    """The tensors on disk are exactly the ones the architecture needs (``expected_tensors``)."""
    check_layer_count(list(weights.tensors), arch.layers, int(config.num_hidden_layers),
                      "config.json: num_hidden_layers", source)
    held = {name: Held(info.shape, info.dtype, info.dtype in FLOAT_DTYPES, name)
            for name, info in weights.tensors.items()}
    compare(needed_tensors(skeleton(arch, config)), held, bool(config.tie_word_embeddings), source)


def _load_model(arch: Architecture, view: Path, config: Any, torch_dtype: Any, source: Source) -> Any:
    try:
        model, info = arch.model_class().from_pretrained(
            view, config=config, dtype=torch_dtype, local_files_only=True, use_safetensors=True,
            trust_remote_code=False, output_loading_info=True)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise source.refuse(f"cannot be loaded: {escaped(str(exc))[:400]}") from None
    check_loading_info(info, source)
    return model


def _load_tokenizer(view: Path, source: Source) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(view, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise source.refuse(f"has tokenizer files that are unreadable: {escaped(str(exc))[:400]}") from None

