"""What one soak run does, bounded in count and time; every field is a command-line flag."""

from __future__ import annotations

from dataclasses import dataclass, field

from spec import ArgumentError
from spec.arguments import integer, number, seed


@dataclass(frozen=True)
class FragmentShape:
    """The synthetic fragments' geometry: layers x KV heads x head dim, bfloat16, a token range."""

    layers: int = 2
    kv_heads: int = 2
    head_dim: int = 32
    min_tokens: int = 8
    max_tokens: int = 64

FAULT_KINDS = ("kill-put", "kill-merge", "restart-endpoint", "torn-upload", "duplicate-merge", "reorder-merges",
               "hostile-neighbour")
FAULT_HELP = {
    "kill-put": "SIGKILL of an agent process while it puts a fragment (the put is then retried by a fresh process)",
    "kill-merge": "SIGKILL of an anti-entropy process while it merges (the merge is abandoned)",
    "restart-endpoint": "SIGKILL and restart of the S3 endpoint's front while a transfer is in flight",
    "torn-upload": "an upload cut half-way: a raw S3 PUT that sends half its body then closes, or the "
                   "half-written temporary a killed writer leaves in a directory store",
    "duplicate-merge": "a scheduled merge delivered a second time, later",
    "reorder-merges": "a window of the merge schedule reversed",
    "hostile-neighbour": "a neighbour's entries planted into a directory replica while an operation on it is in "
                         "flight: a link named like a fragment pointing outside, a file, a directory linking to a "
                         "store outside, a store made inside the replica",
}


@dataclass(frozen=True)
class SoakSettings:
    seed: int = 0
    replicas: int = 4  # replica stores in all
    s3_replicas: int = 2  # of which S3 prefixes on the loopback endpoint (the rest: directories)
    agents: int = 3  # agent processes, agent i publishing into replica i mod replicas
    fragments: int = 8  # fragments each agent publishes
    gossipers: int = 2  # anti-entropy processes
    merges: int = 40  # merges scheduled during the fault phase (before duplicates)
    faults: int = 24  # nemesis faults, spread over ``kinds``
    kinds: tuple[str, ...] = FAULT_KINDS
    max_seconds: float = 150.0  # the whole run, start-up to verdict
    op_timeout_s: float = 60.0  # one put or merge
    shape: FragmentShape = field(default_factory=FragmentShape)

    def validate(self) -> None:
        """Every field in range (``spec.ArgumentError`` naming the field; the command line maps it
        to its flag), before any process starts."""
        seed("seed", self.seed)
        integer("replicas", self.replicas, 2, 16)
        integer("s3_replicas", self.s3_replicas, 0, self.replicas, " (at most the replicas)")
        integer("agents", self.agents, 1, 16)
        integer("fragments", self.fragments, 1, 200)
        integer("gossipers", self.gossipers, 1, 8)
        integer("merges", self.merges, 0, 2000)
        integer("faults", self.faults, 0, 500)
        unknown = [k for k in self.kinds if k not in FAULT_KINDS]
        if unknown:
            raise ArgumentError("kinds", unknown[0], f"is not one of {', '.join(FAULT_KINDS)}")
        if self.s3_replicas == 0 and self.kinds == ("restart-endpoint",) and self.faults:
            raise ArgumentError("kinds", "restart-endpoint", "needs at least one S3 replica (s3_replicas)")
        if self.s3_replicas == self.replicas and self.kinds == ("hostile-neighbour",) and self.faults:
            raise ArgumentError("kinds", "hostile-neighbour", "needs at least one directory replica (s3_replicas "
                                                              "below replicas)")
        number("max_seconds", self.max_seconds, 1.0, 3600.0)
        number("op_timeout_s", self.op_timeout_s, 1.0, 600.0)
        shape = self.shape
        integer("shape.layers", shape.layers, 1, 64)
        integer("shape.kv_heads", shape.kv_heads, 1, 64)
        integer("shape.head_dim", shape.head_dim, 2, 512)
        if shape.head_dim % 2:
            raise ArgumentError("shape.head_dim", shape.head_dim, "must be even (RoPE rotates pairs)")
        integer("shape.min_tokens", shape.min_tokens, 1, 4096)
        integer("shape.max_tokens", shape.max_tokens, shape.min_tokens, 4096, " (at least the minimum)")

    def active_kinds(self) -> tuple[str, ...]:
        """The fault kinds that can happen in this configuration."""
        return tuple(k for k in self.kinds if not (k == "restart-endpoint" and self.s3_replicas == 0)
                     and not (k == "hostile-neighbour" and self.s3_replicas == self.replicas)
                     and not (k in ("duplicate-merge", "reorder-merges", "kill-merge") and self.merges == 0))
