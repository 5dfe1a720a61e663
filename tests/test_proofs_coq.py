"""The Coq rows of ``canonmerge prove``: planted in the development's source (a false statement,
an ``Admitted``, an ``Axiom``, an extra hypothesis, a weakened statement, a renamed theorem),
each caught by the product's own command on a scratch copy with exit 1; without coqc the
command says so and the Z3 rows alone decide; the reading of coqc's answers."""

from __future__ import annotations

import json
import os

import pytest
import z3

import proofs
from audit import Patch, ScratchCopy
from proofs import coqc
from proofs.mechanised import PREMISES, SOURCE, THEOREMS
from proofs.obligation import Goal, Obligation, Result
from spec import Outcome
from tests.coq_helpers import needs_coqc

V = "proofs/coq/CanonMerge.v"
UNION = "  In f (merge a b) <-> In f a \\/ In f b.\nProof. exact merge_in. Qed."
CANONICAL = "  canonical_order (fragment_set_of deliveries)."
UNIQUE_END = "      subst f; pose proof (Fk h Hf) as C; rewrite ltF_irreflexive in C; discriminate.\nQed."
LUB_PROOF = ("  intros a b c Ha Hb i Hi; unfold merge in Hi; rewrite map_app, in_app_iff in Hi.\n"
             "  destruct Hi as [Hi|Hi]; [apply Ha; exact Hi|].\n"
             "  apply in_map_iff in Hi; destruct Hi as [f [<- Hf]].\n"
             "  apply Hb, in_map; exact (proj1 (news_sound _ _ _ Hf)).\nQed.")
IDEMPOTENT = "Theorem c1_coq_idempotent : forall a : list Frag, merge a a = a.\nProof.\n"
ASSOCIATIVE = "Theorem c1_coq_associative"
ASSOCIATIVE_PROOF = "  intros a b c; unfold merge; rewrite <- app_assoc; f_equal.\n"


def prove(scratch: ScratchCopy, only: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, dict], dict]:
    out = scratch.run("prove", "--only", only, "--json", timeout=180, env=env)
    assert out.stdout, out.stderr
    part = json.loads(out.stdout)["parts"][0]
    return out.returncode, {r["check"]: r for r in part["results"]}, part["data"]


@needs_coqc
@pytest.mark.parametrize("patch, row", [
    pytest.param(Patch(V, UNION, UNION.replace(" \\/ In f b.", ".")), "c1_coq_merge_is_union",
                 id="merge claimed to drop the other side"),
    pytest.param(Patch(V, CANONICAL, "  canonical_order deliveries."), "c3_coq_canonical_set_determined",
                 id="the sort without dedup claimed set-determined"),
])
def test_a_false_statement_fails_its_row(patch, row, tmp_path):
    scratch = ScratchCopy(tmp_path).apply(patch)
    code, rows, data = prove(scratch, row)
    assert code == 1 and list(rows) == [row]
    assert rows[row]["outcome"] == "fails" and rows[row]["details"]["result"] == "not proved"
    assert "coqc failed: CanonMerge.v line" in rows[row]["figure"] and "\n" not in rows[row]["figure"]
    assert data["coq"]["outcome"] == "failed"
    assert sorted(p.name for p in (tmp_path / "proofs" / "coq").iterdir()) == [SOURCE.name]  # nothing written


LUB = "Theorem c2_coq_least_upper_bound"
LUB_STATEMENT = ("forall a b c : list Frag, incl (map id a) (map id c) -> incl (map id b) (map id c) -> "
                 "incl (map id (merge a b)) (map id c)")
