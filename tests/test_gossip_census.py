"""The gossip census (``modelcheck.gossip_census``): an exact count of the model's reachable states,
packed into integers and expanded a level at a time, written apart from the explorer.  It equals
the independent enumeration (``gossip_reference``) state for state and level for level, the
explorer's orbit counts with symmetry, and every exploration compares its counts with it; a bug
planted in the explorer that no other control sees (moves offered for only the first two messages
in flight, so invisible below three) is seen by it, and so is one planted in the census or in its
comparison."""

from __future__ import annotations

import dataclasses

import pytest

import modelcheck.gossip as gossip
import modelcheck.gossip_census_checks as census_checks
import modelcheck.gossip_census as gossip_census
import modelcheck.gossip_model as gossip_model
from audit import Patch
from modelcheck.gossip import explore
from modelcheck.gossip_census import census
from modelcheck.gossip_model import GossipConfig, GossipModel
from modelcheck.gossip_reference import count
from modelcheck.gossip_search import search
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from spec import ArgumentError
from tests.test_gossip_reference import _mutated, assert_command_names_blind

REF = ReferenceBackend()
TIES = universe("ties")
# (replicas, fragments, in_flight, homes): two replicas nobody's home, messages three deep, homes set
CONFIGS = [(3, 2, 1, None), (2, 2, 2, (1, 1)), (3, 2, 1, (0, 0)), (3, 1, 1, None), (3, 3, 1, None), (2, 3, 2, None),
           (3, 1, 3, None)]
# moves offered for the first two distinct messages in flight only: the moves check and the
# cross-check never hold three messages, so only the census sees it (from in-flight <= 3)
FIRST_TWO = ("successors", "for key in dict.fromkeys(k for k, _ in n.flight):",
             "for key in list(dict.fromkeys(k for k, _ in n.flight))[:2]:")
THREE_DEEP = GossipConfig(replicas=3, fragments=1, in_flight=3, symmetry=True)


@pytest.mark.parametrize("fold", [False, True])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_the_census_is_the_independent_enumeration_level_for_level(config, fold):
    c, ref = census(*config, symmetry=False, fold_drops=fold), count(*config, fold_drops=fold)
    assert (c.states, c.transitions, c.depth, c.levels) == (ref.states, ref.transitions, ref.depth, ref.levels)


@pytest.mark.parametrize("fold", [False, True])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_the_census_counts_the_orbits_the_explorer_reaches(config, fold):
    replicas, fragments, in_flight, homes = config
    r = search(REF, TIES, GossipConfig(replicas, fragments, in_flight, homes, symmetry=True, fold_drops=fold),
               fair_exchange=False)
    c = census(*config, symmetry=True, fold_drops=fold)
    assert r.exhaustive and (r.states, r.transitions, r.depth) == (c.states, c.transitions, c.depth)
    assert c.states < count(*config, fold_drops=fold).states or replicas * fragments <= 3


def test_four_replicas_four_fragments_one_in_flight_folded_is_the_explorers_figure():
    """The explorer's exhaustive 4 x 4, in-flight <= 1, folded (docs/results/scale.md), in under a second."""
    c = census(4, 4, 1)
    assert (c.states, c.transitions, c.depth) == (48_371, 163_576, 17)


def test_a_configuration_past_63_bits_or_with_bad_homes_is_refused_naming_it():
    with pytest.raises(ArgumentError) as e:
        census(4, 4, 3, fold_drops=False)
    assert e.value.argument == "configuration" and "74 bits" in str(e.value)
    with pytest.raises(ArgumentError) as e:
        census(3, 2, 1, (0, 3))
    assert e.value.argument == "homes"
    with pytest.raises(ArgumentError) as e:
        census(1, 2, 1)
    assert e.value.argument == "replicas"
    with pytest.raises(ArgumentError) as e:  # 720 relabellings per state: refused, not minutes
        census(6, 1, 1)
    assert e.value.argument == "replicas" and "at most 120" in str(e.value)
    assert census(6, 1, 1, symmetry=False).states == count(6, 1, 1, None, fold_drops=True).states


