"""Drop folding (``GossipConfig.fold_drops``): the folded search reaches exactly the full model's
states with their dropped messages back in flight, the full count is the sum of their splits, it
composes with the symmetry reduction (brute-force orbits), and it gives the plain search's verdict
on the correct backend and on every planted bug — on every small configuration where both fit."""

from __future__ import annotations

import dataclasses
import json

import pytest

from audit import Patch, ScratchCopy

from modelcheck.gossip import explore
from modelcheck.gossip_controls import orbit_count
from modelcheck.gossip_model import GossipConfig, folded, splits
from modelcheck.gossip_search import search
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from tests.audit_helpers import failing_rows
from tests.broken_backends import plant
from tests.test_modelcheck_gossip_controls import COMMAND, GOSSIP_ROWS

REF = ReferenceBackend()
TIES = universe("ties")
CONFIGS = [GossipConfig(replicas=3, fragments=2, in_flight=1), GossipConfig(replicas=2, fragments=2, in_flight=3),
           GossipConfig(replicas=2, fragments=3, in_flight=2), GossipConfig(replicas=3, fragments=2, in_flight=2)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.replicas}x{c.fragments}<={c.in_flight}")
def test_the_folded_states_are_the_plain_ones_with_drops_back_in_flight(config):
    plain = search(REF, TIES, config, keep_keys=True)
    fold = search(REF, TIES, dataclasses.replace(config, fold_drops=True), keep_keys=True)
    assert plain.violation is None and fold.violation is None and plain.exhaustive and fold.exhaustive
    assert {folded(k) for k in plain.reached} == set(fold.reached)
    assert sum(splits(k[2]) for k in fold.reached) == plain.states == fold.unfolded_states > fold.states
    both = search(REF, TIES, dataclasses.replace(config, fold_drops=True, symmetry=True))
    assert both.unproved_merges == 0 and both.states == orbit_count(fold.reached, config)
    reduced = search(REF, TIES, dataclasses.replace(config, symmetry=True))
    assert both.unfolded_states >= reduced.states  # the bound the report gives with symmetry on


@pytest.mark.parametrize("mutant, fair", [("merge-keeps-duplicates", True), ("order-by-arrival", False),
                                          ("unstable-sort", True), ("render-depends-on-merge-tree", True)])
@pytest.mark.parametrize("config", [GossipConfig(replicas=2, fragments=3, in_flight=2),
                                    GossipConfig(replicas=3, fragments=2, in_flight=2)],
                         ids=lambda c: f"{c.replicas}x{c.fragments}<={c.in_flight}")
def test_planted_bugs_get_the_same_verdict_folded_or_not(mutant, fair, config):
    bad = plant(REF, mutant)
    verdicts = set()
    for symmetry in (False, True):
        for fold in (False, True):
            r = search(bad, TIES, dataclasses.replace(config, symmetry=symmetry, fold_drops=fold),
                       mutant=mutant, fair_exchange=fair)
            verdicts.add((r.kind, r.violation_depth))
    assert len(verdicts) == 1
    kind, _ = verdicts.pop()
    assert kind or (mutant, config.replicas) == ("render-depends-on-merge-tree", 3)  # that one holds on 3 x 2


@pytest.mark.parametrize("mutant", ["merge-keeps-duplicates", "order-by-arrival", "unstable-sort",
                                    "render-depends-on-merge-tree"])
def test_planted_bugs_are_caught_by_the_folded_reduced_search_at_the_default_bounds(mutant):
    r = explore(plant(REF, mutant), TIES, GossipConfig(symmetry=True, fold_drops=True), mutant=mutant)
    assert r.violation is not None and not r.blind


def test_a_folded_run_reports_what_it_saved_and_cross_checks_the_folding():
    r = explore(REF, TIES, GossipConfig(replicas=3, fragments=2, in_flight=2, symmetry=True, fold_drops=True))
    assert r.violation is None and not r.blind and r.details["folded_moves"] > 0
    checked = r.details["reduction_check"]
    assert checked["agree"] and checked["fold_drops"]
    assert checked["plain_states_from_folded"] == checked["plain_states"] > checked["folded_states"] > checked["reduced_states"]
    assert r.details["canary"]["seen"] and r.details["canary"]["fold_drops"]


def test_a_folding_that_is_not_the_documented_relation_is_caught_by_the_cross_check(monkeypatch):
    """A folding that forgets to fold the drop (messages are dropped, never re-sent)."""
    from modelcheck.gossip_model import GossipModel

    successors = GossipModel.successors

    def lossy(self, n):
        drops = [("drop", k) for k in dict.fromkeys(k for k, _ in n.flight)] if self.config.fold_drops else []
        return successors(self, n) + drops

    monkeypatch.setattr(GossipModel, "successors", lossy)
    r = explore(REF, TIES, GossipConfig(replicas=3, fragments=2, in_flight=1, fold_drops=True))
    assert not r.details["reduction_check"]["agree"] and any("drop folding" in b for b in r.blind)


FOLDING_IGNORED = Patch("modelcheck/gossip_model.py",
                        'moves = ("deliver", "duplicate") if self.config.fold_drops else',
                        'moves = ("deliver", "duplicate", "drop") if self.config.fold_drops else')


def test_a_folding_that_does_not_fold_fails_the_command(tmp_path):
    """Planted in the source: ``--fold-drops`` still drops (so its states are not the folded ones)."""
    out = ScratchCopy(tmp_path).apply(FOLDING_IGNORED).run(*COMMAND, "--fold-drops", timeout=900)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert GOSSIP_ROWS <= failing_rows(out.stdout)
    blind = json.loads(out.stdout)["parts"][0]["data"]["gossip"]["blind"]
    assert any("drop folding" in b and "disagree" in b for b in blind)
