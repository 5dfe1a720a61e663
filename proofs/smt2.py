"""SMT-LIB 2 export: each obligation as a file a second, independent solver can re-check.

The file holds exactly the query Z3 answers (premises and the negated claim), a comment header
naming the obligation, its claim and the expected answer (unsat = proved, sat = refuted), and a
``set-logic`` line, so that ``cvc5 FILE`` (or any SMT-LIB 2.6 solver) can be run on it."""

from __future__ import annotations

from pathlib import Path

import z3

from proofs.obligation import Obligation, Result
from spec.output_files import write_output

EXPECTED_ANSWER = {Result.PROVED: "unsat", Result.REFUTED: "sat"}


def smt2_text(obligation: Obligation) -> str:
    goal = obligation.encode()
    solver = z3.Solver()
    solver.add(*goal.assertions())
    body = [line for line in solver.to_smt2().splitlines() if not line.startswith("; benchmark generated")]
    answer = EXPECTED_ANSWER[obligation.expected]
    header = [
        f"; canonmerge proof obligation: {obligation.name}",
        f"; claim: {obligation.claim}",
        f"; statement: {obligation.statement}",
        f"; expected: {answer} ({obligation.expected.value}); the query is premises and not(claim)",
        f"(set-logic {goal.logic})",
    ]
    return "\n".join([*header, *body, "(exit)", ""])


def write_smt2(obligation: Obligation, directory: Path) -> Path:
    """Write ``DIRECTORY/<name>.smt2`` and return its path."""
    path = directory / f"{obligation.name}.smt2"
    write_output(path, smt2_text(obligation).encode("ascii"), "SMT-LIB file")  # atomic, never into a store
    return path