def test_a_configuration_the_census_does_not_take_is_reported_not_compared_and_not_blind():
    r = explore(REF, TIES, GossipConfig(replicas=6, fragments=1, in_flight=1, symmetry=True))
    assert not r.blind and not r.details["census"]["compared"] and "at most 120" in r.details["census"]["why"]


def test_every_exploration_compares_its_counts_with_the_census():
    r = explore(REF, TIES, dataclasses.replace(THREE_DEEP, symmetry=False))
    counted = r.details["census"]
    assert not r.blind and counted["compared"] and counted["agree"] and counted["control_seen"]
    assert counted["search"]["states"] == r.states == census(3, 1, 3, symmetry=False, fold_drops=False).states
    bounded = explore(REF, TIES, dataclasses.replace(THREE_DEEP, max_states=50))
    assert not bounded.details["census"]["compared"] and "bound" in bounded.details["census"]["why"]


def test_an_explorer_bug_below_every_other_control_is_seen_by_the_census(monkeypatch):
    monkeypatch.setattr(GossipModel, FIRST_TWO[0], _mutated(gossip_model, GossipModel, *FIRST_TWO))
    r = explore(REF, TIES, THREE_DEEP)
    assert r.violation is None and r.exhaustive
    assert [b for b in r.blind if not b.startswith("gossip census:")] == []
    assert any(b.startswith("gossip census: the search's counts differ") for b in r.blind), r.blind


# (class or module, function, old, new, the start of the blind line)
CENSUS_BUGS = {
    "the comparison skipped on an exhaustive search": (
        census_checks, "census_check", "if result.violation is not None or not result.exhaustive:",
        "if result.violation is not None or result.exhaustive:", "gossip census: the search was exhaustive"),
    "the comparison reported as not made": (
        census_checks, "census_check", 'return {"compared": True, "agree"', 'return {"compared": False, "agree"',
        "gossip census: the search was exhaustive"),
    "no duplicate move": (gossip_census._Census, "successors",
                          "out.append(self.key(r2, pub[at], flight[at], dropped[at]))                 # duplicate",
                          "pass", "gossip census: the search's counts differ"),
    "symmetry over the identity only": (gossip_census._Census, "__init__", "if symmetry else",
                                        "if False else", "gossip census: the search's counts differ"),
    "counts compared by any field": (census_checks, "counts_agree", "return all(", "return any(",
                                     "gossip census: the comparison did not see"),
}


@pytest.mark.parametrize("name", CENSUS_BUGS)
def test_a_bug_in_the_census_or_its_comparison_makes_the_run_blind(monkeypatch, name):
    owner, function, old, new, prefix = CENSUS_BUGS[name]
    module = gossip_census if owner is gossip_census._Census else census_checks
    mutated = _mutated(module, owner, function, old, new)
    monkeypatch.setattr(owner, function, mutated)
    if function == "census_check":  # imported by name into the explorer
        monkeypatch.setattr(gossip, function, mutated)
    r = explore(REF, TIES, THREE_DEEP)
    assert any(b.startswith(prefix) for b in r.blind), r.blind


# the wrong dropped message re-sent when two wait: only the full model (drops not folded) has
# re-sends, so a folded run's own comparison cannot see it; the census's control in every run can
RESEND_FIRST = ("successors", "f2[:, last] = dropped[at][:, j]", "f2[:, last] = dropped[at][:, 0]")


def test_the_census_is_held_to_the_enumeration_in_every_run_also_where_the_run_cannot_see(monkeypatch):
    folded = dataclasses.replace(THREE_DEEP, fold_drops=True)
    clean = explore(REF, TIES, folded)
    assert not clean.blind and clean.details["census_control"] == {"agree": True, "compared": 12, "why": ""}
    monkeypatch.setattr(gossip_census._Census, RESEND_FIRST[0],
                        _mutated(gossip_census, gossip_census._Census, *RESEND_FIRST))
    r = explore(REF, TIES, folded)
    assert r.details["census"]["agree"]  # the run's own configuration has no re-sends
    assert any(b.startswith("gossip census: its counts differ from the independent enumeration's") for b in r.blind), r.blind


