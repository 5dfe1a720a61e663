"""Vacuity checks run after every ``unsat``: is the proof about anything, and does it use what it assumes?

1. Antecedents: every hypothesis the goal declares (``Goal.hypotheses``: the antecedents of
   its claim) must be satisfiable together with the premises.  A contradictory premise set or
   an unsatisfiable hypothesis makes the ``unsat`` meaningless: VACUOUS.  A claim with no
   hypothesis still needs consistent premises.
2. Premises: each premise group is dropped in turn; the query without it must be ``sat``
   (the premise is needed).  A premise that is not needed is an over-strong or stray assumption
   and fails the obligation (UNNEEDED) unless the obligation states why it is kept.

Every one of these queries shares the obligation's deadline; ``unknown`` is never a pass."""

from __future__ import annotations

import time

import z3

from proofs.obligation import Goal, PremiseStatus, Result, Vacuity, reason_of, refute, solver_for

_TEXT_CHARS = 160


def _text(formula: z3.BoolRef) -> str:
    text = " ".join(str(formula).split())
    return text if len(text) <= _TEXT_CHARS else text[: _TEXT_CHARS - 3] + "..."


def _check(assertions: list[z3.BoolRef], deadline: float) -> tuple[z3.CheckSatResult | None, str]:
    left = deadline - time.perf_counter()
    if left <= 0:
        return None, "timeout before the vacuity checks finished"
    solver = solver_for(assertions, left)
    answer = solver.check()
    return answer, ("" if answer in (z3.sat, z3.unsat) else reason_of(solver))


def check_vacuity(goal: Goal, deadline: float) -> tuple[Result, str, Vacuity | None]:
    """Run both checks on a goal already found ``unsat``; PROVED only if both pass."""
    premises = goal.premise_terms()
    antecedents: list[tuple[str, bool]] = []
    for hypothesis in goal.hypotheses or (z3.BoolVal(True),):
        answer, reason = _check([*premises, hypothesis], deadline)
        if answer is None or answer == z3.unknown:
            return Result.UNKNOWN, f"antecedent check: {reason}", None
        if z3.is_true(hypothesis):
            if answer == z3.unsat:
                return Result.VACUOUS, "the premises contradict each other; the proof is empty", None
            continue
        antecedents.append((_text(hypothesis), answer == z3.sat))
        if answer == z3.unsat:
            alone, _ = _check(premises, deadline)
            if alone == z3.unsat:
                return Result.VACUOUS, "the premises contradict each other; the proof is empty", None
            return (Result.VACUOUS, f"an antecedent is unsatisfiable under the premises, so the claim "
                    f"holds vacuously: {_text(hypothesis)}", Vacuity([], antecedents))
    statuses: list[PremiseStatus] = []
    for group in goal.premises:
        if group.kept:
            statuses.append(PremiseStatus(group.label, f"kept: {group.kept}"))
            continue
        answer, _, reason = refute(goal.premise_terms(without=group), goal.conjuncts(), deadline)
        status = "needed" if answer == z3.sat else "not needed" if answer == z3.unsat else f"undecided ({reason})"
        statuses.append(PremiseStatus(group.label, status))
    vacuity = Vacuity(statuses, antecedents)
    summary = f"premises {vacuity.premises_text()}; antecedents {vacuity.antecedents_text()}"
    unneeded = [s.label for s in statuses if s.status == "not needed"]
    if unneeded:
        return (Result.UNNEEDED, f"unsat, but not every premise is needed ({summary}); the claim follows "
                f"without: {', '.join(unneeded)} (drop it, or state why it is kept)", vacuity)
    undecided = [s for s in statuses if s.status.startswith("undecided")]
    if undecided:
        return Result.UNKNOWN, f"could not decide whether premise '{undecided[0].label}' is needed: " \
                               f"{undecided[0].status}", vacuity
    return Result.PROVED, f"unsat; {summary}", vacuity
