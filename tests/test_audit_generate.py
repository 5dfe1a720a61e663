"""Mutant generation: mutmut's pinned operators turned into exact patches with stable ids, the
scope rules, the curated catalog and the equivalence list (no product runs: fast)."""

from __future__ import annotations

from collections import Counter

import pytest

from audit import Patch, ScratchCopy
from audit.curated import CATALOG, as_mutants, check_applies
from audit.equivalent import EQUIVALENT, GAPS
from audit.generate import GenerationError, mutants_of_file, pinned_operators, sample
from audit.mutants import make_id
from audit.scratch import project_root
from audit.targets import EXCLUDED_OPERATORS, GROUPS, OPERATORS, TARGETS, Target, target

ROOT = project_root()


@pytest.fixture(scope="module")
def all_mutants():
    """Every target's mutants (generation raises when a skip name no longer exists): about a
    minute on a loaded machine, so only ``-m audit`` runs it (``canonmerge audit`` generates the
    same on every run and fails the same way)."""
    return {t.path: mutants_of_file(ROOT, t) for t in TARGETS}


@pytest.fixture(scope="module")
def ordering_mutants():
    return mutants_of_file(ROOT, target("spec/ordering.py"))


def test_operators_are_pinned_and_present_in_the_installed_mutmut():
    names = {name for name, _, _ in pinned_operators()}
    assert names == set(OPERATORS)
    assert not names & set(EXCLUDED_OPERATORS)
    with pytest.raises(GenerationError, match="no operator"):
        pinned_operators(("operator_that_does_not_exist",))


def test_every_generated_patch_applies_exactly_once_and_changes_the_code(ordering_mutants, tmp_path):
    assert len(ordering_mutants) > 10
    text = (ROOT / "spec/ordering.py").read_text()
    for m in ordering_mutants:
        (patch,) = m.patches
        assert text.count(patch.old) == 1 and patch.old != patch.new
        assert m.id == make_id(m.path, m.line, m.operator, m.patches)
        mutated = text.replace(patch.old, patch.new)
        compile(mutated, m.path, "exec")
        assert mutated != text
    scratch = ScratchCopy(tmp_path, packages=("spec",))
    scratch.apply(*ordering_mutants[0].patches)  # the planter accepts it


def test_ids_are_stable_and_unique(ordering_mutants):
    again = mutants_of_file(ROOT, target("spec/ordering.py"))
    assert [m.id for m in again] == [m.id for m in ordering_mutants]
    assert len({m.id for m in ordering_mutants}) == len(ordering_mutants)


def test_known_mutants_are_generated(ordering_mutants):
    """The operators do what they say on this file: a shift, a constant, a comparison."""
    described = {m.description for m in ordering_mutants}
    assert "1 << 63 -> 1 >> 63" in described
    assert any(m.operator == "operator_swap_op" and m.function == "total_order_bits_branch_free"
               for m in ordering_mutants)


def test_scope_rules_skip_raise_statements_and_named_functions(tmp_path):
    source = ('def checked(x):\n    if x < 0:\n        raise ValueError(f"bad {x + 1}")\n    return x + 1\n\n\n'
              'def shown(x):\n    return x - 1\n\n\nLIMIT = 1 << 4\n')
    (tmp_path / "m.py").write_text(source)
    found = mutants_of_file(tmp_path, Target("m.py"))
    assert {m.function for m in found} == {"checked", "shown", "LIMIT"}
    assert not [m for m in found if m.line == 3]  # inside the raise
    skipped = mutants_of_file(tmp_path, Target("m.py", {"shown": "why", "LIMIT": "why"}))
    assert {m.function for m in skipped} == {"checked"}
    with pytest.raises(GenerationError, match="not found"):
        mutants_of_file(tmp_path, Target("m.py", {"no_such_function": "why"}))


@pytest.mark.audit
def test_every_target_generates_and_skip_names_exist(all_mutants):
    counts = Counter({path: len(found) for path, found in all_mutants.items()})
    assert all(counts[t.path] for t in TARGETS if t.path != "realstate/kernel/engine.py"), counts


def test_sample_is_deterministic_and_a_subset(ordering_mutants):
    a, b = sample(ordering_mutants, 5, seed=3), sample(ordering_mutants, 5, seed=3)
    assert [m.id for m in a] == [m.id for m in b] and len(a) == 5
    assert {m.id for m in a} <= {m.id for m in ordering_mutants}
    assert [m.id for m in sample(ordering_mutants, 5, seed=4)] != [m.id for m in a]
    assert len(sample(ordering_mutants, 10_000, seed=0)) == len(ordering_mutants)


def test_the_curated_catalog_applies_to_this_tree():
    """A curated patch that no longer applies (the code it targets moved) fails here, naming it."""
    assert check_applies() == []
    assert len({c.name for c in CATALOG}) == len(CATALOG)
    for case in CATALOG:
        if case.quick:
            assert case.quick[0] in ("prove", "check", "realstate") and case.caught_by, case.name
    mutants = as_mutants()
    assert len({m.id for m in mutants}) == len(mutants)
    assert all(m.line > 0 for m in mutants)


def test_check_applies_names_a_patch_that_does_not_apply(tmp_path):
    ScratchCopy(tmp_path, packages=("spec", "realstate", "proofs", "modelcheck"))
    (tmp_path / "spec/ordering.py").write_text("moved\n")
    problems = check_applies(tmp_path)
    assert problems and all("spec/ordering.py" in p for p in problems)


def test_equivalence_and_gap_entries_have_a_one_line_reason_and_do_not_overlap():
    for entries in (EQUIVALENT, GAPS):
        for reason in entries.values():
            assert reason.strip() and "\n" not in reason
    assert not set(EQUIVALENT) & set(GAPS)


@pytest.mark.audit  # generates the mutants of nearly every target of both groups (30 s); `canonmerge audit` reports stale entries too
def test_equivalence_and_gap_entries_name_generated_mutants():
    named = {i.split(":")[0] for entries in (EQUIVALENT, GAPS) for i in entries}
    every = [t for group in GROUPS.values() for t in group]
    generated = [m for t in every if t.path in named for m in mutants_of_file(ROOT, t)]
    known = {m.id for m in generated} | {m.id for m in as_mutants()}
    for entries in (EQUIVALENT, GAPS):
        for mutant_id in entries:
            assert mutant_id in known, f"stale entry {mutant_id}"


def test_a_patch_on_a_missing_file_is_refused(tmp_path):
    scratch = ScratchCopy(tmp_path, packages=("spec",))
    with pytest.raises(ValueError):
        scratch.apply(Patch("spec/nope.py", "a", "b"))
