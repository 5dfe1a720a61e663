"""Run obligations, code checks and Coq theorems and report them as ``spec`` claim results (part
"proofs").

A row HOLDS only when the answer is the expected one: proved laws (unsat, and the vacuity
checks pass: premises needed or kept for a stated reason, antecedents satisfiable), code checks
whose every case agrees, Coq theorems that coqc compiled as registered (no axiom), and refuted
negative facts (whose witness is the evidence, kept in details and figure).  A solver
``unknown`` or timeout is UNKNOWN; a vacuous proof, an unneeded premise, a Coq theorem not
proved or an unexpected answer FAILS; none of these ever holds.  Without coqc the Coq rows are
not run at all (a note says so): they neither pass nor fail."""

from __future__ import annotations

import math
import time
from pathlib import Path

import z3

from proofs import coqc
from proofs.catalog import check_of, select
from proofs.discharge import discharge
from proofs.mechanised import premises_text
from proofs.obligation import CodeCheck, CoqTheorem, Obligation, Result, Row, Verdict
from proofs.smt2 import write_smt2
from spec import ArgumentError, ClaimResult, InputError, Outcome, PartReport, Progress, Table, no_progress
from spec.store_marker import refuse_inside_store

PART = "proofs"
DEFAULT_TIMEOUT_S = 10.0
_FIGURE_CHARS = 140

NOTES = [
    "proved = unsat of (premises and not claim) over free constants; universal premises are "
    "instantiated at the query's terms (a weaker premise, so unsat is still a proof)",
    "vacuity: every premise of a proof is dropped in turn and must be needed (the query turns sat) "
    "unless the obligation says why it is kept; the claim's antecedents must be satisfiable with the premises",
    "C3 holds for lists of every length N by induction (c3_sorted_unique_base, c3_sorted_unique_step "
    "and its lemmas, on the real 320-bit key); C7 by induction over deliveries; the bounded obligations "
    "are cross-checks",
    "code links (c*_link_*) run spec's merge, <=/==/<, FragmentSet.of, bag_order, order_key and "
    "canonical_order against the encodings on every case of small domains, and prove "
    "total_order_bits equal to the encoding for all 2**64 patterns",
    "a timeout or solver 'unknown' is reported as unknown and never counts as proved",
    "Coq rows (c*_coq_*): proofs/coq/CanonMerge.v compiled by coqc in a temporary directory; a theorem "
    "holds when its statement is the registered one and Print Assumptions lists only registered premises "
    "(no axiom, no Admitted)",
]
KINDS = {Obligation: "z3", CodeCheck: "code link", CoqTheorem: "coq"}


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


def _evidence(verdict: Verdict) -> tuple[str, str]:
    """The two vacuity columns: premises needed, antecedents satisfiable (or the case count)."""
    if verdict.cases is not None:
        return "code link", f"{verdict.cases:,} cases"
    if verdict.hypotheses is not None:
        return f"coq: {len(verdict.hypotheses)} hypotheses", "-"
    if verdict.vacuity is None:
        return "-", "-"
    return verdict.vacuity.premises_text(), verdict.vacuity.antecedents_text()


def _figure(verdict: Verdict) -> str:
    expected, result = verdict.obligation.expected, verdict.result
    if verdict.as_expected:
        if result == Result.REFUTED:
            return _shorten(f"refuted as expected: {_witness_text(verdict.witness)}")
        if verdict.cases is not None:
            return f"code and encoding agree on {verdict.cases:,} cases"
        if verdict.hypotheses is not None:
            return f"proved by coqc, no axiom; premises: {premises_text(verdict.hypotheses)}"
        premises, antecedents = _evidence(verdict)
        return f"proved; premises {premises}; antecedents {antecedents}"
    if result == Result.UNKNOWN:
        return _shorten(f"unknown: {verdict.reason}")
    evidence = _witness_text(verdict.witness) or verdict.reason
    return _shorten(f"expected {expected.value}, got {result.value}: {evidence}")


def claim_result(verdict: Verdict, smt2_path: Path | None = None) -> ClaimResult:
    ob = verdict.obligation
    details: dict[str, object] = {
        "kind": KINDS[type(ob)],
        "statement": ob.statement,
        "expected": ob.expected.value,
        "result": verdict.result.value,
        "reason": verdict.reason,
    }
    if verdict.vacuity is not None:
        details.update(verdict.vacuity.to_json())
    if verdict.cases is not None:
        details["cases"] = verdict.cases
    if isinstance(ob, CoqTheorem):
        details["coq_statement"] = ob.coq
        details["hypotheses"] = list(verdict.hypotheses or ())
    if verdict.witness:
        details["witness"] = verdict.witness
    if smt2_path is not None:
        details["smt2"] = str(smt2_path)
    return check_of(ob).result(outcome_of(verdict), _figure(verdict), verdict.seconds, **details)


