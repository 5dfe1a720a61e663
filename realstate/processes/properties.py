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
SOAK_CANARY = register(
    "C2", PART, "soak canary: a lost acknowledged write is reported", ALWAYS,
    "canonmerge soak: inside every run, one put acknowledged into a canary replica and recorded in "
    "its books is deleted behind the store's back; the same judge must report it lost, or the judge "
    "is blind and the run fails")
SOAK_CRASHES = register(
    "C2", PART, "soak: a directory store crashed at every step of a put and a clean keeps its invariants",
    ALWAYS,
    "canonmerge soak: a put and a clean run in a child process SIGKILLed at each of their steps in "
    "turn leave no torn file under a final name, remove no live writer's temporary, and recover "
    "completely; a store writing under the final name and a clean with age 0 must be reported")
SOAK_FAULTS = register(
    "C7", PART, "soak: every planned fault kind landed mid-operation", ALWAYS,
    "canonmerge soak: each fault kind the nemesis plans lands at least once while an operation is in "
    "flight (a kill at a step of a write, a restart while a transfer is open, a duplicated or "
    "reordered merge actually run); a run whose faults all missed tested nothing")
REPLICATE_CANARY = register(
    "C7", PART, "replicate canary: a rank that renders differently is reported", ALWAYS,
    "canonmerge replicate: inside every run, one rank renders its state at another base offset in a "
    "second round; the same comparison of ranks must report the disagreement, or it is blind and the "
    "run fails")
REPLICATE_ORDERS = register(
    "C7", PART, "replicate: the ranks deliver in different orders", ALWAYS,
    "canonmerge replicate: the ranks' delivery orders, as each rank reports them, are pairwise "
    "different wherever there are enough orders (min(ranks, fragments!)); ranks that all deliver in "
    "one order test nothing about order independence")
