"""The fragment format forbids NaN and +-inf (a real model cache never holds them, and a
non-finite key would pin the order key to a sentinel a hostile peer could steer the canonical
order with): the one check, shared by the file's readers and writers."""

from __future__ import annotations

import numpy
import torch

from realstate.kernel.dtypes import BITS_VIEW
from spec import FormatError

# a float is NaN or +-inf exactly when its exponent bits are all ones
_EXPONENT_MASK = {torch.bfloat16: 0x7F80, torch.float16: 0x7C00, torch.float32: 0x7F800000}


def require_finite(tensor: torch.Tensor, source: str, name: str) -> None:
    """Every value finite, checked on the bit patterns with one single-threaded numpy pass (a
    torch reduction spawns its thread pool, which costs more than the check on a busy machine)."""
    mask = _EXPONENT_MASK[tensor.dtype]
    bits = tensor.detach().cpu().contiguous().view(BITS_VIEW[tensor.dtype]).numpy()
    if not numpy.any((bits & mask) == mask):
        return
    finite = torch.isfinite(tensor)
    index = (~finite).nonzero()[0].tolist()
    value = tensor[tuple(index)].item()
    kind = "NaN" if value != value else ("+inf" if value > 0 else "-inf")
    axes = "[layer, head, token, dim]" if tensor.dim() == 4 else "[token, dim]"
    raise FormatError(source, name, f"{kind} at {axes} = {index}; the format forbids non-finite values")