MAX_TIMEOUT_S = 86400.0  # z3 takes its timeout in milliseconds as an unsigned 32-bit integer


def _check_timeout(timeout_s: float) -> None:
    if not (isinstance(timeout_s, (int, float)) and not isinstance(timeout_s, bool) and math.isfinite(timeout_s)
            and 0.001 <= timeout_s <= MAX_TIMEOUT_S):
        raise ArgumentError("timeout_s", timeout_s, f"must be a number of seconds in [0.001, {MAX_TIMEOUT_S:g}]")


def _prepare(directory: Path) -> None:
    refuse_inside_store(directory, "emit_smt2")  # before the directory is made
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write SMT-LIB files to {str(directory)!r}: {exc}") from None


def run(only: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, emit_smt2: Path | None = None,
        progress: Progress = no_progress, obligations: list[Row] | None = None,
        fail_fast: bool = False) -> PartReport:
    """Discharge the selected rows (all by default), each under ``timeout_s`` seconds; with
    ``fail_fast``, stop after the first row that does not hold."""
    started = time.perf_counter()
    _check_timeout(timeout_s)
    chosen = select(only, obligations)
    if emit_smt2 is not None:
        _prepare(emit_smt2)
    theorems = [ob for ob in chosen if isinstance(ob, CoqTheorem)]
    verdicts: dict[str, Verdict] = {}
    coq = coqc.CoqRun(data="not run")  # unless --fail-fast stops first
    task = "proofs: obligations"
    with coqc.compiling(theorems, timeout_s) as coq_result:  # coqc compiles while Z3 works
        for done, ob in enumerate(ob for ob in chosen if not isinstance(ob, CoqTheorem)):
            progress(task, done, len(chosen))
            verdicts[ob.name] = verdict = discharge(ob, timeout_s)
            if fail_fast and outcome_of(verdict) is not Outcome.HOLDS:
                break
        else:
            progress(task, len(chosen) - len(theorems), len(chosen))
            coq = coq_result()
            verdicts.update(coq.verdicts)
    if theorems and coq.missing:  # no coqc: no Coq row, neither a pass nor a failure
        chosen = [ob for ob in chosen if not isinstance(ob, CoqTheorem)]
    table = Table("proofs: obligations",
                  ["obligation", "claim", "expected", "result", "premises needed", "antecedents", "time"])
    witnesses = Table("proofs: counterexamples", ["obligation", "name", "value"])
    results: list[ClaimResult] = []
    for ob in chosen:
        verdict = verdicts.get(ob.name)
        if verdict is None:  # --fail-fast stopped before this row
            continue
        path = None
        if emit_smt2 is not None and isinstance(ob, Obligation):
            try:
                path = write_smt2(ob, emit_smt2)
            except z3.Z3Exception:
                path = None  # already reported as unknown by discharge
        results.append(claim_result(verdict, path))
        table.rows.append([ob.name, ob.claim, ob.expected.value, verdict.result.value, *_evidence(verdict),
                           f"{verdict.seconds:.2f}s"])
        witnesses.rows += [[ob.name, k, v] for k, v in verdict.witness.items()]
        if fail_fast and results[-1].outcome is not Outcome.HOLDS:
            break
    progress(task, len(chosen), len(chosen))
    tables = [table] + ([witnesses] if witnesses.rows else [])
    data = {"solver": f"z3 {z3.get_version_string()}", "timeout_s": timeout_s,
            "obligations": len(chosen),
            "code_links": sum(isinstance(ob, CodeCheck) for ob in chosen),
            "coq_theorems": sum(isinstance(ob, CoqTheorem) for ob in chosen), "coq": coq.data,
            "as_expected": sum(r.outcome == Outcome.HOLDS for r in results)}
    if emit_smt2 is not None:
        data["smt2_dir"] = str(emit_smt2)
    notes = list(NOTES) + ([coq.note] if coq.note else [])
    if len(results) < len(chosen):
        notes.append(f"--fail-fast: stopped at {results[-1].check}; {len(chosen) - len(results)} rows not run")
    return PartReport(PART, results, tables, data, notes, time.perf_counter() - started)
