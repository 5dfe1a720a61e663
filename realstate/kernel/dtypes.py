"""Storage dtypes a fragment may use, by name, with their integer twin for bit-level views."""

from __future__ import annotations

import torch

from spec import InputError

STORAGE_DTYPES: dict[str, torch.dtype] = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
}
# same-width integer dtype, to look at (and hash, and compare) raw bits
BITS_VIEW: dict[torch.dtype, torch.dtype] = {
    torch.bfloat16: torch.int16,
    torch.float16: torch.int16,
    torch.float32: torch.int32,
}
DTYPE_CODE: dict[str, int] = {"bfloat16": 1, "float16": 2, "float32": 3}
# the one NaN a re-encoded key (δ ≠ 0) may hold, as bits of BITS_VIEW's integers: positive, quiet
# bit only.  IEEE-754 leaves a NaN result's sign and payload to the hardware (and torch's vector and
# scalar casts differ), so every write path replaces its NaNs with these to keep renders identical
CANONICAL_NAN_BITS: dict[torch.dtype, int] = {
    torch.bfloat16: 0x7FC0,
    torch.float16: 0x7E00,
    torch.float32: 0x7FC00000,
}


def dtype_name(dtype: torch.dtype) -> str:
    for name, value in STORAGE_DTYPES.items():
        if value == dtype:
            return name
    raise InputError(f"unsupported storage dtype {dtype}; supported: {', '.join(STORAGE_DTYPES)}")


def storage_dtype(name: str) -> torch.dtype:
    try:
        return STORAGE_DTYPES[name]
    except KeyError:
        raise InputError(f"unknown dtype {name!r}; supported: {', '.join(STORAGE_DTYPES)}") from None


def raw_bits(t: torch.Tensor) -> torch.Tensor:
    """``t`` viewed as same-width integers, so comparisons see every bit (-0, NaN payloads)."""
    return t.view(BITS_VIEW[t.dtype])


def canonical_nan_(t: torch.Tensor) -> None:
    """Overwrite, in place, every NaN of ``t`` (any strides, any device) with its dtype's
    canonical quiet NaN.  Written as integer bits, so no float conversion (whose NaN results
    differ between torch's vector and scalar paths and between devices) is involved, and the
    non-NaN elements are not touched."""
    raw_bits(t).masked_fill_(t.isnan(), CANONICAL_NAN_BITS[t.dtype])
