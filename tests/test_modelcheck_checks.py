"""The exhaustive checks pass on a correct backend and every one of them can fail.

Each mutant (and each test-only broken backend below) must make some check FAIL with a trace that
``replay`` reproduces; a check that cannot fail would be a defect."""

import hashlib

import pytest

import modelcheck
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.checks import Row, Tallies, UniverseCheck
from modelcheck.reference import ReferenceBackend
from modelcheck.trace_replay import replay
from modelcheck.universes import UNIVERSES, universe
from spec import FragmentSet, Outcome
from tests.broken_backends import MUTANTS, plant, replay_planted

REF = ReferenceBackend()


class Forward:
    """A test-only backend that forwards everything; subclasses break one method."""

    def __init__(self, inner=REF):
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


def results(report):
    return {(r.claim, r.check): r for r in report.results}


def failing(report):
    return {key for key, r in results(report).items() if r.outcome is Outcome.FAILS}


def traces_of(report):
    return [t for r in report.results for t in r.details.get("traces", [])]


@pytest.mark.full  # tests/test_modelcheck_cli.py runs the same default on realstate's backend
def test_the_full_default_run_holds_on_the_reference_backend():
    report = modelcheck.run(REF)
    assert all(r.outcome is Outcome.HOLDS for r in report.results), [
        (r.claim, r.check, r.figure) for r in report.results if r.outcome is not Outcome.HOLDS]
    by = results(report)
    assert by[("C3", "merge trees")].figure == f"1 digest per set / {len(UNIVERSES) * 1815:,} trees"
    assert by[("C4", "BagMerge order dependence")].details["witnesses"] > 0
    assert by[("C4", "BagMerge re-delivery")].details["witnesses"] > 0
    per_universe = sum(en.permutation_count(n) + en.tree_count(n) + en.redelivery_count(n, 1) for n in range(1, 6))
    assert report.data["orderings_checked"] == len(UNIVERSES) * per_universe
    assert len(report.tables) == len(UNIVERSES) + 1
    assert report.data["gossip"]["states"] > 1000 and report.data["gossip"]["exhaustive"]
    assert {c for c, _ in by} == {"C1", "C2", "C3", "C4", "C6", "C7"}
    assert all(r.part == "modelcheck" for r in report.results)


