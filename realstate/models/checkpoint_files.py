"""Which files of a checkpoint directory are refused, which are read, and the private view of the
accepted ones that transformers is given instead of the directory itself.

Refused by name, before anything is opened: Python code (``.py``, ``.pyc``: a checkpoint's code
never runs) and pickles (``pytorch_model.bin``, any ``.bin``, ``.pt``, ``.pth``, ``.ckpt``,
``.pkl``, ``.pickle`` and a ``.bin`` index: unpickling runs code).  Tokenizer files are checked
to be regular and bounded, and ``tokenizer_config.json`` is read: no ``auto_map``, no class
transformers does not define, no key naming a file elsewhere.

transformers looks for more files in a directory than it is asked to load (adapter configs,
generation configs, custom generate code, extra weight files), so it never sees the directory:
``checkpoint_view`` is a fresh private directory holding the config as validated (written by
realstate), links to the validated weight files, and links to the validated tokenizer files —
nothing else exists there for it to find."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from realstate.models.bounded_files import MIB, Source, open_regular, read_json_object

CODE_SUFFIXES = (".py", ".pyc")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
PICKLE_INDEXES = (".bin.index.json",)
# the files AutoTokenizer reads from a directory
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "vocab.txt", "merges.txt", "tokenizer.model", "spiece.model", "chat_template.jinja",
                   "chat_template.json")
# any of these means the checkpoint has a tokenizer (AutoTokenizer invents an empty one otherwise)
TOKENIZER_MARKERS = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
MAX_TOKENIZER_FILE = 256 * MIB
MAX_TOKENIZER_CONFIG = 16 * MIB


def refuse_code_and_pickles(names: list[str], source: Source) -> None:
    code = [n for n in names if n.lower().endswith(CODE_SUFFIXES)]
    if code:
        raise source.refuse(f"holds Python code ({', '.join(map(repr, code[:5]))}): a checkpoint is data and its "
                            "code is never run; remove the file(s)")
    pickles = [n for n in names if n.lower().endswith(PICKLE_SUFFIXES + PICKLE_INDEXES)]
    if pickles:
        raise source.refuse(f"holds pickle-based weights ({', '.join(map(repr, pickles[:5]))}): unpickling runs code, "
                            "so they are never loaded; convert them to safetensors and remove them")


def tokenizer_files(directory: Path, names: list[str], source: Source) -> tuple[str, ...]:
    """The tokenizer files present, each checked (module doc); () when there is no tokenizer."""
    if not any(n in names for n in TOKENIZER_MARKERS):
        return ()
    present = tuple(n for n in TOKENIZER_FILES if n in names)
    for name in present:
        with open_regular(directory / name, MAX_TOKENIZER_FILE, source):
            pass
    if "tokenizer_config.json" in present:
        _check_tokenizer_config(read_json_object(directory / "tokenizer_config.json", MAX_TOKENIZER_CONFIG, source),
                                source)
    return present


def _check_tokenizer_config(config: dict[str, Any], source: Source) -> None:
    where = "tokenizer_config.json"
    if "auto_map" in config:
        raise source.refuse(f"{where}: auto_map names Python code in the checkpoint to run (never run); refused")
    files = sorted(k for k, v in config.items() if (k.endswith("_file") or k.endswith("_files")) and v is not None)
    if files:
        raise source.refuse(f"{where}: {', '.join(files)} name(s) files; tokenizer files are found by name in the "
                            "checkpoint directory only")
    name = config.get("tokenizer_class")
    if name is None:
        return
    if not isinstance(name, str) or not name.isidentifier():
        raise source.refuse(f"{where}: tokenizer_class={name!r} is not a class name")
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    found = tokenizer_class_from_name(name)
    if found is None or not getattr(found, "__module__", "").startswith("transformers."):
        raise source.refuse(f"{where}: tokenizer_class={name!r} is not a tokenizer transformers defines (a custom "
                            "tokenizer needs the checkpoint's own code, which is never run)")


@contextmanager
def checkpoint_view(directory: Path, linked: Iterable[str], written: dict[str, Any]) -> Iterator[Path]:
    """A private directory with ``written`` (name -> JSON document) and links to ``linked``."""
    view = Path(tempfile.mkdtemp(prefix="canonmerge-checkpoint-"))
    try:
        origin = directory.resolve()
        for name in linked:
            os.symlink(origin / name, view / name)
        for name, document in written.items():
            (view / name).write_text(json.dumps(document), encoding="utf-8")
        yield view
    finally:
        shutil.rmtree(view, ignore_errors=True)
