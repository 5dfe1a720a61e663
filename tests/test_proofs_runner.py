"""The runner's contract: every obligation meets its expectation, and the verdict logic never
turns a refutation, an unknown, a timeout, a z3 error, a vacuous premise set, an unsatisfiable
antecedent or an unneeded premise into a proof."""

import ast
import sys
from pathlib import Path

import pytest
import z3

import proofs
from proofs.discharge import discharge
from proofs.obligation import CodeCheck, Finding, Goal, Obligation, Result, law, premise
from proofs.runner import outcome_of
from spec import CLAIMS, InputError, Outcome, exit_code_for
from tests.coq_helpers import rows_run

x = z3.Int("x")


def fake(expected: Result, goal: Goal, name: str = "fake") -> Obligation:
    return Obligation(name, "C1", "a fake obligation for the runner's logic", expected, lambda: goal)


PROVABLE = Goal([premise("x positive", x > 0)], x >= 0, "QF_LIA")   # unsat of the negation
REFUTABLE = Goal([], x > 0, "QF_LIA")                                 # x = 0 is a counterexample
VACUOUS = Goal([premise("x positive", x > 0), premise("x negative", x < 0)], z3.BoolVal(False), "QF_LIA")
UNSAT_ANTECEDENT = law([premise("x positive", x > 0)], [x < 0], x == 7, "QF_LIA")
STRAY_PREMISE = Goal([premise("x positive", x > 0), premise("x small", x < 100)], x >= 0, "QF_LIA")
KEPT_PREMISE = Goal([premise("x positive", x > 0), premise("x small", x < 100, kept="for the test")],
                    x >= 0, "QF_LIA")


def fermat_cubes() -> Goal:
    """True (Euler), but far beyond Z3's nonlinear integer arithmetic: it can only time out."""
    a, b, c = z3.Ints("a b c")
    return Goal([premise("positive", a > 0, b > 0, c > 0)], a * a * a + b * b * b != c * c * c, "QF_NIA")


@pytest.mark.xdist_group("full-proof-run")
def test_every_obligation_meets_its_expectation(full_proof_run):
    _, report = full_proof_run  # every obligation, at the timeout prove and verify use
    assert report.part == "proofs"
    assert [r.check for r in report.results] == rows_run()
    bad = [(r.check, r.outcome, r.figure) for r in report.results if r.outcome != Outcome.HOLDS]
    assert not bad
    assert exit_code_for(report.results) == 0
    table = report.tables[0]
    assert table.columns == ["obligation", "claim", "expected", "result", "premises needed", "antecedents", "time"]
    assert [row[0] for row in table.rows] == rows_run()
    assert all(row[2] == row[3] for row in table.rows)
    for row, result in zip(table.rows, report.results):
        if result.details["kind"] == "code link":
            assert row[4] == "code link" and result.details["cases"] > 0
        elif result.details["kind"] == "coq":
            assert row[4] == f"coq: {len(result.details['hypotheses'])} hypotheses"
            assert result.figure.startswith("proved by coqc, no axiom")
        elif result.details["expected"] == "proved":   # every proof passed its vacuity checks
            assert result.details["premises_needed"] == row[4] and "not needed" not in str(result.details)
            assert all(a["satisfiable"] for a in result.details["antecedents"])


def test_obligations_cover_the_claims_and_name_registered_ones():
    assert len(set(proofs.names())) == len(proofs.names())
    claims = {ob.claim for ob in proofs.OBLIGATIONS}
    assert claims == {"C1", "C2", "C3", "C4", "C5", "C6", "C7"} and claims <= set(CLAIMS)
    for ob in proofs.OBLIGATIONS:
        assert "proofs" in CLAIMS[ob.claim].checked_by
        assert ob.statement and "\n" not in ob.statement
    refuted = {ob.name for ob in proofs.OBLIGATIONS if ob.expected == Result.REFUTED}
    assert {"c1_commutative_needs_injectivity", "c3_sorted_unique_without_tiebreak",
            "c4_bag_merge_not_commutative", "c4_redelivery_changes_bag",
            "c5_key_without_tiebreak_not_total", "c5_naive_float_lt_not_strict_weak",
            "c7_same_support_needs_injectivity"} == refuted
    links = {ob.name: ob.claim for ob in proofs.OBLIGATIONS if isinstance(ob, CodeCheck)}
    assert links == {"c1_link_fragment_set_merge": "C1", "c2_link_fragment_set_order": "C2",
                     "c3_link_canonical_order": "C3", "c4_link_bag_order": "C4", "c5_link_order_key": "C5",
                     "c7_link_fragment_set_of": "C7"}