# (module or class, function, old, new): a pool sorted over two slots only, whatever its width; the
# field-by-field relabelling packing a dropped slot into the replica sets; both unseen by a run of
# in-flight <= 2 and relabelling tables, so the control holds the census three deep, field by field
DEEP_BUGS = {
    "pools sorted two slots deep": (gossip_census, "_sorted", "for top in range(len(columns) - 1, 0, -1):",
                                    "for top in range(len(columns) - 1, 0, -2):"),
    "a dropped slot among the relabelled sets": (gossip_census._Census, "key",
                                                 "moved_sets = self.p.pack(moved, empty, flight[:, :0], dropped[:, :0])",
                                                 "moved_sets = self.p.pack(moved, empty, flight[:, :0], dropped[:, :1])"),
}


@pytest.mark.parametrize("name", DEEP_BUGS)
def test_a_census_bug_below_the_runs_own_depth_is_seen_by_its_control(monkeypatch, name):
    owner, function, old, new = DEEP_BUGS[name]
    monkeypatch.setattr(owner, function, _mutated(gossip_census, owner, function, old, new))
    r = explore(REF, TIES, GossipConfig(replicas=3, fragments=2, in_flight=1, symmetry=True))
    assert r.details["census"]["agree"]
    assert any(b.startswith("gossip census: its counts differ from the independent enumeration's") for b in r.blind), r.blind


def test_the_packing_widths_are_the_documented_ones():
    """4 x 4 folded fits with three messages in flight (the census of docs/results/scale.md), unfolded not."""
    assert gossip_census.Packing(4, 4, 3, True).bits == 47 and gossip_census.Packing(4, 4, 3, False).bits == 74
    assert gossip_census.Packing(3, 3, 2, False).bits == 3 * 3 + 3 + 2 * 2 * (1 + 2 * 2 + 3)


def test_the_census_control_sees_a_miscount_and_its_own_comparison_weakened(monkeypatch):
    moves = {"configurations": [{"replicas": 2, "fragments": 1, "in_flight": 1, "homes": None, "fold_drops": fold,
                                 "reference": {f: getattr(count(2, 1, 1, None, fold_drops=fold), f)
                                               for f in ("states", "transitions", "depth")}} for fold in (False, True)]}
    assert census_checks.census_control(moves, {})["agree"]
    moves["configurations"][1]["reference"]["transitions"] += 1
    assert "census" in census_checks.census_control(moves, {})["why"]
    assert "not compared on both foldings" in census_checks.census_control({"configurations": moves["configurations"][:1]}, {})["why"]
    monkeypatch.setattr(census_checks, "counts_agree", _mutated(census_checks, census_checks, "counts_agree", "return all(", "return any("))
    moves["configurations"][1]["reference"]["transitions"] -= 1
    assert "one state more was not found to differ" in census_checks.census_control(moves, {})["why"]


# the same, through ``canonmerge check`` on a scratch copy (three messages in flight: the
# explorer's bug shows from there)
COMMAND = ("check", "--only", "C7", "--universe", "ties", "--replicas", "3", "--fragments", "1",
           "--in-flight", "3", "--workers", "1", "--json")
COMMAND_PLANTS = {
    "the explorer offering moves for two messages in flight only": (
        Patch("modelcheck/gossip_model.py", *FIRST_TWO[1:]), "gossip census: the search's counts differ"),
    "the census without its duplicate move": (
        Patch("modelcheck/gossip_census.py", *CENSUS_BUGS["no duplicate move"][2:4]),
        "gossip census: the search's counts differ"),
    "the census re-sending the first dropped message (a folded run)": (
        Patch("modelcheck/gossip_census.py", *RESEND_FIRST[1:]),
        "gossip census: its counts differ from the independent enumeration's", ("--fold-drops",)),
    "the census comparison by any field": (
        Patch("modelcheck/gossip_census_checks.py", "return all(search[f]", "return any(search[f]"),
        "gossip census: the comparison did not see"),
}


@pytest.mark.audit
@pytest.mark.parametrize("name", COMMAND_PLANTS)
def test_the_command_fails_naming_the_census(name, tmp_path):
    patch, prefix, *extra = COMMAND_PLANTS[name]
    assert_command_names_blind(tmp_path, patch, prefix, command=COMMAND + (extra[0] if extra else ()))