ASSOCIATIVE_STATEMENT = "forall a b c : list Frag, merge (merge a b) c = merge a (merge b c)"
CHEATS = (
    # Admitted: coqc compiles it, Print Assumptions lists it as an axiom (for it and what uses it)
    Patch(V, UNIQUE_END, UNIQUE_END.replace("Qed.", "Admitted.")),
    # an Axiom declared in the section is a global axiom
    Patch(V, LUB, f"Axiom cheat : {LUB_STATEMENT}.\n\n{LUB}"),
    Patch(V, LUB_PROOF, "  exact cheat.\nQed."),
    # a hypothesis that is not a registered premise
    Patch(V, ASSOCIATIVE, f"Hypothesis assumed : {ASSOCIATIVE_STATEMENT}.\n\n{ASSOCIATIVE}"),
    Patch(V, ASSOCIATIVE_PROOF, f"  exact assumed.\nQed.\n\nLemma associative_proved : {ASSOCIATIVE_STATEMENT}."
                                f"\nProof.\n{ASSOCIATIVE_PROOF}"),
    # a weakened statement, proved
    Patch(V, IDEMPOTENT + "  intro a; unfold merge.\n",
          "Theorem c1_coq_idempotent : forall a : list Frag, merge a a = a \\/ True.\nProof.\n"
          "  right; exact I. Qed.\nLemma was_idempotent : forall a : list Frag, merge a a = a.\nProof.\n"
          "  intro a; unfold merge.\n"),
    # the theorem a row names is gone
    Patch(V, "Theorem c6_coq_two_fragments :", "Theorem c6_two_fragments_renamed :"),
)
CAUGHT = {
    "c3_coq_sorted_unique": "unexpected axiom or assumption (axioms: c3_coq_sorted_unique)",
    "c2_coq_least_upper_bound": "unexpected axiom or assumption (axioms: cheat)",
    "c1_coq_associative": "unexpected hypothesis assumed",
    "c1_coq_idempotent": "its statement is not the registered one",
    "c6_coq_two_fragments": "theorem c6_coq_two_fragments is not in CanonMerge.v",
}


@needs_coqc
def test_proofs_that_compile_but_cheat_fail_their_rows(tmp_path):
    """coqc exits 0 on all but the renamed theorem's query: Print Assumptions and the registered
    statements are what catch them.  The rows the plants do not touch still hold (control)."""
    scratch = ScratchCopy(tmp_path).apply(*CHEATS)
    code, rows, data = prove(scratch, ",".join([*CAUGHT, "c1_coq_commutative", "c5_coq_key_lexicographic"]))
    assert code == 1 and data["coq"]["outcome"] == "compiled"
    for row, cause in CAUGHT.items():
        assert rows[row]["outcome"] == "fails" and cause in rows[row]["figure"], rows[row]
        assert rows[row]["details"]["result"] == "not proved"
    assert rows["c1_coq_commutative"]["outcome"] == rows["c5_coq_key_lexicographic"]["outcome"] == "holds"


