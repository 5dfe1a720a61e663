"""Run obligations and report them as ``spec`` claim results (part "proofs").

A row HOLDS only when the solver's answer is the expected one: proved laws, and refuted
negative facts (whose witness is the evidence, kept in details and figure).  A solver
``unknown`` or timeout is UNKNOWN, a vacuous or unexpected answer FAILS; neither ever holds."""

from __future__ import annotations

import math
import time
from pathlib import Path

import z3

from proofs.catalog import select
from proofs.obligation import Obligation, Result, Verdict, discharge
from proofs.smt2 import write_smt2
from spec import ClaimResult, InputError, Outcome, PartReport, Progress, Table, no_progress

PART = "proofs"
DEFAULT_TIMEOUT_S = 10.0
_FIGURE_CHARS = 140

NOTES = [
    "proved = unsat of (premises and not claim) over free constants; universal premises are "
    "instantiated at the query's terms (a weaker premise, so unsat is still a proof)",
    "C3 and C7 hold for every N by induction from their step obligations; the bounded "
    "obligations check the same statements directly for small N",
    "a timeout or solver 'unknown' is reported as unknown and never counts as proved",
]


def _shorten(text: str) -> str:
    return text if len(text) <= _FIGURE_CHARS else text[: _FIGURE_CHARS - 3] + "..."


def _witness_text(witness: dict[str, str]) -> str:
    return "; ".join(f"{k} = {v}" for k, v in witness.items())


def outcome_of(verdict: Verdict) -> Outcome:
    """HOLDS iff the answer is the expected one; UNKNOWN for unknown; FAILS otherwise."""
    if verdict.as_expected:
        return Outcome.HOLDS
    if verdict.result == Result.UNKNOWN:
        return Outcome.UNKNOWN
    return Outcome.FAILS


def _figure(verdict: Verdict) -> str:
    expected, result = verdict.obligation.expected, verdict.result
    if verdict.as_expected:
        if result == Result.REFUTED:
            return _shorten(f"refuted as expected: {_witness_text(verdict.witness)}")
        return "proved"
    if result == Result.UNKNOWN:
        return _shorten(f"unknown: {verdict.reason}")
    evidence = _witness_text(verdict.witness) or verdict.reason
    return _shorten(f"expected {expected.value}, got {result.value}: {evidence}")


def claim_result(verdict: Verdict, smt2_path: Path | None = None) -> ClaimResult:
    ob = verdict.obligation
    details: dict[str, object] = {
        "statement": ob.statement,
        "expected": ob.expected.value,
        "result": verdict.result.value,
        "reason": verdict.reason,
    }
    if verdict.witness:
        details["witness"] = verdict.witness
    if smt2_path is not None:
        details["smt2"] = str(smt2_path)
    return ClaimResult(ob.claim, PART, ob.name, outcome_of(verdict), figure=_figure(verdict),
                       seconds=verdict.seconds, details=details)


def _check_timeout(timeout_s: float) -> None:
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
        raise InputError(f"--timeout must be a positive number of seconds, got {timeout_s!r}")


def _prepare(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write SMT-LIB files to {str(directory)!r}: {exc}") from None


def run(only: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, emit_smt2: Path | None = None,
        progress: Progress = no_progress, obligations: list[Obligation] | None = None) -> PartReport:
    """Discharge the selected obligations (all by default), each under ``timeout_s`` seconds."""
    started = time.perf_counter()
    _check_timeout(timeout_s)
    chosen = select(only, obligations)
    if emit_smt2 is not None:
        _prepare(emit_smt2)
    table = Table("proofs: obligations", ["obligation", "claim", "expected", "result", "time"])
    witnesses = Table("proofs: counterexamples", ["obligation", "name", "value"])
    results: list[ClaimResult] = []
    task = "proofs: obligations"
    for done, ob in enumerate(chosen):
        progress(task, done, len(chosen))
        verdict = discharge(ob, timeout_s)
        path = None
        if emit_smt2 is not None:
            try:
                path = write_smt2(ob, emit_smt2)
            except z3.Z3Exception:
                path = None  # already reported as unknown by discharge
        results.append(claim_result(verdict, path))
        table.rows.append([ob.name, ob.claim, ob.expected.value, verdict.result.value,
                           f"{verdict.seconds:.2f}s"])
        witnesses.rows += [[ob.name, k, v] for k, v in verdict.witness.items()]
    progress(task, len(chosen), len(chosen))
    tables = [table] + ([witnesses] if witnesses.rows else [])
    data = {"solver": f"z3 {z3.get_version_string()}", "timeout_s": timeout_s,
            "obligations": len(chosen),
            "as_expected": sum(r.outcome == Outcome.HOLDS for r in results)}
    if emit_smt2 is not None:
        data["smt2_dir"] = str(emit_smt2)
    return PartReport(PART, results, tables, data, list(NOTES), time.perf_counter() - started)
