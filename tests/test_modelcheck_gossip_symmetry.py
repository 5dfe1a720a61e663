"""Gossip symmetry reduction: one state per orbit of replica relabellings (that keep every
unpublished fragment's home), the same verdicts, and both kinds of violation still caught with
replayable traces.  Small configurations only (about a second each)."""

from collections import deque

from modelcheck.gossip import GossipConfig
from modelcheck.gossip_model import GossipModel
from modelcheck.gossip_search import search  # the search alone: the controls have their own tests
from modelcheck.gossip_symmetry import Symmetry
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from tests.broken_backends import plant, replay_planted

REF = ReferenceBackend()
TIES = universe("ties")
SMALL = dict(in_flight=1)


def every_node(config: GossipConfig) -> list:
    """All reachable nodes without reduction (a plain BFS over the explorer's own moves)."""
    world, keys = GossipModel(REF, TIES, config), Symmetry(config)
    root = world.initial()
    seen = {keys.canonical(root): root}
    queue = deque([root])
    while queue:
        n = queue.popleft()
        for action in world.successors(n):
            child = world.apply(n, action)
            key = keys.canonical(child)
            if key not in seen:
                seen[key] = child
                queue.append(child)
    return list(seen.values())


def test_one_state_per_orbit_and_the_same_verdict():
    shape = dict(replicas=3, fragments=2)
    full = search(REF, TIES, GossipConfig(**shape, **SMALL))
    reduced = search(REF, TIES, GossipConfig(**shape, **SMALL, symmetry=True))
    assert full.violation is None and reduced.violation is None and reduced.exhaustive
    orbits = Symmetry(GossipConfig(**shape, **SMALL, symmetry=True))
    nodes = every_node(GossipConfig(**shape, **SMALL))
    assert len(nodes) == full.states
    assert reduced.states == len({orbits.orbit_key(n) for n in nodes}) < full.states


def test_orbit_key_is_invariant_under_relabelling_replicas_once_everything_is_published():
    """Swapping two replicas' roles in a node (states, message endpoints) keeps its orbit key."""
    config = GossipConfig(replicas=3, fragments=2, **SMALL, symmetry=True)
    world = Symmetry(config)
    nodes = [n for n in every_node(GossipConfig(replicas=3, fragments=2, **SMALL))
             if len(n.published) == config.fragments]
    swap = {0: 1, 1: 0, 2: 2}

    def relabel(n):
        states = tuple(n.states[swap[r]] for r in range(config.replicas))
        move = lambda pool: tuple(((swap[s], swap[d], k), snap) for (s, d, k), snap in pool)  # noqa: E731
        marks = tuple(n.marks[swap[r]] for r in range(config.replicas))
        return type(n)(states, marks, n.published, move(n.flight), move(n.dropped))

    assert nodes
    for n in nodes[:300]:
        assert world.orbit_key(relabel(n)) == world.orbit_key(n)


def test_state_level_bug_still_fails_fair_exchange_with_symmetry():
    bad = plant(REF, "merge-keeps-duplicates")
    r = search(bad, TIES, GossipConfig(symmetry=True), mutant="merge-keeps-duplicates", backend_name="reference")
    assert r.kind == "fair-exchange" and r.violation["claim"] == "C7"
    again = replay_planted(r.violation, REF)
    assert again.reproduced and again.same_bytes
    assert not replay_planted(dict(r.violation, mutant=None), REF).reproduced


def test_render_level_bug_still_breaks_equal_sets_with_symmetry():
    bad = plant(REF, "order-by-arrival")
    r = search(bad, TIES, GossipConfig(symmetry=True), mutant="order-by-arrival", backend_name="reference",
               fair_exchange=False)
    assert r.kind == "same-set" and r.violation_depth == 6
    assert replay_planted(r.violation, REF).reproduced
    assert not replay_planted(dict(r.violation, mutant=None), REF).reproduced
