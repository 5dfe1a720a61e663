"""Discharge one row: a Z3 obligation (query, then vacuity checks) or a code check.

Nothing but ``unsat`` followed by passing vacuity checks is PROVED; a model is re-evaluated
before it is shown as a counterexample; ``unknown``, a timeout and any exception are UNKNOWN."""

from __future__ import annotations

import time

import z3

from proofs.obligation import (
    CheckTimeout,
    CodeCheck,
    Goal,
    Result,
    Row,
    Vacuity,
    Verdict,
    no_witness,
    refute,
)
from proofs.vacuity import check_vacuity


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
    return all(z3.is_true(model.eval(c, model_completion=True)) for c in goal.assertions())


def _witness(goal: Goal, model: z3.ModelRef) -> dict[str, str]:
    """The goal's readable witness; the raw model if the printer cannot read this model."""
    try:
        return goal.witness(model)
    except (z3.Z3Exception, ValueError, KeyError) as exc:
        return {**no_witness(model), "note": f"witness printer failed ({exc}); raw model shown"}


def discharge(obligation: Row, timeout_s: float) -> Verdict:
    """Run one row under a wall-clock budget of ``timeout_s`` seconds (all of its queries)."""
    if isinstance(obligation, CodeCheck):
        return _run_check(obligation, timeout_s)
    started = time.perf_counter()

    def verdict(result: Result, reason: str = "", witness: dict[str, str] | None = None,
                vacuity: Vacuity | None = None) -> Verdict:
        return Verdict(obligation, result, time.perf_counter() - started, reason, witness or {}, vacuity)

    try:
        goal = obligation.encode()
        # a law is refuted part by part (smaller queries); a negative fact is asked whole, so
        # that the solver looks for its counterexample at once
        parts = goal.conjuncts() if obligation.expected == Result.PROVED else [goal.claim]
        answer, solver, reason = refute(goal.premise_terms(), parts, started + timeout_s)
        if answer == z3.sat and solver is not None:
            model = _readable_model(solver, goal, started, timeout_s)
            if not _is_counterexample(goal, model):
                return verdict(Result.UNKNOWN, "sat, but the model does not evaluate to a counterexample")
            return verdict(Result.REFUTED, "sat: counterexample found", _witness(goal, model))
        if answer != z3.unsat:
            return verdict(Result.UNKNOWN, reason)
        result, reason, vacuity = check_vacuity(goal, started + timeout_s)
        return verdict(result, reason, vacuity=vacuity)
    except z3.Z3Exception as exc:
        return verdict(Result.UNKNOWN, f"z3 error: {exc}")
    except Exception as exc:  # noqa: BLE001 - an encoding that crashes is unknown, never proved
        return verdict(Result.UNKNOWN, f"encoding failed: {type(exc).__name__}: {exc}")


def _run_check(check: CodeCheck, timeout_s: float) -> Verdict:
    started = time.perf_counter()

    def deadline() -> None:
        if time.perf_counter() - started > timeout_s:
            raise CheckTimeout(f"timeout after {timeout_s:g}s")

    def verdict(result: Result, reason: str, witness: dict[str, str] | None = None,
                cases: int | None = None) -> Verdict:
        return Verdict(check, result, time.perf_counter() - started, reason, witness or {}, cases=cases)

    try:
        finding = check.run(deadline)
    except CheckTimeout as exc:
        return verdict(Result.UNKNOWN, str(exc))
    except Exception as exc:  # noqa: BLE001 - the code under check crashed: never a pass
        return verdict(Result.UNKNOWN, f"the check raised {type(exc).__name__}: {exc}")
    if finding.counterexample is not None:
        return verdict(Result.REFUTED, f"code and encoding disagree (case {finding.cases:,})",
                       finding.counterexample, finding.cases)
    return verdict(Result.PROVED, f"code and encoding agree on all {finding.cases:,} cases",
                   cases=finding.cases)