def test_every_implication_claim_declares_its_antecedent():
    """A claim written as A => B must list A for the vacuity check (law() does it)."""
    for ob in proofs.OBLIGATIONS:
        if isinstance(ob, Obligation) and ob.expected == Result.PROVED:
            goal = ob.encode()
            if z3.is_app_of(goal.claim, z3.Z3_OP_IMPLIES):
                assert goal.claim.arg(0) in goal.hypotheses, ob.name


@pytest.mark.parametrize("expected, goal, result, outcome", [
    (Result.PROVED, PROVABLE, Result.PROVED, Outcome.HOLDS),
    (Result.REFUTED, PROVABLE, Result.PROVED, Outcome.FAILS),
    (Result.REFUTED, REFUTABLE, Result.REFUTED, Outcome.HOLDS),
    (Result.PROVED, REFUTABLE, Result.REFUTED, Outcome.FAILS),
    (Result.PROVED, VACUOUS, Result.VACUOUS, Outcome.FAILS),
    (Result.REFUTED, VACUOUS, Result.VACUOUS, Outcome.FAILS),
    (Result.PROVED, UNSAT_ANTECEDENT, Result.VACUOUS, Outcome.FAILS),
    (Result.PROVED, STRAY_PREMISE, Result.UNNEEDED, Outcome.FAILS),
    (Result.PROVED, KEPT_PREMISE, Result.PROVED, Outcome.HOLDS),
])
def test_expected_versus_actual(expected, goal, result, outcome):
    verdict = discharge(fake(expected, goal), timeout_s=5)
    assert verdict.result == result
    assert outcome_of(verdict) == outcome
    report = proofs.run(timeout_s=5, obligations=[fake(expected, goal)])
    (row,) = report.results
    assert row.outcome == outcome and row.part == "proofs" and row.check == "fake"
    assert row.details["expected"] == expected.value and row.details["result"] == result.value
    assert exit_code_for(report.results) == (0 if outcome == Outcome.HOLDS else 1)


def test_refutation_carries_the_counterexample_in_details_and_figure():
    report = proofs.run(timeout_s=5, obligations=[fake(Result.REFUTED, REFUTABLE)])
    (row,) = report.results
    assert row.details["witness"] == {"x": "0"}
    assert "x = 0" in row.figure
    assert report.tables[1].rows == [["fake", "x", "0"]]


def test_a_timeout_is_unknown_and_never_holds():
    verdict = discharge(fake(Result.PROVED, fermat_cubes()), timeout_s=0.001)
    assert verdict.result == Result.UNKNOWN
    assert verdict.seconds < 5
    report = proofs.run(timeout_s=0.001, obligations=[fake(Result.PROVED, fermat_cubes())])
    (row,) = report.results
    assert row.outcome == Outcome.UNKNOWN and row.figure.startswith("unknown")
    assert exit_code_for(report.results) == 1


def test_a_longer_timeout_on_a_hard_query_is_still_unknown_not_proved():
    verdict = discharge(fake(Result.PROVED, fermat_cubes()), timeout_s=0.3)
    assert verdict.result == Result.UNKNOWN
    assert "timeout" in verdict.reason or "canceled" in verdict.reason


def test_a_z3_error_is_unknown_with_its_reason():
    def broken() -> Goal:
        raise z3.Z3Exception("sort mismatch in the encoding")

    verdict = discharge(Obligation("broken", "C1", "s", Result.PROVED, broken), timeout_s=5)
    assert verdict.result == Result.UNKNOWN and "sort mismatch" in verdict.reason
    report = proofs.run(obligations=[Obligation("broken", "C1", "s", Result.PROVED, broken)],
                        emit_smt2=None)
    assert report.results[0].outcome == Outcome.UNKNOWN


def test_an_obligation_must_name_a_claim_and_a_definite_expectation():
    with pytest.raises(KeyError):
        Obligation("x", "C99", "s", Result.PROVED, lambda: PROVABLE)
    with pytest.raises(ValueError):
        Obligation("x", "C1", "s", Result.UNKNOWN, lambda: PROVABLE)


