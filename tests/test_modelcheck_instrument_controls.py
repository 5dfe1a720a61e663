"""The C3 instruments see their own faults without a second fault: each comparison is checked
against something it does not compute itself (the schedule, for the labels), or goes through one
judgement with a control that must fail it (the arrival-order row, the BagMerge count), so a
weakened comparison fails the run on its own, naming the instrument that went blind."""

from __future__ import annotations

import pytest

import modelcheck
from modelcheck import canary, coverage, instruments, shards, unions
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.coverage import Seen
from modelcheck.instruments import fed_as_reported, judge
from modelcheck.reference import ReferenceBackend
from modelcheck.schedules import Join, Leaf
from modelcheck.shards import Settings, ShardTask, merge, perform, plan, plan_canaries
from modelcheck.universes import select
from spec import FragmentSet, Outcome
from spec.fragment_set import iteration_order

SMALL = dict(max_arity=3, universes=["ties"], gossip=False, trace_dir=None, workers=1)


def rows(report) -> dict[str, object]:
    return {r.check: r for r in report.results}


def _merged(universe: str = "ties", checks: tuple[str, ...] = tuple(c.name for c in P.ALL)):
    settings = Settings(3, 1, "arrival", checks, "reference", None)
    shard_plan = plan([universe], settings)
    backend = ReferenceBackend()
    results = [perform(backend, ShardTask(settings, s)) for s in shard_plan + plan_canaries(settings, len(shard_plan))]
    return merge(results, [universe])


def _judged(merged, universe: str = "ties", bag_orders: bool = True) -> dict[str, object]:
    return {r.check: r for r in judge(merged, select([universe]), 3, 1, list(P.C3_FAMILIES), bag_orders).results}


# --- the labels are checked against the schedule, not against themselves ----------------------

def _watcher(universe: str = "duplicates") -> coverage.ScheduleWatcher:
    backend, u = ReferenceBackend(), select([universe])[0]
    leaves = unions.Leaves(backend, {i: backend.build(u.geometry, d) for i, d in enumerate(u.fragments)})
    return coverage.ScheduleWatcher(backend, leaves, "test", probe=False)


def test_the_schedule_says_what_a_set_holds_first_delivery_of_each_content_id():
    """Written from the schedule alone, and equal to what a FragmentSet built by hand holds: a
    re-delivered copy never shows, and a fragment equal to an earlier one (same content id) neither."""
    watcher = _watcher()
    ids = [watcher.backend.content_id(watcher.leaves.objects[i]) for i in range(6)]
    twin = next(j for j in range(1, 6) if ids[j] in ids[:j])          # equal content to an earlier fragment
    first = ids.index(ids[twin])
    other = next(i for i in range(6) if ids[i] != ids[twin])
    assert watcher.scheduled(en.fold([Leaf(1), Leaf(0), Leaf(1, 1)])) == ((1, 0), (0, 0))
    assert watcher.scheduled(Join(Leaf(other), Join(Leaf(first), Leaf(twin)))) == ((other, 0), (first, 0))
    assert watcher.scheduled(Join(Leaf(twin), Leaf(first))) == ((twin, 0),)
    for expr in (en.fold([Leaf(1), Leaf(0), Leaf(1, 1)]), Join(Leaf(twin), Join(Leaf(first), Leaf(other, 1)))):
        by_hand = FragmentSet.of([watcher.leaves.fragment(x.index, x.copy) for x in coverage.leaves_in_order(expr)],
                                 watcher.backend.content_id)
        with iteration_order("arrival"):
            held = [next(x for x in coverage.leaves_in_order(expr)
                         if watcher.leaves.fragment(x.index, x.copy) is f) for f in by_hand]
        assert watcher.scheduled(expr) == tuple((x.index, x.copy) for x in held)


def _originals_as_copies(self):
    """Leaves.labels with the originals labelled (index, 1), like their first re-delivered copy."""
    labels = {id(obj): (index, 1) for index, obj in self.objects.items()}
    return labels | {id(obj): key for key, obj in self._copies.items()}


