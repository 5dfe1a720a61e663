"""The Obligation type, its Result, and the one function that discharges it with Z3.

A proof is ``unsat`` of (premises and not claim) over free constants; nothing else is ever
reported as proved.  ``unknown`` (a timeout, a resource limit, an incomplete theory) and any
Z3 exception come back as UNKNOWN with the solver's reason.  A proof whose premises are
themselves unsatisfiable would be empty, so every ``unsat`` is followed by a satisfiability
check of the premises alone: if they are contradictory the result is VACUOUS, never PROVED.
A ``sat`` model is re-evaluated (premises true, claim false) before it is shown as a witness."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import z3

from spec import claim as lookup_claim


class Result(str, Enum):
    """What the solver established.  Only PROVED and REFUTED are answers; the rest never hold."""

    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    VACUOUS = "vacuous"


Witness = Callable[[z3.ModelRef], dict[str, str]]


def no_witness(model: z3.ModelRef) -> dict[str, str]:
    """Fallback counterexample: every constant of the model, as Z3 prints it."""
    return {str(d.name()): str(model[d]) for d in model.decls() if d.arity() == 0}


@dataclass(frozen=True)
class Goal:
    """One SMT query: the solver gets ``premises`` and ``Not(claim)``.

    ``logic`` is the SMT-LIB logic written into the exported file; ``witness`` turns a model
    of the negation into readable text (floats as hex and value, sets as lists of ids).
    ``prefer`` only shapes the counterexample (small ids, plain floats): once the query is
    sat, the runner asks for a model that also meets it and keeps the first one otherwise.
    It never takes part in the verdict and is not exported."""

    premises: list[z3.BoolRef]
    claim: z3.BoolRef
    logic: str
    witness: Witness = no_witness
    prefer: list[z3.BoolRef] = field(default_factory=list)

    def assertions(self) -> list[z3.BoolRef]:
        return [*self.premises, z3.Not(self.claim)]


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
        lookup_claim(self.claim)
        if self.expected not in (Result.PROVED, Result.REFUTED):
            raise ValueError(f"{self.name}: expected outcome must be proved or refuted")


@dataclass
class Verdict:
    """What discharging one obligation found, and how long it took."""

    obligation: Obligation
    result: Result
    seconds: float
    reason: str = ""
    witness: dict[str, str] = field(default_factory=dict)

    @property
    def as_expected(self) -> bool:
        return self.result == self.obligation.expected


def _solver(assertions: list[z3.BoolRef], timeout_s: float) -> z3.Solver:
    solver = z3.Solver()
    solver.set("timeout", max(1, int(timeout_s * 1000)))
    solver.add(*assertions)
    return solver


def _reason(solver: z3.Solver) -> str:
    try:
        return solver.reason_unknown() or "unknown"
    except z3.Z3Exception as exc:  # pragma: no cover - defensive
        return f"unknown ({exc})"


def _readable_model(solver: z3.Solver, goal: Goal, started: float, timeout_s: float) -> z3.ModelRef:
    """The model of a sat query, re-asked under ``goal.prefer`` when that is still sat in time."""
    model = solver.model()
    left = timeout_s - (time.perf_counter() - started)
    if not goal.prefer or left <= 0:
        return model
    solver.push()
    solver.set("timeout", max(1, int(left * 1000)))
    solver.add(*goal.prefer)
    if solver.check() == z3.sat:
        model = solver.model()
    solver.pop()
    return model


def _is_counterexample(goal: Goal, model: z3.ModelRef) -> bool:
    """Re-evaluate the model: every premise true and the claim false, or it is no witness."""
    checks = [*goal.premises, z3.Not(goal.claim)]
    return all(z3.is_true(model.eval(c, model_completion=True)) for c in checks)


def _witness(goal: Goal, model: z3.ModelRef) -> dict[str, str]:
    """The goal's readable witness; the raw model if the printer cannot read this model."""
    try:
        return goal.witness(model)
    except (z3.Z3Exception, ValueError, KeyError) as exc:
        return {**no_witness(model), "note": f"witness printer failed ({exc}); raw model shown"}


def discharge(obligation: Obligation, timeout_s: float) -> Verdict:
    """Run one obligation under a wall-clock budget of ``timeout_s`` seconds (both queries)."""
    started = time.perf_counter()

    def verdict(result: Result, reason: str = "", witness: dict[str, str] | None = None) -> Verdict:
        return Verdict(obligation, result, time.perf_counter() - started, reason, witness or {})

    try:
        goal = obligation.encode()
        solver = _solver(goal.assertions(), timeout_s)
        answer = solver.check()
        if answer == z3.sat:
            model = _readable_model(solver, goal, started, timeout_s)
            if not _is_counterexample(goal, model):
                return verdict(Result.UNKNOWN, "sat, but the model does not evaluate to a counterexample")
            return verdict(Result.REFUTED, "sat: counterexample found", _witness(goal, model))
        if answer != z3.unsat:
            return verdict(Result.UNKNOWN, _reason(solver))
        left = timeout_s - (time.perf_counter() - started)
        if left <= 0:
            return verdict(Result.UNKNOWN, "timeout before the premises could be checked for consistency")
        premises = _solver(goal.premises, left)
        consistent = premises.check()
        if consistent == z3.unsat:
            return verdict(Result.VACUOUS, "the premises contradict each other; the proof is empty")
        if consistent != z3.sat:
            return verdict(Result.UNKNOWN, f"premise consistency check: {_reason(premises)}")
        return verdict(Result.PROVED, "unsat; premises consistent")
    except z3.Z3Exception as exc:
        return verdict(Result.UNKNOWN, f"z3 error: {exc}")
