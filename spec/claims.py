"""The registry of named claims (C1–C8 of DESIGN.md) and the record every check reports.

Each claim is stated once, here.  Proofs, checkers and replays report a ``ClaimResult`` naming
the claim it supports, so a report can always say which statement a row is evidence for."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    checked_by: tuple[str, ...]


CLAIMS: dict[str, Claim] = {
    c.id: c
    for c in (
        Claim("C1", "merge is commutative, associative and idempotent (hash-injectivity as premise)",
              ("proofs", "modelcheck")),
        Claim("C2", "merge is inflationary and absorbing: a <= a|b, and b <= a implies a|b = a "
              "(re-delivery is a no-op)", ("proofs", "modelcheck", "realstate")),
        Claim("C3", "the render depends only on the set: every permutation, merge tree and "
              "re-delivery pattern renders byte-identically", ("proofs", "modelcheck", "realstate")),
        Claim("C4", "BagMerge is not commutative (a concrete witness) and re-delivery changes its bytes",
              ("proofs", "modelcheck", "realstate")),
        Claim("C5", "the order key is a strict total order on distinct fragments, NaN and +-0 "
              "included; the naive float < is not", ("proofs", "realstate")),
        Claim("C6", "for N = 2 the canonical render equals BagMerge in one of the two orders, "
              "byte for byte", ("proofs", "modelcheck", "realstate")),
        Claim("C7", "replicas that delivered the same set of fragments render byte-identical caches "
              "under duplicated, reordered and dropped-then-resent messages", ("proofs", "modelcheck", "realstate")),
        Claim("C8", "a re-encoded fragment matches direct encoding at the target offset within storage "
              "rounding, and greedy decoding from the canonical render is identical for every "
              "input permutation", ("realstate",)),
    )
}


def claim(claim_id: str) -> Claim:
    """Look a claim up by id; an unknown id is a programming error, reported with the known ids."""
    try:
        return CLAIMS[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim {claim_id!r}; known: {', '.join(CLAIMS)}") from None


class Outcome(str, Enum):
    """What a check found.  Only HOLDS counts as success; NOT_BUILT and UNKNOWN never do."""

    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"
    NOT_BUILT = "not built"


@dataclass
class ClaimResult:
    """One row of evidence: which claim, which part produced it, what it found."""

    claim: str
    part: str
    check: str
    outcome: Outcome
    figure: str = ""
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        claim(self.claim)
        self.outcome = Outcome(self.outcome)

    def to_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "part": self.part,
            "check": self.check,
            "outcome": self.outcome.value,
            "figure": self.figure,
            "seconds": round(self.seconds, 4),
            "details": self.details,
        }


def exit_code_for(results: Iterable[ClaimResult]) -> int:
    """0 when every result holds; 1 when any fails or is unknown; 2 when a part is not built.

    A failure outranks "not built": a broken claim must not hide behind a missing part."""
    outcomes = {r.outcome for r in results}
    if not outcomes:
        return 2
    if outcomes & {Outcome.FAILS, Outcome.UNKNOWN}:
        return 1
    if Outcome.NOT_BUILT in outcomes:
        return 2
    return 0
