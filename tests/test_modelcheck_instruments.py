"""The checker's instruments prove in each run that they could see: canaries through the run's
own shards, coverage counts held to closed forms, and a from-scratch sample of what each render
is fed.  Here on the pure-Python reference backend (fast); the source-level plants that the
product's own command must catch are in ``audit.curated`` (run by test_planted_in_source)."""

from __future__ import annotations

import pytest

import modelcheck
from modelcheck import canary, coverage, runner, unions
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.instruments import judge
from modelcheck.reference import ReferenceBackend
from modelcheck.runner import MAX_EXHAUSTIVE_ARITY
from modelcheck.schedules import Join, Leaf
from modelcheck.shards import Settings, ShardTask, merge, perform, plan, plan_canaries
from modelcheck.universes import select
from spec import Outcome

SMALL = dict(max_arity=3, universes=["ties"], gossip=False, trace_dir=None)


def rows(report) -> dict[str, object]:
    return {r.check: r for r in report.results}


def test_the_closed_forms_agree_with_the_enumerators_and_with_counting():
    for n in range(1, MAX_EXHAUSTIVE_ARITY + 1):
        for r in range(0, 4):
            forms = coverage.closed_forms(n, r)
            assert forms["permutations"] == en.permutation_count(n)
            assert forms["trees"] == en.tree_count(n)
            assert forms["re-deliveries"] == en.redelivery_count(n, r) == en.multinomial_redelivery_count(n, r)
    for n in range(1, 5):
        forms = coverage.closed_forms(n, 2)
        assert forms["trees"] == sum(1 for _ in en.merge_trees(n))
        assert forms["re-deliveries"] == sum(1 for _ in en.redeliveries(n, 2))


@pytest.mark.parametrize("iteration", ["arrival", "id", "shuffled"])
def test_every_run_reports_its_canaries_and_coverage(iteration):
    report = modelcheck.run(ReferenceBackend(), **SMALL, workers=1, iteration=iteration)
    found = rows(report)
    for check in P.INSTRUMENTS:
        assert found[check.name].outcome is Outcome.HOLDS, found[check.name].figure
    assert report.data["canary"]["arrival"]["seen"] and report.data["canary"]["shards"]["seen"]
    cells = report.data["coverage"]["cells"]
    assert all(c["exact"] for c in cells)
    assert {(c["canary"], c["n"]) for c in cells} == {(None, 1), (None, 2), (None, 3), ("arrival", 3), ("shards", 3)}
    assert report.data["coverage"]["sampled"] > 0 and report.data["coverage"]["controls_seen"] > 0
    titles = [t.title for t in report.tables]
    assert any("coverage" in t for t in titles) and any("canaries" in t for t in titles)
    # the canaries' violations stay out of the real verdict
    assert all(r.outcome is Outcome.HOLDS for r in report.results)


def _results(drop: str = "") -> tuple[list, Settings]:
    settings = Settings(3, 1, "arrival", tuple(c.name for c in P.ALL), "reference", None)
    shard_plan = plan(["ties"], settings)
    tasks = shard_plan + plan_canaries(settings, len(shard_plan))
    backend = ReferenceBackend()
    return [perform(backend, ShardTask(settings, s)) for s in tasks if not (drop and s.canary == drop)], settings


@pytest.mark.parametrize("lost, row", [("arrival", P.CANARY_ARRIVAL), ("shards", P.CANARY_SHARDS)])
def test_a_canary_that_is_not_reported_fails_the_run_naming_the_blind_instrument(lost, row):
    results, _ = _results(drop=lost)
    judged = judge(merge(results, ["ties"]), select(["ties"]), 3, 1, list(P.C3_FAMILIES), True)
    by_name = {r.check: r for r in judged.results}
    assert by_name[row.name].outcome is Outcome.FAILS and "BLIND" in by_name[row.name].figure
    assert any(n.startswith("instrument went blind") and canary.WATCHES[lost] in n for n in judged.notes)
    # its shards' counts are missing too: the coverage row says so
    assert by_name[P.COVERAGE_COUNTS.name].outcome is Outcome.FAILS


def test_a_stale_prefix_union_is_seen_by_the_from_scratch_sample(monkeypatch):
    """The prefix of the previous arrival sequence reused whenever it holds the same deliveries:
    every render agrees (the union is the same set), only the sample sees the wrong order."""
    monkeypatch.setattr(unions, "_common", lambda a, b: max(
        (k for k in range(min(len(a), len(b))) if sorted(a[:k]) == sorted(b[:k])), default=0))
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    assert found[P.COVERAGE_ARRIVAL.name].outcome is Outcome.FAILS
    assert "fed in another arrival order" in found[P.COVERAGE_ARRIVAL.name].figure
    assert found[P.PERMUTATIONS.name].outcome is Outcome.HOLDS     # the search itself passes