@pytest.mark.parametrize("universe", ["ties", "duplicates"])
def test_a_healthy_run_builds_every_sample_on_its_schedule(universe):
    found = rows(modelcheck.run(ReferenceBackend(), **SMALL | {"universes": [universe]}))
    row = found[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.HOLDS, row.figure
    assert row.details["built_off_schedule"] == 0 and row.details["sampled"] > 0
    assert row.details["controls_seen_by_schedule"] == row.details["controls"] > 0


def test_originals_labelled_as_their_copies_fail_the_arrival_row(monkeypatch):
    """Both states the shared-union comparison sees are labelled by the same labels, so it still
    agrees; the rebuilt state's labels against the schedule's own deliveries do not."""
    monkeypatch.setattr(unions.Leaves, "labels", _originals_as_copies)
    report = modelcheck.run(ReferenceBackend(), **SMALL)
    row = rows(report)[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS
    assert "other items than the schedule's first deliveries" in row.figure and "built as [0'" in row.figure
    assert row.details["fed_otherwise"] == 0 and row.details["built_off_schedule"] == row.details["sampled"]
    assert rows(report)[P.PERMUTATIONS.name].outcome is Outcome.HOLDS      # the search itself passes


def test_a_state_fed_otherwise_still_fails_with_the_new_comparison_beside_it(monkeypatch):
    monkeypatch.setattr(unions, "_common", lambda a, b: max(
        (k for k in range(min(len(a), len(b))) if sorted(a[:k]) == sorted(b[:k])), default=0))
    row = rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and "fed in another arrival order" in row.figure
    assert row.details["built_off_schedule"] == 0          # the rebuilt states are on their schedules


# --- one judgement for the real samples and their controls -------------------------------------

def test_the_judgement_itself():
    assert fed_as_reported(Seen(sampled=3), [])
    assert not fed_as_reported(Seen(sampled=3, mismatched=1), [])
    assert not fed_as_reported(Seen(sampled=3, off_schedule=1), [])
    assert not fed_as_reported(Seen(sampled=3), ["random N=3 prefix []"])


WEAKENED = {
    "always fed as reported": lambda seen, unsampled: True,
    "blind to states fed otherwise": lambda seen, unsampled: not seen.off_schedule and not unsampled,
    "blind to builds off their schedule": lambda seen, unsampled: not seen.mismatched and not unsampled,
    "any one clause enough": lambda seen, unsampled: not seen.mismatched or not seen.off_schedule or not unsampled,
}


@pytest.mark.parametrize("weakened", list(WEAKENED))
def test_a_weakened_judgement_passes_its_control_and_the_row_is_blind(monkeypatch, weakened):
    """No product fault is planted: the weakened judgement alone fails the run, because the
    controls go through it and must fail it."""
    monkeypatch.setattr(instruments, "fed_as_reported", WEAKENED[weakened])
    report = modelcheck.run(ReferenceBackend(), **SMALL)
    row = rows(report)[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and row.figure.startswith("BLIND"), row.figure
    assert any(n.startswith("instrument went blind") for n in report.notes)


@pytest.mark.parametrize("comparison, field", [("state", "mismatched"), ("schedule", "off_schedule")])
def test_a_control_the_comparison_missed_is_blind(comparison, field):
    merged = _merged()
    control = next(seen.control for (name, *_), seen in merged.coverage.items()
                   if name == canary.ARRIVAL and seen.control and seen.control.sampled)
    setattr(control, field, getattr(control, field) - 1)
    row = _judged(merged)[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and f"BLIND: the {comparison} comparison saw" in row.figure


def test_the_controls_are_recorded_by_the_samples_own_code(monkeypatch):
    """A recording that drops what it found fails the real samples' judgement through their
    controls, with no real fault to record."""
    real = coverage.ScheduleWatcher._record

    def forgets_off_schedule(self, seen, expr, state, fresh):
        real(self, seen, expr, state, fresh)
        seen.off_schedule = 0

    monkeypatch.setattr(coverage.ScheduleWatcher, "_record", forgets_off_schedule)
    row = rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.COVERAGE_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS and row.figure.startswith("BLIND: the schedule comparison saw 0 of")


# --- a family absent from the arrival canary -----------------------------------------------------

def test_a_family_the_arrival_canary_never_ran_is_named_blind():
    merged = _merged()
    del merged.canaries[canary.ARRIVAL][P.MERGE_TREES]
    row = _judged(merged)[P.CANARY_ARRIVAL.name]
    assert row.outcome is Outcome.FAILS
    assert row.figure == f"BLIND: not reported by {P.MERGE_TREES.name} (no tally: the canary never ran {P.MERGE_TREES.name})"
    assert row.details["violations_reported"]["trees"] is None


# --- the BagMerge count has a control in every run ---------------------------------------------

def test_every_c3_run_plans_one_bag_canary_shard_whatever_checks_were_selected():
    for checks in ((P.PERMUTATIONS.name,), tuple(c.name for c in P.ALL)):
        bag = [s for s in plan_canaries(Settings(3, 1, "arrival", checks, "reference", None), 0) if s.kind == "bag"]
        assert [(s.canary, s.universe, s.n) for s in bag] == [(canary.BAG, canary.UNIVERSE, canary.ARITY)]
    assert plan_canaries(Settings(3, 1, "arrival", (P.PAIRS.name,), "reference", None), 0) == []


def test_the_bag_canary_is_short_by_exactly_the_arity_never_planned():
    merged = _merged()
    assert merged.canaries[canary.BAG][P.BAG_ORDER].checked == 6               # 3!, not 2! + 3!
    data = judge(merged, select(["ties"]), 3, 1, list(P.C3_FAMILIES), True).data["canary"][canary.BAG]
    assert data["orders"] == 6 and data["short_of_its_universe"] == "BagMerge orders: 6 checked, closed form 8"


def test_a_bagmerge_comparison_forced_to_pass_is_blind(monkeypatch):
    monkeypatch.setattr(instruments, "_bag_short", lambda tallies, arities: "")
    row = rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.COVERAGE_COUNTS.name]
    assert row.outcome is Outcome.FAILS
    assert "BLIND: the BagMerge canary (N = 3 alone) was not found short" in row.figure


def test_an_expectation_that_holds_a_run_without_the_bag_checks_to_a_count_is_blind(monkeypatch):
    """Held to the sum of n! whether or not the bag checks ran: only a run without them would
    fail (falsely), but the empty record every run judges fails it in every run."""
    monkeypatch.setattr(instruments, "_bag_arities", lambda tops, bag_orders: [n for t in tops for n in range(2, t + 1)])
    row = rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.COVERAGE_COUNTS.name]
    assert row.outcome is Outcome.FAILS and "BLIND: a run without the bag checks is held to a BagMerge count" in row.figure


def test_a_run_without_the_bag_canary_is_blind():
    merged = _merged()
    del merged.canaries[canary.BAG]
    row = _judged(merged)[P.COVERAGE_COUNTS.name]
    assert row.outcome is Outcome.FAILS and "BLIND: the BagMerge canary did not run its N = 3 shard whole" in row.figure


def test_the_bag_canary_runs_in_a_run_without_the_bag_checks_and_keeps_out_of_its_verdict():
    report = modelcheck.run(ReferenceBackend(), **SMALL, checks=[P.PERMUTATIONS])
    found = rows(report)
    assert found[P.COVERAGE_COUNTS.name].outcome is Outcome.HOLDS, found[P.COVERAGE_COUNTS.name].figure
    assert P.BAG_ORDER.name not in found and report.data["canary"][canary.BAG]["orders"] == 6


def test_the_bag_canary_runs_the_backend_under_check_unchanged():
    backend = ReferenceBackend()
    assert canary.canary_backend(canary.BAG, backend, "canary bag") is backend
    assert shards.Shard(0, canary.UNIVERSE, "bag", 3, canary=canary.BAG).describe().startswith("canary bag:")


def test_a_canary_counterexample_that_does_not_reproduce_is_blind(monkeypatch):
    """A minimization that keeps schedules rendering *equal* saves a C3 trace that does not
    reproduce: the arrival canary is then caught by count but its evidence is void, and the row
    says so."""
    from modelcheck.order_checks import OrderChecks

    assert rows(modelcheck.run(ReferenceBackend(), **SMALL))[P.CANARY_ARRIVAL.name].outcome is Outcome.HOLDS
    real = OrderChecks._differs
    monkeypatch.setattr(OrderChecks, "_differs", lambda self, a, b: not real(self, a, b))
    report = modelcheck.run(ReferenceBackend(), **SMALL)
    row = rows(report)[P.CANARY_ARRIVAL.name]
    assert row.outcome is not Outcome.HOLDS and "no trace that reproduces" in row.figure
