"""The registry of named claims (C1–C9 of DESIGN.md), of the checks that support them, and the
record every check reports.

Each claim is stated once, here, and this module is the index: every part (proofs, modelcheck,
realstate) *registers* each of its checks under a claim with an expectation before it runs it,
the way ``proofs/catalog.py`` lists obligations and stateright keeps ``Property::always`` /
``sometimes`` apart from the search.  A check can only report through its registration, so a
row always says which statement it is evidence for and how its outcome was decided."""

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
        Claim("C9", "the composed render depends only on the set: for every permutation, merge tree and single "
              "re-delivery, on one platform (torch build, threads, dtype), composition gives one digest, one "
              "list of selected positions, and one greedy answer with one first-step logits digest",
              ("realstate",)),
    )
}


def claim(claim_id: str) -> Claim:
    """Look a claim up by id; an unknown id is a programming error, reported with the known ids."""
    try:
        return CLAIMS[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim {claim_id!r}; known: {', '.join(CLAIMS)}") from None


class Expect(str, Enum):
    """How a check's findings decide its outcome.

    ALWAYS: a law; holds when no case checked violates it (and at least one case was checked).
    SOMETIMES: an existential fact; holds when at least one witness was found (C4's BagMerge).
    REFUTED: a negative fact for a prover; holds when the statement is refuted with a witness."""

    ALWAYS = "always"
    SOMETIMES = "sometimes"
    REFUTED = "refuted"


class Outcome(str, Enum):
    """What a check found.  Only HOLDS counts as success; NOT_BUILT and UNKNOWN never do.

    NOT_APPLICABLE: the check cannot say anything at these settings (a row about two fragments'
    orders with one agent); it is neither evidence nor a failure, and a run whose every row is
    not applicable checked nothing (``exit_code_for``)."""

    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"
    NOT_BUILT = "not built"
    NOT_APPLICABLE = "not applicable"


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


@dataclass(frozen=True)
class Check:
    """One registered check: the claim it supports, the part that runs it, its expectation."""

    claim: str
    part: str
    name: str
    expect: Expect
    statement: str

    def __post_init__(self) -> None:
        claim(self.claim)
        if self.part not in claim(self.claim).checked_by:
            raise ValueError(f"check {self.name!r}: part {self.part!r} is not listed as checking "
                             f"{self.claim} (checked_by = {claim(self.claim).checked_by})")

    def result(self, outcome: Outcome, figure: str, seconds: float = 0.0, **details: Any) -> ClaimResult:
        """A row decided by the caller (provers, which report proved/refuted/unknown themselves)."""
        return ClaimResult(self.claim, self.part, self.name, outcome, figure, seconds,
                           {"expect": self.expect.value, **details})

    def tally(self, checked: int, found: int, unit: str, seconds: float = 0.0, figure: str | None = None,
              **details: Any) -> ClaimResult:
        """A row decided by counts: ``found`` violations (ALWAYS) or witnesses (SOMETIMES) among
        ``checked`` cases.  Nothing checked is never a pass: it is UNKNOWN."""
        if self.expect is Expect.REFUTED:
            raise ValueError(f"{self.name}: a REFUTED check is decided by its prover, not by counts")
        counts = {"checked": checked, "unit": unit,
                  ("violations" if self.expect is Expect.ALWAYS else "witnesses"): found}
        if checked == 0:
            return self.result(Outcome.UNKNOWN, figure or f"nothing checked (0 {unit})", seconds,
                               **counts, **details)
        if self.expect is Expect.ALWAYS:
            outcome = Outcome.FAILS if found else Outcome.HOLDS
            default = f"{found:,} violation(s) / {checked:,} {unit}"
        else:
            outcome = Outcome.HOLDS if found else Outcome.FAILS
            default = (f"{found:,} witness(es) / {checked:,} {unit}" if found
                       else f"no witness in {checked:,} {unit}")
        return self.result(outcome, figure or default, seconds, **counts, **details)

    def not_applicable(self, why: str, seconds: float = 0.0, **details: Any) -> ClaimResult:
        """A row that cannot be decided at these settings, saying why (never a pass)."""
        return self.result(Outcome.NOT_APPLICABLE, f"not applicable: {why}", seconds, **details)

    def holds_if(self, ok: bool, figure: str, seconds: float = 0.0, **details: Any) -> ClaimResult:
        """A row decided by one boolean the caller computed from a single comparison."""
        if self.expect is not Expect.ALWAYS:
            raise ValueError(f"{self.name}: holds_if is for ALWAYS checks")
        return self.result(Outcome.HOLDS if ok else Outcome.FAILS, figure, seconds, **details)


_REGISTRY: dict[tuple[str, str], Check] = {}


def register(claim_id: str, parts: str | tuple[str, ...], name: str, expect: Expect, statement: str) -> Check:
    """Declare a check once, with every part that runs it (``_declare`` says what is refused);
    returns the first part's ``Check`` (``declared_in`` gives the others)."""
    checks = _declare(claim_id, (parts,) if isinstance(parts, str) else tuple(parts), name, Expect(expect), statement)
    for check in checks:
        _REGISTRY[(check.part, name)] = check
    return checks[0]


def registered(part: str | None = None, claim_id: str | None = None) -> list[Check]:
    """Registered checks, optionally filtered, in claim order, then in the order the claim lists
    its parts, then by name: an order that does not depend on which module registered first."""
    order = list(CLAIMS)
    chosen = [c for c in _REGISTRY.values()
              if (part is None or c.part == part) and (claim_id is None or c.claim == claim_id)]
    return sorted(chosen, key=lambda c: (order.index(c.claim), CLAIMS[c.claim].checked_by.index(c.part), c.name))


def select_checks(part: str, only: str | None) -> list[Check]:
    """The checks of ``part`` that ``--only`` selects: all, a claim id, or one check name."""
    mine = registered(part)
    if only is None:
        return mine
    chosen = [c for c in mine if only in (c.claim, c.name)]
    if not chosen:
        from spec.errors import InputError

        claims = ", ".join(sorted({c.claim for c in mine}))
        raise InputError(f"--only {only!r} selects nothing in {part}; give a claim id ({claims}) "
                         f"or a check name: {', '.join(c.name for c in mine)}")
    return chosen


def exit_code_for(results: Iterable[ClaimResult]) -> int:
    """0 when every result holds; 1 when any fails or is unknown; 2 when a part is not built or
    nothing was checked.  Not-applicable rows count for nothing either way: a run of nothing but
    them checked nothing (2), never a pass.

    A failure outranks "not built": a broken claim must not hide behind a missing part."""
    outcomes = {r.outcome for r in results} - {Outcome.NOT_APPLICABLE}
    if not outcomes:
        return 2
    if outcomes & {Outcome.FAILS, Outcome.UNKNOWN}:
        return 1
    if Outcome.NOT_BUILT in outcomes:
        return 2
    return 0


# --- checks shared by several parts -----------------------------------------------------------

_PARTS: dict[tuple[str, str], tuple[str, ...]] = {}   # (part, name) -> every part of its declaration


def _declare(claim_id: str, parts: tuple[str, ...], name: str, expect: Expect, statement: str) -> list[Check]:
    """One ``Check`` per part of a declaration.  Parts that share a check run the same search and
    report it in the same words, so they declare it once, together: re-registering the same
    declaration is harmless; the same (part, name) with other words or other parts, or the same
    words declared separately for another part, is refused."""
    if not parts or len(set(parts)) != len(parts):
        raise ValueError(f"check {name!r}: parts must be one or more distinct part names, not {parts!r}")
    checks = [Check(claim_id, part, name, expect, statement) for part in parts]
    for check in checks:
        known = _REGISTRY.get((check.part, name))
        if known is not None and (known != check or _PARTS[(check.part, name)] != parts):
            raise ValueError(f"check {check.part}/{name} is registered twice with different declarations")
        twin = next((c for c in _REGISTRY.values() if c.part not in parts and c.name == name
                     and (c.claim, c.expect, c.statement) == (claim_id, expect, statement)), None)
        if twin is not None:
            raise ValueError(f"check {name!r} is declared separately for {twin.part} and {check.part} in the "
                             "same words: declare it once with both parts")
    for check in checks:
        _PARTS[(check.part, name)] = parts
    return checks


def declared_in(check: Check, part: str) -> Check:
    """The same declaration as another of its parts reports it (``register`` with several parts)."""
    if part not in _PARTS.get((check.part, check.name), ()):
        raise ValueError(f"check {check.name!r} is not declared for part {part!r}")
    return _REGISTRY[(part, check.name)]
