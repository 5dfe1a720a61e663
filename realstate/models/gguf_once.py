"""Parse a GGUF file once per load, not three times.

transformers reads a GGUF file three times while loading one model: for the config, for the
tokenizer and for the tensors, each time building a ``gguf.GGUFReader`` (which decodes every
metadata string, ~50k tokenizer entries) and re-parsing the metadata; the tensor pass then
rebuilds gguf's tensor-name table once per submodule (~400 times for a 30-layer model).  On
two cores that was most of SmolLM2's load time.  ``parsed_once`` confines the fix to one
``with`` block: one reader per file, one metadata parse shared by the config and tokenizer
passes (handed out as deep copies, so neither sees the other's edits), and the name table
memoized by its arguments (and its per-tensor progress bar silenced: canonmerge reports its
own progress).  Everything transformers computes from them is unchanged; the
patched attributes are restored on exit, also on error."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def parsed_once() -> Iterator[None]:
    """Within the block, transformers' GGUF loading shares one parse per file (module doc)."""
    import gguf
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    saved = (gguf.GGUFReader, gguf.get_tensor_name_map, gguf_utils.load_gguf_checkpoint, gguf_utils.tqdm)
    gguf.GGUFReader = _one_reader_per_file(saved[0])
    gguf.get_tensor_name_map = functools.cache(saved[1])
    gguf_utils.load_gguf_checkpoint = _metadata_parsed_once(saved[2])
    gguf_utils.tqdm = _no_bar
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map, gguf_utils.load_gguf_checkpoint, gguf_utils.tqdm = saved


def _no_bar(iterable: Any, *args: Any, **kwargs: Any) -> Any:
    return iterable


def _one_reader_per_file(reader_class: Callable[..., Any]) -> Callable[..., Any]:
    readers: dict[tuple[str, str], Any] = {}

    def reader(path: str | Path, mode: str = "r") -> Any:
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]
    return reader


def _metadata_parsed_once(load: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    parsed: dict[str, dict[str, Any]] = {}

    def load_checkpoint(path: str | Path, return_tensors: bool = False, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if return_tensors or args or kwargs:
            return load(path, return_tensors, *args, **kwargs)
        key = str(Path(path).resolve())
        if key not in parsed:
            parsed[key] = load(path, False)
        return copy.deepcopy(parsed[key])
    return load_checkpoint
