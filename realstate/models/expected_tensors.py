"""The tensors an architecture needs, compared with the tensors a checkpoint holds, before any
weight is loaded: the weights must be exactly the checkpoint's, since transformers initialises a
parameter the checkpoint lacks at random (and the weights digest is part of every fragment's
identity).

What is needed is read from the model itself, built as a skeleton on the ``meta`` device (no
memory) from the validated config: every parameter and persistent buffer, its shape and whether
it is a float, less the ones tied to another (``lm_head.weight`` when ``tie_word_embeddings``).
Before the skeleton is built, the layer indices in the tensor names are compared with
``num_hidden_layers``, so a config claiming more layers than the files hold is refused without
building them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from realstate.models.architectures import Architecture
from realstate.models.bounded_files import Source, listed, shown_name


@dataclass(frozen=True)
class Needed:
    shape: tuple[int, ...]
    floating: bool


@dataclass(frozen=True)
class Held:
    shape: tuple[int, ...]
    dtype: str  # as the file names it ("BF16", "Q4_1")
    floating: bool  # a float (or quantized float) storage type
    shown: str  # the name in the file (a GGUF name differs from the model's)


def skeleton(arch: Architecture, config: Any) -> Any:
    """The model on the ``meta`` device: every parameter's name and shape, no memory."""
    import torch

    with torch.device("meta"):
        return arch.model_class()._from_config(config)


def needed_tensors(model: Any) -> dict[str, Needed]:
    """Name -> Needed of every tensor the model loads from a checkpoint (tied copies left out)."""
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    return {name: Needed(tuple(t.shape), t.is_floating_point()) for name, t in model.state_dict().items()
            if name not in tied}


def check_layer_count(names: list[str], prefix: str, layers: int, said_by: str, source: Source) -> None:
    """The layer indices in the tensor names (``<prefix>.<i>.``) are exactly 0..layers-1, as
    ``said_by`` (the config field that says it) says; ``layers`` is bounded already."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.")
    found = {int(m.group(1)) for name in names if (m := pattern.match(name))}
    missing = [i for i in range(layers) if i not in found]
    extra = sorted(i for i in found if i >= layers)
    problems = []
    if missing:
        problems.append(f"the weights hold no tensor of layer(s) {_indices(missing)} ({prefix}.{missing[0]}.* "
                        "is missing)")
    if extra:
        problems.append(f"the weights hold tensors of layer(s) {_indices(extra)} ({prefix}.{extra[0]}.* is "
                        "unexpected)")
    if problems:
        raise source.refuse(f"{said_by}={layers}, but {'; '.join(problems)}")


def _indices(values: list[int], most: int = 5) -> str:
    return ", ".join(map(str, values[:most])) + (f" and {len(values) - most} more" if len(values) > most else "")


def compare(needed: dict[str, Needed], held: dict[str, Held], tied: bool, source: Source) -> None:
    """Refuse, naming the tensors, unless ``held`` is exactly ``needed``: same names, same shapes,
    float where float is needed."""
    missing = sorted(name for name in needed if name not in held)
    unexpected = sorted(held[name].shown for name in held if name not in needed)
    misshaped = sorted(f"{shown_name(held[n].shown)} is {list(held[n].shape)}, the architecture needs "
                       f"{list(needed[n].shape)}" for n in held if n in needed and held[n].shape != needed[n].shape)
    wrong_kind = sorted(f"{shown_name(held[n].shown)} is stored as {held[n].dtype}, "
                        f"{'a float' if needed[n].floating else 'an integer'} is needed"
                        for n in held if n in needed and held[n].floating != needed[n].floating)
    problems = []
    if missing:
        hint = " (tie_word_embeddings is false, so the LM head is not the embeddings)" if "lm_head.weight" in missing \
            else ""
        problems.append(f"missing tensor(s) {listed(missing)}{hint}: transformers would initialise them at random")
    if unexpected:
        hint = (" (tie_word_embeddings is true: the model would use the embeddings and drop this)"
                if "lm_head.weight" in unexpected and tied else "")
        problems.append(f"unexpected tensor(s) {listed(unexpected)}{hint}")
    if misshaped:
        problems.append("mis-shaped: " + "; ".join(misshaped[:5]) + (f"; and {len(misshaped) - 5} more"
                                                                    if len(misshaped) > 5 else ""))
    if wrong_kind:
        problems.append("wrong dtype class: " + "; ".join(wrong_kind[:5]) + (f"; and {len(wrong_kind) - 5} more"
                                                                            if len(wrong_kind) > 5 else ""))
    if problems:
        raise source.refuse("weights do not match the architecture: " + "; ".join(problems))


def check_loading_info(info: dict[str, Any], source: Source) -> None:
    """What transformers itself reports after loading: nothing missing, unexpected or mismatched
    (the comparison above should have refused it already; this is the second lock)."""
    problems = [f"{key.replace('_', ' ')} {listed(sorted(map(str, info[key])))}"
                for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs") if info.get(key)]
    if problems:
        raise source.refuse("transformers reports, after loading: " + "; ".join(problems))
