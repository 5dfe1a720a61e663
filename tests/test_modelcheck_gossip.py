"""The gossip explorer (C7): exhaustive on the correct backend, shortest traces on broken ones.

These tests are about the search (``gossip_search.search``): its counts, bounds, batches and traces.
``explore`` runs the same search and then the controls, which on these small bounds cost many times
the search itself; the controls have their own tests (``test_modelcheck_gossip_controls.py``,
``test_gossip_blind_controls.py``, ``test_gossip_census.py``), and ``canonmerge check`` runs them."""

import pytest

from modelcheck.gossip import GossipConfig, explore
from modelcheck.gossip_search import search
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from spec import InputError
from tests.broken_backends import plant, replay_planted

REF = ReferenceBackend()
TIES = universe("ties")


@pytest.mark.full  # the default run of canonmerge check (verify's test) explores the same bounds with symmetry
def test_default_bounds_are_exhaustive_and_hold():
    r = explore(REF, TIES)  # its time is a figure in docs/RESULTS.md, not a test
    assert r.violation is None and r.exhaustive
    assert (r.states, r.transitions, r.depth) == (41105, 185427, 16)
    assert r.fair_exchanges == r.states
    # every state object is rendered by its own call (never one memo entry per set): far more
    # render calls than there are sets
    assert r.renders > r.states


def test_smaller_bounds_give_smaller_spaces():
    assert search(REF, TIES, GossipConfig(in_flight=1)).states == 1683
    r = search(REF, TIES, GossipConfig(replicas=2, fragments=1))
    assert r.violation is None and r.exhaustive and r.states > 1


def test_state_bound_makes_it_non_exhaustive():
    r = search(REF, TIES, GossipConfig(max_states=100))
    assert not r.exhaustive and r.states == 100 and r.violation is None


def test_merge_keeping_duplicates_fails_fair_exchange_at_the_shallowest_depth():
    bad = plant(REF, "merge-keeps-duplicates")
    r = search(bad, TIES, mutant="merge-keeps-duplicates", backend_name="reference")
    assert r.kind == "fair-exchange" and r.violation["claim"] == "C7"
    assert r.violation["mutant"] == "merge-keeps-duplicates"
    again = replay_planted(r.violation, REF)
    assert again.reproduced and again.same_bytes
    assert not replay_planted(dict(r.violation, mutant=None), REF).reproduced
    # BFS: nothing violates at a smaller depth
    shallower = search(bad, TIES, GossipConfig(max_depth=r.violation_depth - 1))
    assert shallower.violation is None


def test_arrival_order_render_breaks_equal_sets_render_equal():
    bad = plant(REF, "order-by-arrival")
    r = search(bad, TIES, mutant="order-by-arrival", backend_name="reference", fair_exchange=False)
    assert r.kind == "same-set" and r.violation_depth == 6
    ops = [op["op"] for op in r.violation["ops"]]
    assert ops == ["publish", "publish", "send", "send", "deliver", "deliver"]
    assert replay_planted(r.violation, REF).reproduced
    assert not replay_planted(dict(r.violation, mutant=None), REF).reproduced
    assert search(bad, TIES, GossipConfig(max_depth=5), fair_exchange=False).violation is None


@pytest.mark.parametrize("mutant", ["order-by-arrival", "render-depends-on-merge-tree", "unstable-sort"])
def test_render_bugs_fail_fair_exchange(mutant):
    r = search(plant(REF, mutant), TIES, mutant=mutant)
    assert r.violation is not None and replay_planted(r.violation, REF).reproduced


@pytest.mark.parametrize("config", [GossipConfig(replicas=1), GossipConfig(fragments=0),
                                    GossipConfig(fragments=8), GossipConfig(in_flight=0),
                                    GossipConfig(homes=(0, 5, 1)), GossipConfig(max_states=0)])
def test_bad_bounds_are_input_errors(config):
    with pytest.raises(InputError):
        explore(REF, TIES, config)


def _outcome(r):
    """Everything a run reports but its timing and render count (a batch renders the nodes
    reached after a violating one too)."""
    return (r.states, r.transitions, r.depth, r.fair_exchanges, r.exhaustive, r.kind, r.violation_depth,
            r.violation and r.violation["ops"])


@pytest.mark.parametrize("mutant, fair", [(None, True), ("merge-keeps-duplicates", True),
                                          ("order-by-arrival", False), ("unstable-sort", True)])
@pytest.mark.parametrize("bounds", [dict(), dict(max_states=700), dict(max_depth=5)])
def test_checking_nodes_in_batches_reports_what_checking_each_at_once_does(monkeypatch, mutant, fair, bounds):
    """Nodes are checked CHECK_BATCH at a time; a violation (kind, depth, trace) and the counts
    are what a search checking each node the moment it is reached would report."""
    import modelcheck.gossip_search as gossip

    backend = plant(REF, mutant) if mutant else REF
    config = GossipConfig(symmetry=True, in_flight=2 if mutant else 1, **bounds)  # 1: the whole space, fast
    batched = search(backend, TIES, config, mutant=mutant, fair_exchange=fair)
    monkeypatch.setattr(gossip, "CHECK_BATCH", 1)
    single = search(backend, TIES, config, mutant=mutant, fair_exchange=fair)
    assert _outcome(batched) == _outcome(single)
    if not bounds:  # the unbounded runs: every planted bug is found, the correct backend holds
        assert (batched.violation is None) == (mutant is None)
