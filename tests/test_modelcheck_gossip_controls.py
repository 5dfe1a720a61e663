"""The gossip explorer's controls: its canary is seen, every merge of the symmetry reduction is a
proved relabelling, the reduced and plain searches agree on a small configuration — and bugs
planted in the explorer's own source blind it visibly: ``canonmerge check`` exits 1 naming the
instrument."""

from __future__ import annotations

import dataclasses
import json

import pytest

import modelcheck.gossip_symmetry as gossip_symmetry
from audit import Patch, ScratchCopy
from modelcheck.gossip import explore
from modelcheck.gossip_controls import CROSS_CHECK, ArrivalOrder, canary, cross_check, orbit_count
from modelcheck.gossip_model import GossipConfig, GossipModel, Node
from modelcheck.gossip_search import search
from modelcheck.gossip_symmetry import Symmetry
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from tests.audit_helpers import failing_rows

REF = ReferenceBackend()
TIES = universe("ties")
SMALL = GossipConfig(replicas=3, fragments=2, in_flight=1)
GOSSIP_ROWS = {("C7", "gossip: equal sets render equal"), ("C7", "gossip: fair exchange converges")}
# the product's own command on a small gossip configuration (its shards in process)
COMMAND = ("check", "--only", "C7", "--universe", "ties", "--replicas", "3", "--fragments", "2",
           "--in-flight", "1", "--workers", "1", "--json")


@pytest.mark.parametrize("symmetry", [False, True])
def test_every_run_sees_its_canary_and_reports_it(symmetry):
    r = explore(REF, TIES, dataclasses.replace(SMALL, symmetry=symmetry))
    assert r.violation is None and not r.blind
    seen = r.details["canary"]
    assert seen["seen"] and {k: c["depth"] for k, c in seen["checks"].items()} == {"same-set": 6, "fair-exchange": 0}
    assert all(c["trace_reproduces"] for c in seen["checks"].values())
    # both reductions are cross-checked whichever the run uses
    assert r.details["reduction_check"]["agree"] and not r.details["reduction_check"]["fold_drops"]
    assert all(c["agree"] for c in r.details["reduction_checks"].values())
    assert not seen["refused_copy"]["replays"] and seen["refused_copy"]["ops"] == 5


def test_the_canary_is_an_order_by_arrival_render_the_plain_backend_passes():
    """The control is negative because of its render: the same search on the backend it wraps holds."""
    assert search(REF, TIES, GossipConfig(replicas=2, fragments=2, in_flight=2), fair_exchange=False).violation is None
    bad = search(ArrivalOrder(REF), TIES, GossipConfig(replicas=2, fragments=2, in_flight=2), fair_exchange=False)
    assert bad.kind == "same-set" and bad.violation_depth == 6


def test_a_canary_that_is_not_reported_blinds_the_run(monkeypatch):
    import modelcheck.gossip_controls as controls

    monkeypatch.setattr(controls, "CANARY_EXPECTED", {"same-set": 5, "fair-exchange": 0})
    r = explore(REF, TIES, SMALL)
    assert not r.details["canary"]["seen"] and r.blind and "canary" in r.blind[0]


def test_the_reduction_merges_only_proved_relabellings_and_matches_the_brute_force_orbits():
    r = search(REF, TIES, dataclasses.replace(SMALL, in_flight=2, symmetry=True))
    assert r.merges > r.states and r.unproved_merges == 0
    checked = cross_check(REF, TIES, fair_exchange=True)
    assert checked["agree"] and checked["orbits_by_brute_force"] == checked["reduced_states"] < checked["plain_states"]
    plain = search(REF, TIES, CROSS_CHECK, keep_keys=True)
    assert orbit_count(plain.reached, CROSS_CHECK) == checked["reduced_states"]