def test_the_comparison_fails_when_it_cannot_see_an_order(monkeypatch):
    """A comparison blind to arrival order (sorted items) passes the stale union above; its own
    control on the canary shards reports it."""
    real = coverage.arrival

    def sorted_items(b, leaves, state):
        order, key = real(b, leaves, state)
        return tuple(sorted(order, key=repr)), key

    monkeypatch.setattr(coverage, "arrival", sorted_items)
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    assert found[P.COVERAGE_ARRIVAL.name].outcome is Outcome.FAILS
    assert "BLIND" in found[P.COVERAGE_ARRIVAL.name].figure


def test_a_schedule_is_counted_once_and_only_when_it_belongs_to_the_shard():
    trees = coverage.Signatures(3, (1,), 0)
    valid, identity = trees.of(Join(Join(Leaf(1), Leaf(0)), Leaf(2)))
    assert valid and identity == trees.of(Join(Join(Leaf(1), Leaf(0)), Leaf(2)))[1]      # equal trees, one identity
    assert identity != trees.of(Join(Leaf(1), Join(Leaf(0), Leaf(2))))[1]                 # the shape counts
    assert not trees.of(Join(Join(Leaf(0), Leaf(1)), Leaf(2)))[0]                         # another prefix
    assert not trees.of(Join(Join(Leaf(1), Leaf(0, 1)), Leaf(2)))[0]                      # a copy in a tree
    assert not coverage.Signatures(3, (), 0).of((0, 1))[0]                                # misses fragment 2
    assert coverage.Signatures(2, (), None).of((0, 1, 0))[0]
    assert not coverage.Signatures(2, (), None).of((0, 1))[0]                             # no repeat
    backend, u = ReferenceBackend(), select(["ties"])[0]
    leaves = unions.Leaves(backend, {i: backend.build(u.geometry, d) for i, d in enumerate(u.fragments)})
    watcher = coverage.ScheduleWatcher(backend, leaves, "test", probe=False)
    pairs = list(unions.comb_states(backend, leaves, 3, 0))
    list(watcher.watch("permutations", 3, (), en.sequence, iter(pairs + pairs[:2])))
    seen = watcher.seen["permutations"]
    assert (seen.count, seen.distinct, seen.repeated, seen.invalid, seen.mismatched) == (8, 6, 2, 0, 0)
    tree_pairs = list(unions.tree_states(backend, leaves, 3))
    list(watcher.watch("trees", 3, (), lambda e: e, iter(tree_pairs + tree_pairs[-1:])))
    seen = watcher.seen["trees"]
    assert (seen.count, seen.distinct, seen.repeated, seen.invalid, seen.mismatched) == (13, 12, 1, 0, 0)


def test_an_instrument_alone_runs_the_search_it_watches():
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1, checks=[P.CANARY_ARRIVAL]))
    assert found[P.CANARY_ARRIVAL.name].outcome is Outcome.HOLDS
    assert P.PERMUTATIONS.name in found


def test_a_run_without_c3_has_no_instrument_rows():
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1, checks=[P.PAIRS]))
    assert not set(found) & {c.name for c in P.INSTRUMENTS}


def test_a_count_the_shards_reported_without_a_cell_fails_the_coverage_row():
    """The cells come from the run's universes, the coverage from the shards: a table that leaves
    the real universes out (canary cells only) is seen."""
    results, _ = _results()
    judged = judge(merge(results, ["ties"]), [], 3, 1, list(P.C3_FAMILIES), True)
    by_name = {r.check: r for r in judged.results}
    assert by_name[P.COVERAGE_COUNTS.name].outcome is Outcome.FAILS
    assert "not held to their closed form" in by_name[P.COVERAGE_COUNTS.name].figure and "ties N=1" in by_name[P.COVERAGE_COUNTS.name].figure


@pytest.mark.parametrize("found", [0, -1])
def test_a_split_set_recorded_but_not_counted_as_a_violation_is_blind(found):
    """A cross-shard split that does not raise the tally's violation count could cancel a real
    violation: the shard-salted canary must be counted, not only recorded."""
    results, _ = _results()
    merged = merge(results, ["ties"])
    merged.canaries[canary.SHARDS][P.MERGE_TREES].found = found
    by_name = {r.check: r for r in judge(merged, select(["ties"]), 3, 1, list(P.C3_FAMILIES), True).results}
    assert by_name[P.CANARY_SHARDS.name].outcome is Outcome.FAILS
    assert "BLIND" in by_name[P.CANARY_SHARDS.name].figure and P.MERGE_TREES.name in by_name[P.CANARY_SHARDS.name].figure


