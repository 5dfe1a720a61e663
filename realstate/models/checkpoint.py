"""A local transformers checkpoint directory (``config.json``), loaded offline and never trusted:
no code from it runs and nothing is downloaded."""

from __future__ import annotations

import os
from pathlib import Path

from realstate.kernel.dtypes import storage_dtype
from realstate.models.gguf import load_gguf
from realstate.models.loaded import LoadedModel, checked_architecture, finish_loading, resolve_device, weights_digest
from spec import ArgumentError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


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
    arch = checked_architecture(config, "checkpoint", str(path))
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
    return finish_loading(model, arch, dtype, target, weights_digest(model), "checkpoint", str(target_path.resolve()),
                          f"checkpoint ({config.num_hidden_layers} layers)", tokenizer)
