"""What one soak run does, bounded in count and time; every field is a command-line flag."""

from __future__ import annotations

from dataclasses import dataclass, field

from spec import InputError


@dataclass(frozen=True)
class FragmentShape:
    """The synthetic fragments' geometry: layers x KV heads x head dim, bfloat16, a token range."""

    layers: int = 2
    kv_heads: int = 2
    head_dim: int = 32
    min_tokens: int = 8
    max_tokens: int = 64

FAULT_KINDS = ("kill-put", "kill-merge", "restart-endpoint", "torn-upload", "duplicate-merge", "reorder-merges")
FAULT_HELP = {
    "kill-put": "SIGKILL of an agent process while it puts a fragment (the put is then retried by a fresh process)",
    "kill-merge": "SIGKILL of an anti-entropy process while it merges (the merge is abandoned)",
    "restart-endpoint": "SIGKILL and restart of the S3 endpoint's front while a transfer is in flight",
    "torn-upload": "an upload cut half-way: a raw S3 PUT that sends half its body then closes, or the "
                   "half-written temporary a killed writer leaves in a directory store",
    "duplicate-merge": "a scheduled merge delivered a second time, later",
    "reorder-merges": "a window of the merge schedule reversed",
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
        def bounded(name: str, lo: int, hi: int) -> None:
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise InputError(f"--{name.replace('_', '-')} must be between {lo} and {hi}, got {value}")

        bounded("replicas", 2, 16)
        bounded("s3_replicas", 0, self.replicas)
        bounded("agents", 1, 16)
        bounded("fragments", 1, 200)
        bounded("gossipers", 1, 8)
        bounded("merges", 0, 2000)
        bounded("faults", 0, 500)
        unknown = [k for k in self.kinds if k not in FAULT_KINDS]
        if unknown:
            raise InputError(f"--fault {unknown[0]!r} is not one of {', '.join(FAULT_KINDS)}")
        if self.s3_replicas == 0 and self.kinds == ("restart-endpoint",) and self.faults:
            raise InputError("restart-endpoint faults need at least one S3 replica (--s3-replicas)")
        if not 1.0 <= self.max_seconds <= 3600.0:
            raise InputError(f"--max-seconds must be between 1 and 3600, got {self.max_seconds}")
        if not 1.0 <= self.op_timeout_s <= 600.0:
            raise InputError(f"--op-timeout must be between 1 and 600, got {self.op_timeout_s}")
        s = self.shape
        if not (1 <= s.layers <= 64 and 1 <= s.kv_heads <= 64 and 2 <= s.head_dim <= 512 and s.head_dim % 2 == 0
                and 1 <= s.min_tokens <= s.max_tokens <= 4096):
            raise InputError(f"fragment shape out of range: {s}")

    def active_kinds(self) -> tuple[str, ...]:
        """The fault kinds that can happen in this configuration."""
        return tuple(k for k in self.kinds if not (k == "restart-endpoint" and self.s3_replicas == 0)
                     and not (k in ("duplicate-merge", "reorder-merges", "kill-merge") and self.merges == 0))
