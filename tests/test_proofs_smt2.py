"""Every exported obligation, re-checked by a second, independent solver (cvc5 from PyPI,
through its SMT-LIB parser), gives Z3's answer: unsat for proved, sat for refuted.  Code checks
(``c*_link_*`` rows that run spec's Python) have no SMT query and are not exported.  The
vacuity queries are Z3's only; cvc5 re-checks the main query of each obligation."""

from pathlib import Path

import cvc5
import pytest

import proofs
from proofs import fragment_set
from proofs.obligation import Obligation, Result
from proofs.smt2 import smt2_text, write_smt2
from spec import Outcome

ANSWER = {"proved": "unsat", "refuted": "sat"}


def cvc5_answer(path: Path, time_limit_ms: int = 60_000) -> str:
    """Parse an SMT-LIB 2.6 file with cvc5 and return its (last) check-sat answer."""
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    symbols = cvc5.SymbolManager(tm)
    solver.setOption("tlimit-per", str(time_limit_ms))
    solver.setOption("arrays-exp", "true")  # constant arrays (the empty set in the C3 list proofs)
    parser = cvc5.InputParser(solver, symbols)
    parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, str(path))
    answers = []
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        out = command.invoke(solver, symbols).strip()
        if out:
            answers.append(out)
    assert answers, f"{path.name}: cvc5 gave no answer"
    return answers[-1]


@pytest.mark.xdist_group("full-proof-run")
def test_one_file_per_obligation_with_header(full_proof_run):
    directory, report = full_proof_run
    z3_rows = [ob.name for ob in proofs.OBLIGATIONS if isinstance(ob, proofs.Obligation)]
    assert sorted(p.stem for p in directory.glob("*.smt2")) == sorted(z3_rows)
    assert all(("smt2" in row.details) == (row.details["kind"] == "z3") for row in report.results)
    for row in (r for r in report.results if "smt2" in r.details):
        text = Path(row.details["smt2"]).read_text()
        assert text.startswith(f"; canonmerge proof obligation: {row.check}\n")
        assert f"; expected: {ANSWER[row.details['expected']]} " in text
        assert "(set-logic " in text and text.count("(check-sat)") == 1


@pytest.mark.xdist_group("full-proof-run")
def test_cvc5_agrees_with_z3_on_every_obligation(full_proof_run):
    directory, report = full_proof_run
    disagreements = []
    for row in report.results:
        assert row.outcome == Outcome.HOLDS
        if "smt2" not in row.details:
            continue
        z3_answer = ANSWER[row.details["result"]]
        other = cvc5_answer(Path(row.details["smt2"]))
        if other != z3_answer:
            disagreements.append((row.check, z3_answer, other))
    assert not disagreements


def test_cvc5_also_refutes_a_wrong_law(tmp_path):
    """The second solver is a real check: a wrong 'proved' obligation comes back sat."""
    wrong = Obligation("c2_intersection_inflationary", "C2", "intersection is inflationary (false)",
                       Result.PROVED, lambda: fragment_set.inflation(fragment_set.intersection))
    assert "; expected: unsat" in smt2_text(wrong)
    assert cvc5_answer(write_smt2(wrong, tmp_path)) == "sat"