def test_selection_by_name_and_by_claim_and_unknown_names():
    assert [ob.name for ob in proofs.select("c2_absorbing")] == ["c2_absorbing"]
    assert {ob.claim for ob in proofs.select("C4")} == {"C4"}
    with pytest.raises(InputError) as info:
        proofs.select("c9_nonsense")
    assert "c1_commutative" in str(info.value) and "c9_nonsense" in str(info.value)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_bad_timeouts_are_input_errors(bad):
    with pytest.raises(InputError):
        proofs.run(only="c1_idempotent", timeout_s=bad)


def test_unwritable_smt2_directory_is_an_input_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError):
        proofs.run(only="c1_idempotent", emit_smt2=blocker / "sub")


def test_progress_is_reported():
    calls = []
    proofs.run(only="C4", progress=lambda task, done, total: calls.append((done, total)))
    assert calls[0] == (0, 3) and calls[-1] == (3, 3)


def test_proofs_import_only_spec_z3_and_the_stdlib():
    package = Path(proofs.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                tops = [(node.module or "").split(".")[0]]
            else:
                continue
            for top in tops:
                assert top in {"proofs", "spec", "z3"} or top in sys.stdlib_module_names, f"{path.name}: {top}"


def test_vacuity_reports_each_premise_and_antecedent():
    verdict = discharge(fake(Result.PROVED, KEPT_PREMISE), timeout_s=5)
    assert verdict.vacuity.premises_text() == "1/1 needed, 1 kept"
    assert [p.status for p in verdict.vacuity.premises] == ["needed", "kept: for the test"]
    stray = discharge(fake(Result.PROVED, STRAY_PREMISE), timeout_s=5)
    assert "x small" in stray.reason and stray.vacuity.premises_text() == "1/2 needed"
    unsat = discharge(fake(Result.PROVED, UNSAT_ANTECEDENT), timeout_s=5)
    assert "antecedent is unsatisfiable" in unsat.reason
    report = proofs.run(timeout_s=5, obligations=[fake(Result.PROVED, PROVABLE)])
    details = report.results[0].details
    assert details["premises_needed"] == "1/1 needed" and details["premises"] == [
        {"label": "x positive", "status": "needed"}]
    assert report.tables[0].rows[0][4:6] == ["1/1 needed", "none"]


def test_an_undecidable_needed_check_is_unknown_not_proved():
    """The proof itself is easy, but whether the premise is needed is a hard query: unknown."""
    a, b, c = z3.Ints("a b c")
    hard = a * a * a + b * b * b != c * c * c
    goal = Goal([premise("positive", a > 0, b > 0, c > 0), premise("hard", hard)], z3.And(hard, a > 0), "QF_NIA")
    verdict = discharge(fake(Result.PROVED, goal), timeout_s=0.5)
    assert verdict.result == Result.UNKNOWN and outcome_of(verdict) == Outcome.UNKNOWN


def check(run, expected=Result.PROVED) -> CodeCheck:
    return CodeCheck("fake_check", "C1", "a fake code check", expected, run)


def test_code_checks_prove_refute_and_never_pass_on_a_crash_or_timeout():
    assert discharge(check(lambda deadline: Finding(3)), 5).result == Result.PROVED
    refuted = discharge(check(lambda deadline: Finding(2, {"case": "x"})), 5)
    assert refuted.result == Result.REFUTED and refuted.witness == {"case": "x"} and refuted.cases == 2

    def crash(deadline):
        raise TypeError("the code under check crashed")

    assert discharge(check(crash), 5).result == Result.UNKNOWN

    def slow(deadline):
        while True:
            deadline()

    timed_out = discharge(check(slow), 0.05)
    assert timed_out.result == Result.UNKNOWN and "timeout" in timed_out.reason
    report = proofs.run(timeout_s=5, obligations=[check(lambda deadline: Finding(3))])
    assert report.results[0].details["cases"] == 3 and report.results[0].outcome == Outcome.HOLDS
    assert report.tables[0].rows[0][4:6] == ["code link", "3 cases"]


def test_only_takes_several_names_and_claims():
    chosen = [ob.name for ob in proofs.select("c2_absorbing,C4")]
    assert chosen == ["c2_absorbing", "c4_bag_merge_not_commutative", "c4_redelivery_changes_bag",
                      "c4_link_bag_order"]
    with pytest.raises(InputError, match="'nope'"):
        proofs.select("c2_absorbing,nope")
