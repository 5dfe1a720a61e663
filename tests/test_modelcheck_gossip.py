"""The gossip explorer (C7): exhaustive on the correct backend, shortest traces on broken ones."""

import pytest

from modelcheck.gossip import GossipConfig, explore
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
    assert explore(REF, TIES, GossipConfig(in_flight=1)).states == 1683
    r = explore(REF, TIES, GossipConfig(replicas=2, fragments=1))
    assert r.violation is None and r.exhaustive and r.states > 1


def test_state_bound_makes_it_non_exhaustive():
    r = explore(REF, TIES, GossipConfig(max_states=100))
    assert not r.exhaustive and r.states == 100 and r.violation is None


def test_merge_keeping_duplicates_fails_fair_exchange_at_the_shallowest_depth():
    bad = plant(REF, "merge-keeps-duplicates")
    r = explore(bad, TIES, mutant="merge-keeps-duplicates", backend_name="reference")
    assert r.kind == "fair-exchange" and r.violation["claim"] == "C7"
    assert r.violation["mutant"] == "merge-keeps-duplicates"
    again = replay_planted(r.violation, REF)
    assert again.reproduced and again.same_bytes
    assert not replay_planted(dict(r.violation, mutant=None), REF).reproduced
    # BFS: nothing violates at a smaller depth
    shallower = explore(bad, TIES, GossipConfig(max_depth=r.violation_depth - 1))
    assert shallower.violation is None


def test_arrival_order_render_breaks_equal_sets_render_equal():
    bad = plant(REF, "order-by-arrival")
    r = explore(bad, TIES, mutant="order-by-arrival", backend_name="reference", fair_exchange=False)
    assert r.kind == "same-set" and r.violation_depth == 6
    ops = [op["op"] for op in r.violation["ops"]]
    assert ops == ["publish", "publish", "send", "send", "deliver", "deliver"]
    assert replay_planted(r.violation, REF).reproduced
    assert not replay_planted(dict(r.violation, mutant=None), REF).reproduced
    assert explore(bad, TIES, GossipConfig(max_depth=5), fair_exchange=False).violation is None


@pytest.mark.parametrize("mutant", ["order-by-arrival", "render-depends-on-merge-tree", "unstable-sort"])
def test_render_bugs_fail_fair_exchange(mutant):
    r = explore(plant(REF, mutant), TIES, mutant=mutant)
    assert r.violation is not None and replay_planted(r.violation, REF).reproduced


@pytest.mark.parametrize("config", [GossipConfig(replicas=1), GossipConfig(fragments=0),
                                    GossipConfig(fragments=8), GossipConfig(in_flight=0),
                                    GossipConfig(homes=(0, 5, 1)), GossipConfig(max_states=0)])
def test_bad_bounds_are_input_errors(config):
    with pytest.raises(InputError):
        explore(REF, TIES, config)