def test_a_run_of_the_c3_families_without_canary_shards_is_judged_blind(monkeypatch):
    monkeypatch.setattr(runner, "plan_canaries", lambda settings, start: [])
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    assert found[P.CANARY_ARRIVAL.name].outcome is Outcome.FAILS and "BLIND" in found[P.CANARY_ARRIVAL.name].figure
    assert found[P.COVERAGE_COUNTS.name].outcome is Outcome.FAILS


def test_bagmerge_orders_short_of_their_closed_form_fail_the_coverage_row():
    """A bag shard never planned (N = 2 here) leaves the BagMerge orders short of the sum of n!."""
    results, _ = _results()
    kept = [r for r in results if not (r.shard.kind == "bag" and r.shard.n == 2)]
    assert len(kept) == len(results) - 1
    by_name = {r.check: r for r in judge(merge(kept, ["ties"]), select(["ties"]), 3, 1, list(P.C3_FAMILIES), True).results}
    assert by_name[P.COVERAGE_COUNTS.name].outcome is Outcome.FAILS
    assert "BagMerge orders: 6 checked, closed form 8" in by_name[P.COVERAGE_COUNTS.name].figure


def test_a_run_without_the_bag_checks_holds_no_bagmerge_count():
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1, checks=[P.PERMUTATIONS]))
    assert found[P.COVERAGE_COUNTS.name].outcome is Outcome.HOLDS, found[P.COVERAGE_COUNTS.name].figure


def test_a_union_that_keeps_one_shards_violations_fails_the_shard_canary_row():
    """The arrival canary violates in each of its three shards: a merged count equal to the last
    shard's alone differs from the sum of what the shards counted."""
    results, _ = _results()
    merged = merge(results, ["ties"])
    last = [c["found"][P.PERMUTATIONS.name] for c in merged.shard_costs if c["canary"] == canary.ARRIVAL][-1]
    merged.canaries[canary.ARRIVAL][P.PERMUTATIONS].found = last
    by_name = {r.check: r for r in judge(merged, select(["ties"]), 3, 1, list(P.C3_FAMILIES), True).results}
    row = by_name[P.CANARY_SHARDS.name]
    assert row.outcome is Outcome.FAILS and "its shards counted" in row.figure, row.figure
    assert by_name[P.CANARY_ARRIVAL.name].outcome is Outcome.FAILS   # short of its closed form, too