def test_without_coqc_the_z3_rows_alone_decide(tmp_path):
    """coqc hidden from PATH: the plain note, no Coq row, exit 0 on the Z3 rows (python itself
    is started by absolute path)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    scratch = ScratchCopy(tmp_path / "copy")
    out = scratch.run("prove", "--only", "C1", timeout=120, env={"PATH": str(empty)})
    assert out.returncode == 0, out.stdout + out.stderr
    note = f"coqc not found: the Coq development ({len(THEOREMS)} theorems) was not compiled; install"
    assert note in " ".join(out.stdout.split())
    assert "c1_coq_" not in out.stdout and "c1_link_fragment_set_merge" in out.stdout


def test_without_coqc_the_report_says_missing(monkeypatch):
    monkeypatch.setattr(coqc.shutil, "which", lambda name: None)
    report = proofs.run(only="C2")
    assert report.data["coq"] == "missing" and report.data["coq_theorems"] == 0
    assert [r.check for r in report.results] == ["c2_inflationary", "c2_absorbing", "c2_least_upper_bound",
                                                 "c2_link_fragment_set_order"]
    assert any(n.startswith("coqc not found") for n in report.notes)
    only_coq = proofs.run(only="c2_coq_absorbing")  # nothing computed: neither a pass nor a failure
    assert only_coq.results == [] and only_coq.data["coq"] == "missing"


@needs_coqc
def test_the_development_holds_and_is_compiled_outside_the_source_tree():
    before = sorted(os.listdir(SOURCE.parent))
    report = proofs.run(only=",".join(t.name for t in THEOREMS))
    assert [r.outcome for r in report.results] == [Outcome.HOLDS] * len(THEOREMS)
    assert sorted(os.listdir(SOURCE.parent)) == before == [SOURCE.name]
    absorbing = next(r for r in report.results if r.check == "c2_coq_absorbing")
    assert absorbing.details["hypotheses"] == [] and absorbing.details["kind"] == "coq"
    determined = next(r for r in report.results if r.check == "c3_coq_canonical_set_determined")
    assert "id_injective" in determined.details["hypotheses"]
    assert report.data["coq"]["outcome"] == "compiled" and report.data["coq"]["theorems"] == len(THEOREMS)


@needs_coqc
def test_a_coqc_past_its_budget_is_unknown():
    report = proofs.run(only="c1_coq_commutative", timeout_s=0.001)
    (row,) = report.results
    assert row.outcome is Outcome.UNKNOWN and "did not finish" in row.figure


def test_reading_print_assumptions():
    text = ("Section Variables:\nid_injective\n: forall f g : Frag, id f = id g -> f = g\nFrag\n: Type\n"
            "Axioms:\ncheat : forall P : Prop, P\nlong\n  : forall (A : Type) (f : A -> A),\n    f = f\n")
    assert coqc.parse_assumptions(text) == {
        "Section Variables": {"id_injective": "forall f g : Frag, id f = id g -> f = g", "Frag": "Type"},
        "Axioms": {"cheat": "forall P : Prop, P", "long": "forall (A : Type) (f : A -> A), f = f"}}
    assert coqc.parse_assumptions("Closed under the global context\n") == {}


def test_judging_a_theorem_from_its_answers():
    theorem = THEOREMS[0]
    statement = f"{theorem.name}\n     : {theorem.coq}\n"
    injective = f"id_injective\n: {PREMISES['id_injective'].type}\n"
    assert coqc.judge(theorem, {"statement": statement, "assumptions": "Section Variables:\n" + injective}) == (
        Result.PROVED, "compiled; no axiom; statement and premises as registered", ("id_injective",))
    changed = "Section Variables:\nid_injective\n: forall f g : Frag, f = g\n"
    result, reason, _ = coqc.judge(theorem, {"statement": statement, "assumptions": changed})
    assert result is Result.NOT_PROVED and "premise id_injective changed" in reason
    result, reason, _ = coqc.judge(theorem, {"statement": statement})
    assert result is Result.NOT_PROVED and "no statement or assumptions" in reason


@needs_coqc
def test_fail_fast_reports_the_first_failure_and_stops_coqc():
    """The Z3 rows run while coqc compiles; a failing Z3 row stops the run before the Coq rows are
    collected, even one listed after them, and coqc is stopped with it."""
    false = Obligation("c3_fake_false_law", "C3", "a false law, for the runner", Result.PROVED,
                       lambda: Goal([], z3.BoolVal(False), "QF_UF"))
    report = proofs.run(obligations=[THEOREMS[1], false], fail_fast=True)
    assert [r.check for r in report.results] == ["c3_fake_false_law"]
    assert report.results[0].outcome is Outcome.FAILS and report.data["coq"] == "not run"
    assert report.notes[-1] == "--fail-fast: stopped at c3_fake_false_law; 1 rows not run"
    both = proofs.run(obligations=[THEOREMS[1], false])
    assert [(r.check, r.outcome) for r in both.results] == [(THEOREMS[1].name, Outcome.HOLDS),
                                                            ("c3_fake_false_law", Outcome.FAILS)]
