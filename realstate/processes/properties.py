"""The checks ``canonmerge soak`` and ``canonmerge replicate`` run, registered under their claims
(part "realstate": real processes on the concrete implementation)."""

from __future__ import annotations

from spec import Expect, register

PART = "realstate"
ALWAYS, SOMETIMES = Expect.ALWAYS, Expect.SOMETIMES

SOAK_CONVERGE = register(
    "C7", PART, "soak: real processes converge under faults", ALWAYS,
    "canonmerge soak: agent and anti-entropy processes under a nemesis (SIGKILL mid-put and "
    "mid-merge, endpoint restarts, torn uploads, duplicated and reordered merges) end with every "
    "replica holding one set and rendering one SHA-256")
SOAK_DURABLE = register(
    "C2", PART, "soak: every acknowledged put is present on every replica", ALWAYS,
    "canonmerge soak: nothing acknowledged is lost and nothing unpublished appears")
REPLICATE = register(
    "C7", PART, "distributed replay: ranks render one digest", ALWAYS,
    "canonmerge replicate: torch.distributed ranks each deliver the same fragments in their own "
    "order with re-deliveries and drops, merge, render, and all-gather one digest (equal to the "
    "launcher's own render)")