def test_relabelled_digests_tell_relabellings_from_other_nodes():
    config = GossipConfig(replicas=3, fragments=1, in_flight=2, symmetry=True)
    sym = Symmetry(config)
    model = GossipModel(REF, TIES, config)
    n = model.run_actions(model.initial(), [("publish", 0), ("send", 0, 1), ("send", 0, 2)])[0]
    n = model.apply(n, ("deliver", (0, 1, n.marks[0])))
    swapped = Node((n.states[0], n.states[2], n.states[1]), (n.marks[0], n.marks[2], n.marks[1]), n.published,
                   tuple(((s, {1: 2, 2: 1}.get(d, d), m), x) for (s, d, m), x in n.flight), n.dropped)
    (key_a, label_a), (key_b, label_b) = sym.orbit(n), sym.orbit(swapped)
    assert key_a == key_b and sym.relabelled(n, label_a) == sym.relabelled(swapped, label_b)
    other = n._replace(flight=())  # not a relabelling: a message fewer
    assert sym.relabelled(other, sym.orbit(other)[1]) != sym.relabelled(n, label_a)
    with pytest.raises(ValueError):
        sym.relabelled(n, [0, 0, 1])


def test_a_lossy_orbit_key_is_caught_in_the_search_and_by_the_cross_check(monkeypatch):
    """In process, the key forgets every replica's state: the merges are not relabellings."""
    orbit = gossip_symmetry.Symmetry.orbit

    def lossy(self, n):
        return orbit(self, n._replace(marks=tuple(0 if m >= 0 else m for m in n.marks)))

    monkeypatch.setattr(gossip_symmetry.Symmetry, "orbit", lossy)
    r = explore(REF, TIES, dataclasses.replace(SMALL, symmetry=True))
    assert r.unproved_merges > 0 and not r.details["reduction_check"]["agree"]
    example = r.details["unproved_merge"]  # the first: the moves to the node and to its representative
    assert example["moves"] and example["moves"] != example["representative_moves"]
    # the merges, and both cross-checks (its canary, reduced too, goes unseen)
    assert sum("symmetry" in b for b in r.blind) == 3


# --- bugs planted in the source of a scratch copy, caught by the product's command -----------------

SHARED_RECORD = Patch("modelcheck/gossip_verdict.py", "                    record = [self.set_number(state), None]\n",
                      "                    record = self.__dict__.setdefault('by_set', {}).setdefault(\n"
                      "                        self.set_number(state), [self.set_number(state), None])\n")
# two orbit keys that merge nodes no relabelling relates: a message in flight with the same one
# dropped; replicas holding different states once messages are in flight
LOSSY_KEYS = {
    "pools not told apart": Patch("modelcheck/gossip_symmetry.py",
                                  "        for kind, pool in ((0, n.flight), (1, n.dropped)):\n",
                                  "        for kind, pool in ((0, n.flight), (0, n.dropped)):\n"),
    "states left out of the signatures": Patch("modelcheck/gossip_symmetry.py", "sig.append((marks[r], *homes[r],",
                                               "sig.append((0, *homes[r],"),
}


def _blind(stdout: str) -> list[str]:
    return json.loads(stdout)["parts"][0]["data"]["gossip"]["blind"]


@pytest.mark.parametrize("extra", [(), ("--fold-drops",)], ids=["", "fold-drops"])
def test_the_command_passes_with_its_controls_on_an_unpatched_copy(extra, tmp_path):
    out = ScratchCopy(tmp_path).run(*COMMAND, *extra, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    gossip = json.loads(out.stdout)["parts"][0]["data"]["gossip"]
    assert gossip["canary"]["seen"] and gossip["reduction_check"]["agree"] and gossip["blind"] == []


def test_a_render_record_shared_by_set_blinds_the_verdict_and_the_command_says_so(tmp_path):
    out = ScratchCopy(tmp_path).apply(SHARED_RECORD).run(*COMMAND, timeout=900)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert GOSSIP_ROWS <= failing_rows(out.stdout)
    assert any(b.startswith("gossip verdict: its canary") for b in _blind(out.stdout))


@pytest.mark.parametrize("plant", [pytest.param(p, id=name, marks=() if i == 0 else pytest.mark.audit)
                                   for i, (name, p) in enumerate(LOSSY_KEYS.items())])
def test_an_orbit_key_merging_non_relabellings_fails_the_command(plant, tmp_path):
    out = ScratchCopy(tmp_path).apply(plant).run(*COMMAND, timeout=900)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert GOSSIP_ROWS <= failing_rows(out.stdout)
    blind = _blind(out.stdout)
    assert any("merge(s) of states that are not replica relabellings" in b for b in blind)
    assert any("disagree" in b for b in blind)
