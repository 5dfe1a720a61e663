"""The row types (Obligation, CodeCheck), their Result and Verdict, and the solver calls they share.

A proof is ``unsat`` of (premises and not claim) over free constants; nothing else is ever
reported as proved (``proofs.discharge``).  ``unknown`` (a timeout, a resource limit, an
incomplete theory) and any exception while encoding or solving come back as UNKNOWN.

An ``unsat`` is only the start: a proof can be empty or lean on more than it says.  So every
``unsat`` is followed by vacuity checks (``proofs.vacuity``): the claim's antecedents must be
satisfiable together with the premises (else VACUOUS: nothing was proved), and every premise
group must be needed, i.e. dropping it makes the query ``sat`` (else UNNEEDED), unless the
obligation states why it is kept.  A ``sat`` model is re-evaluated (premises true, claim
false) before it is shown as a witness.

``CodeCheck`` is the second kind of row: a bounded-exhaustive run of the real Python code in
``spec`` against the Z3 encoding evaluated on the same concrete values (``proofs.links``);
``CoqTheorem`` the third: a theorem of the Coq development, for every N (``proofs.coqc``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import z3

from spec import claim as lookup_claim


class Result(str, Enum):
    """What the solver established.  Only PROVED and REFUTED are answers; the rest never hold.
    NOT_PROVED is a Coq theorem that coqc did not establish as registered (a compile error, a
    missing theorem, an axiom, a changed statement or premise)."""

    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    VACUOUS = "vacuous"
    UNNEEDED = "unneeded premise"
    NOT_PROVED = "not proved"


Witness = Callable[[z3.ModelRef], dict[str, str]]


def no_witness(model: z3.ModelRef) -> dict[str, str]:
    """Fallback counterexample: every constant of the model, as Z3 prints it."""
    return {str(d.name()): str(model[d]) for d in model.decls() if d.arity() == 0}


@dataclass(frozen=True)
class Premise:
    """One premise of a query: a named group of formulas that is dropped or kept as a whole.

    A universal premise (hash-injectivity, a definition, an induction hypothesis, a proved
    lemma) is instantiated at the query's terms; its instances form one group.  ``kept`` is
    empty when the premise must be needed (the vacuity check drops it and wants ``sat``);
    otherwise it says why the premise stays although the query may be unsat without it (a
    theorem of the solver's theory, given so the solver need not re-derive it)."""

    label: str
    terms: tuple[z3.BoolRef, ...]
    kept: str = ""


def premise(label: str, *terms: z3.BoolRef, kept: str = "") -> Premise:
    return Premise(label, tuple(terms), kept)


@dataclass(frozen=True)
class Goal:
    """One SMT query: the solver gets the premises' formulas and ``Not(claim)``.

    ``hypotheses`` are the antecedents of the claim, read off it (``claim`` is, or contains as
    top-level conjuncts, ``Implies(hypothesis, ...)``), never written a second time by hand;
    the vacuity check wants each satisfiable together with the premises.  ``law`` builds the
    common shape.  ``logic`` is the SMT-LIB logic written into the
    exported file; ``witness`` turns a model of the negation into readable text.  ``prefer``
    only shapes the counterexample (small ids, plain floats); it never takes part in the
    verdict and is not exported."""

    premises: Sequence[Premise]
    claim: z3.BoolRef
    logic: str
    witness: Witness = no_witness
    prefer: list[z3.BoolRef] = field(default_factory=list)

    @property
    def hypotheses(self) -> tuple[z3.BoolRef, ...]:
        return tuple(part.arg(0) for part in self.conjuncts() if z3.is_app_of(part, z3.Z3_OP_IMPLIES))

    def premise_terms(self, without: Premise | None = None) -> list[z3.BoolRef]:
        return [t for p in self.premises if p is not without for t in p.terms]

    def conjuncts(self) -> list[z3.BoolRef]:
        """The claim split at its top-level ``And``: each part is refuted separately (smaller
        queries; the claim holds iff every part does)."""
        return list(self.claim.children()) if z3.is_and(self.claim) else [self.claim]

    def assertions(self) -> list[z3.BoolRef]:
        """The query: the claim's hypotheses, the premises, the negated conclusion (this order
        is what cvc5 handles best on c7_bounded_delivery_6)."""
        *hypotheses, negated = negation(self.claim)
        return [*hypotheses, *self.premise_terms(), negated]


def negation(claim: z3.BoolRef) -> list[z3.BoolRef]:
    """``Not(claim)`` as assertions; ``Not(A1 and ... => B)`` as ``A1``, ..., ``Not(B)``: the
    same query in a flatter shape (with the hypotheses asserted first, ``Goal.assertions``, it
    is the shape cvc5 answers on c7_bounded_delivery_6; one conjunction after the premises
    made it time out at 60 s)."""
    if z3.is_app_of(claim, z3.Z3_OP_IMPLIES):
        antecedent, conclusion = claim.children()
        hypotheses = antecedent.children() if z3.is_and(antecedent) else [antecedent]
        return [*hypotheses, z3.Not(conclusion)]
    return [z3.Not(claim)]


def law(premises: Sequence[Premise], hypotheses: Sequence[z3.BoolRef], conclusion: z3.BoolRef, logic: str,
        witness: Witness = no_witness, prefer: Sequence[z3.BoolRef] = ()) -> Goal:
    """The goal ``premises |- hypotheses => conclusion``, with the hypotheses recorded for the
    vacuity check."""
    if not hypotheses:
        return Goal(premises, conclusion, logic, witness, list(prefer))
    antecedent = z3.And(*hypotheses) if len(hypotheses) > 1 else hypotheses[0]
    return Goal(premises, z3.Implies(antecedent, conclusion), logic, witness, list(prefer))


@dataclass(frozen=True)
class Obligation:
    """A named statement supporting one claim of ``spec.CLAIMS``, with its expected outcome.

    ``expected`` is PROVED for laws and REFUTED for facts that are negative by nature (a
    witness is the evidence).  ``encode`` builds the Goal lazily so that listing obligations
    costs nothing and an encoding error surfaces as this obligation's UNKNOWN."""

    name: str
    claim: str
    statement: str
    expected: Result
    encode: Callable[[], Goal]

    def __post_init__(self) -> None:
        _check_row(self.name, self.claim, self.expected)


@dataclass(frozen=True)
class Finding:
    """What a code check found: how many concrete cases it ran, and the first disagreement."""

    cases: int
    counterexample: dict[str, str] | None = None


class CheckTimeout(Exception):
    """A code check ran past its budget; reported as unknown."""


Deadline = Callable[[], None]


@dataclass(frozen=True)
class CodeCheck:
    """A bounded-exhaustive comparison of ``spec``'s Python with the Z3 encoding.

    ``run(deadline)`` evaluates both on every case of a small domain and returns a Finding;
    it calls ``deadline()`` now and then, which raises CheckTimeout once the budget is spent.
    Agreement on every case is PROVED for the bounded statement; a disagreement is REFUTED
    with the case as witness; an exception (in the code or the encoding) is UNKNOWN."""

    name: str
    claim: str
    statement: str
    expected: Result
    run: Callable[[Deadline], Finding]

    def __post_init__(self) -> None:
        _check_row(self.name, self.claim, self.expected)


@dataclass(frozen=True)
class CoqTheorem:
    """A theorem of the Coq development (``proofs/coq/``), for every N, checked by coqc.

    ``coq`` is its statement as coqc prints it inside the section (up to whitespace).  The row
    is PROVED only when the development compiles, the theorem states exactly ``coq``, and its
    assumptions are registered premises of the development and no axiom (``proofs.coqc``)."""

    name: str
    claim: str
    statement: str
    coq: str
    expected: Result = Result.PROVED

    def __post_init__(self) -> None:
        _check_row(self.name, self.claim, self.expected)
        if self.expected is not Result.PROVED:
            raise ValueError(f"{self.name}: a Coq theorem is expected proved")


Row = Obligation | CodeCheck | CoqTheorem


def _check_row(name: str, claim_id: str, expected: Result) -> None:
    lookup_claim(claim_id)
    if expected not in (Result.PROVED, Result.REFUTED):
        raise ValueError(f"{name}: expected outcome must be proved or refuted")


@dataclass(frozen=True)
class PremiseStatus:
    label: str
    status: str  # "needed", "not needed", "kept: <why>", "undecided"

    @property
    def counts_as_needed(self) -> bool:
        return self.status == "needed"


@dataclass(frozen=True)
class Vacuity:
    """The vacuity checks of one proof: each premise's status, each antecedent's satisfiability."""

    premises: list[PremiseStatus]
    antecedents: list[tuple[str, bool]]

    def premises_text(self) -> str:
        if not self.premises:
            return "none"
        tested = [p for p in self.premises if not p.status.startswith("kept")]
        kept = len(self.premises) - len(tested)
        text = f"{sum(p.counts_as_needed for p in tested)}/{len(tested)} needed"
        return text + (f", {kept} kept" if kept else "")

    def antecedents_text(self) -> str:
        if not self.antecedents:
            return "none"
        return f"{sum(ok for _, ok in self.antecedents)}/{len(self.antecedents)} sat"

    def to_json(self) -> dict[str, object]:
        return {"premises_needed": self.premises_text(),
                "premises": [{"label": p.label, "status": p.status} for p in self.premises],
                "antecedents_satisfiable": self.antecedents_text(),
                "antecedents": [{"antecedent": text, "satisfiable": ok} for text, ok in self.antecedents]}


@dataclass
class Verdict:
    """What discharging one row found, and how long it took."""

    obligation: Row
    result: Result
    seconds: float
    reason: str = ""
    witness: dict[str, str] = field(default_factory=dict)
    vacuity: Vacuity | None = None
    cases: int | None = None
    hypotheses: tuple[str, ...] | None = None  # a Coq theorem's premises (section hypotheses used)

    @property
    def as_expected(self) -> bool:
        return self.result == self.obligation.expected


def solver_for(assertions: Sequence[z3.BoolRef], timeout_s: float) -> z3.Solver:
    solver = z3.Solver()
    solver.set("timeout", max(1, int(timeout_s * 1000)))
    solver.add(*assertions)
    return solver


def refute(premises: Sequence[z3.BoolRef], claim_parts: Sequence[z3.BoolRef],
           deadline: float) -> tuple[z3.CheckSatResult, z3.Solver | None, str]:
    """Look for a model of the premises where some part of the claim is false, one part at a
    time.  ``sat`` (with the solver holding the model) as soon as one part fails; ``unsat``
    only when every part is unsat; otherwise ``unknown`` with the first reason."""
    reason = ""
    for part in claim_parts:
        left = deadline - time.perf_counter()
        if left <= 0:
            return z3.unknown, None, reason or "timeout"
        *hypotheses, negated = negation(part)
        solver = solver_for([*hypotheses, *premises, negated], left)
        answer = solver.check()
        if answer == z3.sat:
            return z3.sat, solver, ""
        if answer != z3.unsat and not reason:
            reason = reason_of(solver)
    return (z3.unsat, None, "") if not reason else (z3.unknown, None, reason)


def reason_of(solver: z3.Solver) -> str:
    try:
        return solver.reason_unknown() or "unknown"
    except z3.Z3Exception as exc:  # pragma: no cover - defensive
        return f"unknown ({exc})"