@pytest.mark.parametrize("delta", [-1, 1])
def test_an_arrival_canary_caught_otherwise_than_its_closed_form_is_blind(delta):
    """The arrival canary's violations held to the count of orders its render tells apart from
    index order (5 of 3! here), times each family's schedules per order: 5, 10 and 30."""
    results, _ = _results()
    merged = merge(results, ["ties"])
    assert {f: merged.canaries[canary.ARRIVAL][f].found for f in P.C3_FAMILIES} == {
        P.PERMUTATIONS: 5, P.MERGE_TREES: 10, P.REDELIVERIES: 30}
    merged.canaries[canary.ARRIVAL][P.MERGE_TREES].found += delta
    row = {r.check: r for r in judge(merged, select(["ties"]), 3, 1, list(P.C3_FAMILIES), True).results}[
        P.CANARY_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "BLIND" in row.figure and f"trees {10 + delta} of 10" in row.figure, row.figure


def test_the_arrival_canary_closed_form_counts_orders_by_their_digest():
    backend, u = ReferenceBackend(), select(["random"])[0]
    objects = {i: backend.build(u.geometry, d) for i, d in enumerate(u.fragments)}
    assert canary.arrival_violations(backend, objects, 3, (), 2, u.base) == {
        "permutations": 5, "trees": 10, "re-deliveries": 5 * (36 + 150) // 6}
    assert canary.arrival_violations(backend, objects, 3, (0,), 1, u.base)["permutations"] == 1


def test_an_arrival_canary_in_one_shard_leaves_the_sum_over_shards_untested(monkeypatch):
    monkeypatch.setitem(canary.PREFIX_LENGTH, canary.ARRIVAL, 0)
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    row = found[P.CANARY_SHARDS.name]
    assert row.outcome is Outcome.FAILS and "BLIND" in row.figure and "two shards" in row.figure, row.figure


def test_a_sample_short_of_what_its_rule_owes_fails_the_arrival_row(monkeypatch):
    """The watcher's sample against ``samples_due``, counted apart: one owed schedule more than
    the watcher rebuilt in every family of every shard."""
    real = coverage.samples_due
    monkeypatch.setattr(coverage, "samples_due", lambda seed, count: real(seed, count) + 1)
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    row = found[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "the sampling rule owes" in row.figure, row.figure


def test_samples_due_follows_the_rule():
    """The first ALWAYS_SAMPLED schedules, then gaps of at least one."""
    assert [coverage.samples_due("s", c) for c in range(coverage.ALWAYS_SAMPLED + 1)] == [0, 1, 2, 3, 4]
    due = [coverage.samples_due("s", c) for c in range(0, 20_000, 997)]
    assert due == sorted(due) and 4 < due[-1] < 20_000 // 32


def test_copies_numbered_otherwise_by_the_shared_unions_fail_the_arrival_row(monkeypatch):
    """Copies numbered by two: each is still a distinct object and a set shows only first
    deliveries, so every render agrees; the delivery log built with two re-deliveries shows it."""
    real = unions.Leaves.singleton
    monkeypatch.setattr(unions.Leaves, "singleton", lambda self, index, copy=0: real(self, index, 2 * copy))
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    row = found[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "built from other copies than their schedule's" in row.figure, row.figure
    assert found[P.REDELIVERIES.name].outcome is Outcome.HOLDS


def test_a_copy_comparison_blind_to_copies_is_reported_blind(monkeypatch):
    """A comparison that reads indices only (copy numbers dropped) passes any numbering; its
    control (each state against its sequence built from copies numbered one higher) is missed."""
    real = coverage.arrival

    def indices_only(b, leaves, state):
        order, key = real(b, leaves, state)
        return tuple(None if label is None else (label[0], 0) for label in order), key

    monkeypatch.setattr(coverage, "arrival", indices_only)
    seen = coverage.copies_as_scheduled(ReferenceBackend(), _objects())
    assert seen.control.mismatched == 0 < seen.control.sampled
    row = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "BLIND: the copy-numbering comparison saw 0 of" in row.figure, row.figure


def _objects():
    backend, u = ReferenceBackend(), select(["random"])[0]
    return {i: backend.build(u.geometry, d) for i, d in enumerate(u.fragments)}


def test_the_copy_numbering_control_builds_its_closed_form_and_sees_each_control():
    seen = coverage.copies_as_scheduled(ReferenceBackend(), _objects())
    assert seen.count == coverage.closed_forms(coverage.COPIES_ARITY, coverage.COPIES_EXTRA)["re-deliveries"] == 20
    assert seen.mismatched == seen.off_schedule == 0
    assert seen.control.mismatched == seen.control.off_schedule == seen.control.sampled == 20


def test_a_copy_control_that_renumbers_a_copy_into_an_original_fails_the_arrival_row(monkeypatch):
    """Copies numbered one lower (copy 1 becomes the original): still another numbering, but one a
    comparison telling only originals from copies would see; the control must change copies alone."""
    from tests.test_gossip_reference import _mutated

    down = _mutated(coverage, coverage, "_recopied", "expr.copy + 1", "expr.copy - 1")
    monkeypatch.setattr(coverage, "_recopied", down)
    row = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "changed the originals of" in row.figure, row.figure


def test_a_re_delivery_of_the_original_object_fails_the_arrival_row(monkeypatch):
    """Copy 1 handed out as the original object: both builds read the same objects, so they agree,
    and a set shows first deliveries only; the deliveries' labels against the schedule's do not."""
    real = unions.Leaves.fragment
    monkeypatch.setattr(unions.Leaves, "fragment", lambda self, index, copy: real(self, index, 0 if copy == 1 else copy))
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL, workers=1))
    row = found[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "a copy that is another's object" in row.figure, row.figure
    assert found[P.REDELIVERIES.name].outcome is Outcome.HOLDS


def test_a_c3_tally_that_counts_otherwise_than_its_cells_fails_the_coverage_row(monkeypatch):
    """The checked figure each C3 row reports is held to its cells' closed forms: a tally that
    subtracts what it checked (the figure alone, every schedule still rendered) is seen."""
    from modelcheck import order_checks
    from tests.test_gossip_reference import _mutated

    planted = _mutated(order_checks, order_checks.OrderChecks, "c3", "tally.checked += count", "tally.checked -= count")
    monkeypatch.setattr(order_checks.OrderChecks, "c3", planted)
    report = modelcheck.run(ReferenceBackend(), **SMALL, workers=1)
    row = {r.check: r for r in report.results}[P.COVERAGE_COUNTS.name]
    assert row.outcome is Outcome.FAILS and "in its tally, closed form" in row.figure, row.figure