# which check must catch which planted bug (at least these; others may fail too)
CAUGHT_BY = {
    "unstable-sort": ("C3", "permutations"),
    "no-tie-break": ("C3", "permutations"),
    "naive-float-compare": ("C3", "permutations"),
    "merge-keeps-duplicates": ("C3", "re-deliveries"),
    "order-by-arrival": ("C3", "permutations"),
    "render-depends-on-merge-tree": ("C3", "merge trees"),
    "identity-dedup": ("C3", "re-deliveries"),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_every_mutant_is_caught_with_traces_that_replay(mutant):
    report = modelcheck.run(plant(REF, mutant), max_arity=3, gossip=False)
    assert CAUGHT_BY[mutant] in failing(report)
    traces = traces_of(report)
    assert traces and all(t["mutant"] == mutant and t["backend"] == "reference" for t in traces)
    for t in traces:
        again = replay_planted(t, REF)
        assert again.reproduced and again.same_bytes, (t["check"], t["universe"])
        fixed = dict(t, mutant=None)     # the same operations on the correct backend
        assert not replay_planted(fixed, REF).reproduced, (t["check"], t["universe"])


def test_c3_traces_are_minimal():
    report = modelcheck.run(plant(REF, "order-by-arrival"), universes=["random"], gossip=False)
    t = next(t for t in traces_of(report) if t["check"] == "permutations")
    assert len(t["fragments"]) == 2
    t = next(t for t in traces_of(report) if t["check"] == "re-deliveries")
    assert len(t["fragments"]) == 2 and not any(op["op"] == "copy" for op in t["ops"])
    report = modelcheck.run(plant(REF, "identity-dedup"), universes=["ties"], gossip=False)
    t = next(t for t in traces_of(report) if t["check"] == "re-deliveries")
    assert t["fragments"] == [0] and sum(op["op"] == "copy" for op in t["ops"]) == 1


def test_every_ordering_is_rendered_never_memoized():
    class Counting(Forward):
        calls = 0

        def render_digest(self, state, base=0):
            Counting.calls += 1
            return self.inner.render_digest(state, base)

    uc = UniverseCheck(Counting(), universe("ties"), Tallies(), backend_name="reference", mutant=None,
                       selected=P.ALL)
    uc.c3(4, Row(4))
    assert Counting.calls >= 1 + en.permutation_count(4) + en.tree_count(4) + en.redelivery_count(4, 1)


def test_a_render_that_changes_on_a_late_call_is_caught():
    """If the checker cached renders by the abstract set, this could not fail."""
    class Flaky(Forward):
        calls = 0

        def render_digest(self, state, base=0):
            Flaky.calls += 1
            digest = self.inner.render_digest(state, base)
            return digest if Flaky.calls != 100 else "0" * 64

    report = modelcheck.run(Flaky(), universes=["random"], max_arity=4, gossip=False)
    assert ("C3", "merge trees") in failing(report) or ("C3", "permutations") in failing(report) \
        or ("C3", "re-deliveries") in failing(report)


def test_c4_fails_without_a_witness():
    class CommutativeBag(Forward):
        def bag_digest(self, fragments, base=0):
            table = {self.inner.content_id(f): f for f in fragments}
            return self.inner.bag_digest([table[k] for k in sorted(table)], base)

    report = modelcheck.run(CommutativeBag(), max_arity=3, gossip=False)
    assert {("C4", "BagMerge order dependence"), ("C4", "BagMerge re-delivery")} <= failing(report)


def test_c6_fails_when_the_render_is_no_bag_order():
    class Tagged(Forward):
        def render_digest(self, state, base=0):
            return hashlib.sha256(b"v2" + self.inner.render_digest(state, base).encode()).hexdigest()

    report = modelcheck.run(Tagged(), max_arity=2, gossip=False)
    assert {("C6", "N = 2 equals a BagMerge order"), ("C6", "refinement: render = BagMerge of spec order")} \
        <= failing(report)
    assert ("C3", "permutations") not in failing(report)
    for t in traces_of(report):
        assert replay(t, Tagged()).reproduced
        assert not replay_planted(t, REF).reproduced


def test_refinement_fails_on_a_wrong_abstraction():
    class Forgetful(Forward):
        def abstract(self, state):
            return FragmentSet.of_ids(sorted(state.ids())[:1])

    report = modelcheck.run(Forgetful(), max_arity=2, universes=["random"], gossip=False)
    assert ("C1", "refinement: abstract(merge) = union") in failing(report)
    t = next(t for t in traces_of(report) if t["check"] == "refinement: abstract(merge) = union")
    assert replay(t, Forgetful()).reproduced and not replay_planted(t, REF).reproduced


def test_refinement_fails_on_a_wrong_render_order():
    class Reversed(Forward):
        def render_order(self, state):
            return self.inner.render_order(state)[::-1]

    report = modelcheck.run(Reversed(), max_arity=2, universes=["random"], gossip=False)
    assert failing(report) == {("C3", "refinement: render order = spec order")}


def test_c2_inflation_fails_on_a_merge_that_drops_its_argument():
    class Lossy(Forward):
        def merge(self, a, b):
            return a

    report = modelcheck.run(Lossy(), max_arity=2, universes=["random"], gossip=False)
    assert ("C2", "inflation and absorption on concrete states") in failing(report)
    t = next(t for t in traces_of(report) if t["claim"] == "C2")
    assert "inflation" in t["note"] and replay(t, Lossy()).reproduced and not replay_planted(t, REF).reproduced


def test_run_validates_its_bounds():
    from spec import InputError

    for kwargs in ({"max_arity": 0}, {"max_arity": 9}, {"redeliveries": 4}, {"randomized": -1},
                   {"universes": ["nope"]}, {"replicas": 1}, {"fragments": 9}):
        with pytest.raises(InputError):
            modelcheck.run(REF, **kwargs)


def test_a_held_universe_is_searched_like_its_data_and_counted_without_traces():
    """The replay's route: fragments the caller holds, not descriptions.  The same search finds
    the same violations on them; with no descriptions to write, nothing is traced."""
    from modelcheck.checks import INTERLEAVED, HeldUniverse

    u = universe("ties")
    bug = plant(REF, "order-by-arrival")
    held = HeldUniverse("held", tuple(bug.build(u.geometry, d) for d in u.fragments[:3]))
    counts = {}
    for name, subject in (("data", u), ("held", held)):
        tallies = Tallies()
        uc = UniverseCheck(bug, subject, tallies, backend_name="reference", mutant="order-by-arrival",
                           selected=P.ALL)
        row = uc.run_c3(3)
        counts[name] = (row.permutations, row.trees, row.redeliveries, row.violations,
                        {c.name: (t.checked, t.found) for c, t in tallies.items()})
        assert bool(traces := [t for x in tallies.values() for t in x.traces]) == (name == "data"), traces
    assert counts["data"] == counts["held"] and counts["held"][3] > 0
    # BagMerge re-delivery in every interleaving of the copy (the replay's count) or appended
    for copies, expected in ((INTERLEAVED, en.redelivery_count(3, 1)), ("appended", 3)):
        tallies = Tallies()
        uc = UniverseCheck(REF, held, tallies, backend_name="reference", mutant=None, bag_copies=copies,
                           selected=P.ALL)
        uc.c4(3, Row(3))
        (bag_redelivery,) = [t for c, t in tallies.items() if c.name == "BagMerge re-delivery"]
        assert bag_redelivery.checked == expected and bag_redelivery.found == expected
