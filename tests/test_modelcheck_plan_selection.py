"""The plan-coverage and selection rows: the shard plan of every arity check accepts held to the
closed forms, and each shard's tallied checks held to the selection it was handed.  Each bug is
planted in process here; tests/test_instrument_closures.py plants the same text in a scratch
copy and runs ``canonmerge check`` on it (``-m audit``)."""

from __future__ import annotations

import pytest

import modelcheck
from modelcheck import properties as P
from modelcheck import shards
from modelcheck.plan_coverage import _control_seen, judge_plan, short_of, sums
from modelcheck.reference import ReferenceBackend
from modelcheck.runner import MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES
from modelcheck.selection_check import handed, judge_selection, off_selection
from modelcheck.universe_search import UniverseSearch
from spec import Outcome

SMALL = dict(max_arity=3, universes=["ties"], gossip=False, trace_dir=None, workers=1)


def _rows(report) -> dict[str, object]:
    return {r.check: r for r in report.results}


def test_the_plan_of_every_accepted_arity_meets_the_closed_forms():
    row = judge_plan(MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES)
    assert row.outcome is Outcome.HOLDS, row.figure
    assert len(row.details["plans"]) == MAX_EXHAUSTIVE_ARITY * (MAX_REDELIVERIES + 1)
    assert row.details["control_seen"] and all(p["exact"] for p in row.details["plans"])


@pytest.mark.parametrize("n", [6, 9])       # 9: the cap, reached by the opt-in specials9 alone
def test_an_arity_without_a_prefix_length_fails_naming_it(monkeypatch, n):
    monkeypatch.delitem(shards.PREFIX_LENGTH, n)
    row = judge_plan(MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES)
    assert row.outcome is Outcome.FAILS and f"N = {n}" in row.figure and f"--max-arity {n}" in row.figure


@pytest.mark.parametrize("n", [7, 9])
def test_a_plan_that_misses_a_prefix_at_one_arity_fails_naming_it(monkeypatch, n):
    every = shards.prefixes
    monkeypatch.setattr(shards, "prefixes", lambda k, length, extra: every(k, length, extra)[1:] if k == n
                        else every(k, length, extra))
    row = judge_plan(MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES)
    assert row.outcome is Outcome.FAILS and row.figure.startswith(f"N = {n}, R = 0: permutations")


def test_the_plan_comparison_sees_a_repeated_shard():
    planned = shards.c3_shards(6, 2)
    assert not short_of(sums(planned, 6, 2), 6, 2)
    assert short_of(sums(planned + planned[:1], 6, 2), 6, 2)


def test_the_control_must_be_short_by_exactly_the_shard_it_left_out():
    """A control that leaves out two shards is still found short, but not by exactly its last
    shard: it is blind, as is one on an empty plan."""
    planned = shards.c3_shards(8, 3)
    assert _control_seen(planned, 8, 3)
    assert not _control_seen(planned[:-1], 8, 3)
    assert not _control_seen([], 8, 3)


def test_a_real_run_reports_both_rows_holding():
    found = _rows(modelcheck.run(ReferenceBackend(), **SMALL))
    for check in (P.COVERAGE_PLAN, P.COVERAGE_SELECTION):
        assert found[check.name].outcome is Outcome.HOLDS, found[check.name].figure


def test_a_selection_ignored_inside_a_shard_fails_the_run(monkeypatch):
    """Every shard runs every check: the canary shards' narrower selections show it."""
    init = UniverseSearch.__init__

    def ignoring(self, *args, **kw):
        kw["selected"] = P.ALL
        init(self, *args, **kw)

    monkeypatch.setattr(UniverseSearch, "__init__", ignoring)
    row = _rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.COVERAGE_SELECTION.name]
    assert row.outcome is Outcome.FAILS
    assert any(w.startswith("canary bag:") and "BagMerge re-delivery ran unselected" in w for w in row.details["wrong"])


def test_the_selection_comparison_sees_both_directions():
    c3 = {c.name for c in P.C3_FAMILIES}
    assert handed([c.name for c in P.ALL], "bag", "bag") == {P.BAG_ORDER.name}
    assert handed([c.name for c in P.ALL], "c3", "arrival") == c3
    assert not off_selection(c3 | {P.ORACLE.name}, "c3", frozenset(c.name for c in P.ALL))
    assert off_selection(c3, "c3", frozenset(c3 - {P.PERMUTATIONS.name})) == ["permutations ran unselected"]
    assert off_selection(c3 - {P.PERMUTATIONS.name}, "c3", frozenset(c3)) == ["permutations selected, not run"]


def test_a_shard_that_skipped_a_selected_check_fails():
    costs = [{"shard": "ties N=2 prefix []", "kind": "c3", "canary": "", "found": {P.PERMUTATIONS.name: 0}}]
    row = judge_selection(costs, [c.name for c in P.C3_FAMILIES])
    assert row.outcome is Outcome.FAILS and "merge trees selected, not run" in row.figure


def test_a_split_judgement_that_needs_three_digests_fails_the_shards_canary_row(monkeypatch):
    """A render that differs between two processes gives two digests: the judgement is held to that."""
    from modelcheck import instruments
    from tests.test_gossip_reference import _mutated

    planted = _mutated(shards, shards, "split_unseen", "len(digests) > 1", "len(digests) > 2")
    monkeypatch.setattr(shards, "split_unseen", planted)
    monkeypatch.setattr(instruments, "split_unseen", planted)
    row = _rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.CANARY_SHARDS.name]
    assert row.outcome is Outcome.FAILS and "split judgement" in row.figure, row.figure
