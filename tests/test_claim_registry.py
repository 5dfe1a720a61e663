"""spec/claims.py is the index: every check registers under a claim, and every part a claim
names in ``checked_by`` registers at least one check for it."""

import pytest

import modelcheck.properties  # noqa: F401  (registers modelcheck's checks)
import proofs.catalog  # noqa: F401
import realstate.bench.properties  # noqa: F401
import realstate.processes.properties  # noqa: F401
import realstate.replay.properties  # noqa: F401
from spec import CLAIMS, Check, Expect, Outcome, declared_in, register, registered


def test_every_part_a_claim_names_registers_a_check_for_it():
    for claim in CLAIMS.values():
        for part in claim.checked_by:
            assert registered(part, claim.id), f"{claim.id} says {part} checks it, but {part} registers nothing"


def test_every_registered_check_belongs_to_a_part_its_claim_names():
    for check in registered():
        assert check.part in CLAIMS[check.claim].checked_by


def test_a_check_cannot_register_for_a_part_its_claim_does_not_name():
    with pytest.raises(ValueError, match="not listed"):
        register("C8", "modelcheck", "a check C8 does not list", Expect.ALWAYS, "...")
    with pytest.raises(ValueError, match="twice"):
        register("C3", "modelcheck", "permutations", Expect.SOMETIMES, "a different declaration")


def test_no_two_parts_declare_a_check_separately_in_the_same_words():
    """A check shared by several parts (the same search, reported in the same words) is one
    declaration naming all its parts; ``register`` refuses a second, separate one."""
    seen: dict[tuple[str, str, str, str], list[str]] = {}
    for check in registered():
        seen.setdefault((check.claim, check.name, check.expect.value, check.statement), []).append(check.part)
    shared = {words: parts for words, parts in seen.items() if len(parts) > 1}
    for (claim_id, name, _, _), parts in shared.items():
        first = next(c for c in registered(parts[0], claim_id) if c.name == name)
        assert all(declared_in(first, p).part == p for p in parts), (name, parts)
    bag = ("C4", "BagMerge re-delivery", "sometimes", "some re-delivered copy changes the BagMerge bytes")
    assert shared[bag] == ["modelcheck", "realstate"]
    with pytest.raises(ValueError, match="declare it once"):
        register("C4", "proofs", bag[1], Expect.SOMETIMES, bag[3])
    with pytest.raises(ValueError, match="not declared for part"):
        declared_in(next(c for c in registered("modelcheck") if c.name == "permutations"), "realstate")


def test_the_replay_reports_the_shared_declaration_under_its_own_part():
    import modelcheck.properties as mc
    import realstate.replay.properties as rs

    assert rs.BAG_REDELIVERY is declared_in(mc.BAG_REDELIVERY, "realstate")
    assert rs.BAG_REDELIVERY.tally(3, 1, "re-deliveries").part == "realstate"
    assert mc.BAG_REDELIVERY.tally(3, 1, "re-deliveries").part == "modelcheck"
    # declaring it again, in one call with the same parts, is the same declaration
    assert register("C4", ("modelcheck", "realstate"), "BagMerge re-delivery", Expect.SOMETIMES,
                    mc.BAG_REDELIVERY.statement) == mc.BAG_REDELIVERY


def test_counts_decide_outcomes_by_expectation_and_nothing_checked_is_never_a_pass():
    always = Check("C3", "modelcheck", "test-only always", Expect.ALWAYS, "...")  # not registered
    sometimes = Check("C4", "modelcheck", "test-only sometimes", Expect.SOMETIMES, "...")
    assert always.tally(10, 0, "cases").outcome is Outcome.HOLDS
    assert always.tally(10, 1, "cases").outcome is Outcome.FAILS
    assert sometimes.tally(10, 1, "cases").outcome is Outcome.HOLDS
    assert sometimes.tally(10, 0, "cases").outcome is Outcome.FAILS
    assert always.tally(0, 0, "cases").outcome is Outcome.UNKNOWN
    assert sometimes.tally(0, 0, "cases").outcome is Outcome.UNKNOWN
    assert always.tally(3, 0, "cases").details["expect"] == "always"


def test_the_docs_carry_the_generated_claim_tables():
    import pathlib
    import re

    from spec.index import markdown_table

    root = pathlib.Path(__file__).resolve().parents[1]
    for doc, part in (("REALSTATE.md", "realstate"), ("MODELCHECK.md", "modelcheck")):
        text = (root / "docs" / doc).read_text()
        found = re.search(rf"<!-- claims:{part} -->\n(.*?)<!-- /claims -->", text, re.S)
        assert found, f"docs/{doc} has no generated claim table for {part}"
        assert found.group(1) == markdown_table(part), (
            f"docs/{doc} is stale: run canonmerge claims --part {part} --markdown")
