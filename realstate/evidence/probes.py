"""Engines that drive every path a render can take, so that ``canonmerge realstate`` (whose inputs
are tiny) renders through the paths real-size renders take and compares each with the oracle.

The bytes are the same on every path; these presets only choose which one a small render takes.
They are evidence about the kernel, not part of it: nothing in the library imports them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from realstate.kernel.engine import CANONICAL, Engine, chunked, unfused
from realstate.kernel.rope import reencode_into


def chunk_probes(tokens: int, head_dim: int) -> tuple[int, int]:
    """Two chunk sizes that drive both branches of the chunked path on a render of ``tokens``
    positions (with more than two (layer, head) blocks): a chunk of two positions (every run
    longer than that is split by rows) and one of two whole blocks (runs are batched by blocks)."""
    return 2 * head_dim, 2 * tokens * head_dim


# the threads large_path_engines splits the compiled kernel's work between
KERNEL_PROBE_THREADS = 3


def large_path_engines(engine: Engine, tokens: int, head_dim: int) -> list[Engine]:
    """Engines that drive every path a large render can take on a render of ``tokens`` positions:
    the compiled kernel (one chunk size: it does not chunk) on the process's thread count, as a
    real-size render runs, and split between three threads (uneven shares, whatever the thread
    count the process runs with, even one), and both branches of the torch chunked path
    (``chunk_probes``)."""
    probes = chunk_probes(tokens, head_dim)
    kernel = chunked(engine, probes[0])
    return [kernel, replace(kernel, name=f"{kernel.name}/threads={KERNEL_PROBE_THREADS}",
                            threads=KERNEL_PROBE_THREADS),
            *(chunked(unfused(engine), n) for n in probes)]


def _reencode_each(dest: torch.Tensor, keys: torch.Tensor, delta: int, inv_freq: Sequence[float]) -> None:
    """``reencode_into`` under another name: it has no batched twin, so a render with it takes
    render_layout's per-fragment path (the one engines with their own re-encoding take)."""
    reencode_into(dest, keys, delta, inv_freq)


# the correct mechanics through render_layout's per-fragment path: verify renders with it too
PER_FRAGMENT = replace(CANONICAL, name="canonical/per-fragment", reencode=_reencode_each)
