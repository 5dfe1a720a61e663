"""A convergence trace reproduces only after a complete exchange: every replica was delivered
every fragment by the trace's ops.  A trace cut before its exchange leaves a replica behind,
which is no violation of C7, so it must not replay as one; a merge that loses fragments is still
judged after the exchange, because what counts is what the ops delivered, not what a state kept."""

from __future__ import annotations

from modelcheck.gossip import explore
from modelcheck.reference import ReferenceBackend
from modelcheck.trace_replay import delivered_fragments, replay
from modelcheck.universes import universe
from tests.broken_backends import plant, replay_planted

REF = ReferenceBackend()
TIES = universe("ties")


class LeftMerge(ReferenceBackend):
    """A lossy merge: the receiving replica keeps its own state and drops the incoming one."""

    name = "reference-left-merge"

    def merge(self, a, b):
        return a


def _fair_exchange_trace(backend, mutant=None):
    r = explore(backend, TIES, mutant=mutant, backend_name=backend.name)
    assert r.kind == "fair-exchange", r.kind
    return r.violation


def test_a_full_convergence_trace_reproduces_and_the_same_trace_cut_short_does_not():
    trace = _fair_exchange_trace(plant(REF, "merge-keeps-duplicates"), "merge-keeps-duplicates")
    full = replay_planted(trace, REF)
    assert full.reproduced and full.same_bytes
    replicas = trace["gossip"]["replicas"]
    assert all(d == {0, 1, 2} for d in delivered_fragments(trace["ops"], [0, 1, 2], replicas))
    sends = [k for k, op in enumerate(trace["ops"]) if op["op"] == "send"]
    cut = dict(trace, ops=trace["ops"][:sends[-1]])  # the last exchange's send and delivery left out
    again = replay_planted(cut, REF)
    assert not again.reproduced and "was delivered fragments" in again.observed


def test_a_lossy_merge_is_judged_by_what_was_delivered():
    bad = LeftMerge()
    trace = _fair_exchange_trace(bad)
    again = replay(trace, bad)
    assert again.reproduced and again.same_bytes
    assert not replay(trace, REF).reproduced  # the correct merge converges on the same ops


def test_delivered_fragments_follow_snapshots_not_later_state():
    ops = [{"op": "publish", "replica": 0, "fragment": 0}, {"op": "send", "src": 0, "dst": 1},
           {"op": "publish", "replica": 0, "fragment": 1}, {"op": "deliver", "msg": 1}]
    assert delivered_fragments(ops, [0, 1], 3) == [{0, 1}, {0}, set()]
