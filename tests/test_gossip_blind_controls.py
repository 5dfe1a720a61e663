"""The gossip explorer's controls that need no second fault: a copy of the canary's trace that
must not replay, comparisons fed to the verdict without their renders that must be counted, a fair
exchange counted for every state reached, the canary's convergence trace replayed only with its
exchange, an orbit key that must tell apart messages the replicas' signatures cannot, and the
folded reduction cross-checked in every run.  Each is shown to see the bug it is there for: the
bug, planted by the audit's own patch text, makes the exploration (in process) and ``canonmerge
check`` (on a scratch copy, ``-m audit``) report the explorer blind."""

from __future__ import annotations

import dataclasses

import pytest

import modelcheck.gossip as gossip
import modelcheck.gossip_controls as controls
import modelcheck.gossip_search as gossip_search
import modelcheck.gossip_symmetry as gossip_symmetry
import modelcheck.gossip_verdict as gossip_verdict
from audit import Patch
from modelcheck.gossip import explore
from modelcheck.gossip_controls import KEY_NODES, key_control, unrendered_control
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from tests.test_gossip_reference import _mutated, assert_command_names_blind
from tests.test_modelcheck_gossip_controls import SMALL

REF = ReferenceBackend()
TIES = universe("ties")

# (the module whose source holds the function, the class or module it is called through, function,
# old text, new text, the start of the blind line it must cause)
BUGS = {
    "a canary trace counted as replayed without replaying": (
        controls, controls, "_replays", "trace is not None and replay(", "trace is not None or replay(",
        "gossip replay: a copy of its canary's same-set trace one move short"),
    "a copy of the canary trace shorter than one move short": (
        controls, controls, "refused_copy", 'ops=trace["ops"][:-1]', 'ops=trace["ops"][:+1]',
        "gossip replay: the copy of its canary's same-set trace refused was 1 moves, not 5"),
    "a pair with one digest missing compared": (
        gossip_verdict, gossip_verdict.Verdict, "first_violation", "if a[1] is None or b[1] is None:",
        "if a[1] is None and b[1] is None:",
        "gossip verdict: a comparison fed without its renders (one digest missing) was reported as a same-set"),
    "an unrendered fair exchange not counted": (
        gossip_verdict, gossip_verdict.Verdict, "first_violation",
        "0 if exchanged is None else len(exchanged) - len(rendered)",
        "0 if (exchanged is None) or True else len(exchanged) - len(rendered)",
        "gossip verdict: comparisons fed without their renders (a fair exchange unrendered) were not all counted"),
    "an orbit key without its message list": (
        gossip_symmetry, gossip_symmetry.Symmetry, "orbit", "chain.from_iterable(best or ())",
        "chain.from_iterable(best and ())", "gossip symmetry reduction: its orbit key does not tell"),
    "fair exchanges counted by assignment (the last batch's only)": (
        gossip_search, gossip_search, "_search", "result.fair_exchanges += checked if fair_exchange else 0",
        "result.fair_exchanges = checked if fair_exchange else 0", "gossip fair exchange:"),
    "a convergence trace without its exchange": (
        gossip_search, gossip_search, "_search", 'model.fair_exchange(n) if result.kind == "fair-exchange" else []',
        'model.fair_exchange(n) if (result.kind == "fair-exchange") and False else []',
        "gossip verdict: its canary (an order-by-arrival render) was not reported"),
    "the folded cross-check fed no plain states": (
        controls, controls, "compare_reductions", "for k in plain.reached or []}", "for k in plain.reached and []}",
        "gossip reductions (symmetry and drop folding): the reduced and plain searches disagree"),
}


def test_every_run_runs_the_controls_and_they_hold():
    r = explore(REF, TIES, SMALL)
    assert not r.blind
    assert r.details["canary"]["refused_copy"] == {"ops": 5, "expected_ops": 5, "replays": False}
    assert [(c["due"], c["counted"], c["violation"]) for c in r.details["unrendered_control"]] == [
        (1, 1, None), (1, 1, None), (3, 3, None)]
    assert r.details["key_control"] == {"relabelling_merged": True, "cycles_told_apart": True, "nodes_as_claimed": True}
    assert [c["fold_drops"] for c in r.details["reduction_checks"].values()] == [False, True]


def test_the_key_controls_nodes_are_what_they_claim():
    """Independently of the key: every replica sends one message and is sent one in each node;
    the relabelling maps the first onto the second; the third is two cycles of two."""
    for pairs in KEY_NODES.values():
        assert sorted(s for s, _ in pairs) == sorted(d for _, d in pairs) == [0, 1, 2, 3]
    pi = {0: 2, 1: 0, 2: 3, 3: 1}
    assert sorted((pi[s], pi[d]) for s, d in KEY_NODES["four-cycle"]) == sorted(KEY_NODES["four-cycle relabelled"])
    step = dict(KEY_NODES["two two-cycles"])
    assert all(step[step[r]] == r for r in range(4))  # no four-cycle: every replica is back after two steps


@pytest.mark.parametrize("pairs", [((0, 1), (1, 1), (2, 3), (3, 2)), ((0, 2), (1, 0), (2, 3), (3, 2)),
                                   ((0, 1), (1, 2), (2, 3), (3, 0))])
def test_key_nodes_edited_out_of_their_claim_blind_the_exploration(pairs, monkeypatch):
    """A third node where some replica sends to itself, or is sent two, or that is a four-cycle
    after all: the run's premise check reports the key control blind."""
    monkeypatch.setitem(KEY_NODES, "two two-cycles", pairs)
    assert key_control()["nodes_as_claimed"] is False
    r = explore(REF, TIES, SMALL)
    assert any("control nodes are not what they claim" in b for b in r.blind), r.blind


def test_a_key_that_forgets_its_messages_and_a_verdict_that_compares_a_missing_digest_fail_the_controls(monkeypatch):
    _, cls, method, old, new, _ = BUGS["an orbit key without its message list"]
    monkeypatch.setattr(cls, method, _mutated(gossip_symmetry, cls, method, old, new))
    assert key_control() == {"relabelling_merged": True, "cycles_told_apart": False, "nodes_as_claimed": True}
    _, cls, method, old, new, _ = BUGS["a pair with one digest missing compared"]
    monkeypatch.setattr(cls, method, _mutated(gossip_verdict, cls, method, old, new))
    assert [(c["counted"], c["violation"]) for c in unrendered_control(TIES)] == [
        (1, None), (0, (0, "same-set", (0, 1))), (3, None)]


@pytest.mark.parametrize("name", BUGS)
def test_each_bug_blinds_the_exploration(name, monkeypatch):
    module, holder, method, old, new, blind = BUGS[name]
    monkeypatch.setattr(holder, method, _mutated(module, holder, method, old, new))
    r = explore(REF, TIES, dataclasses.replace(SMALL, symmetry=True))
    assert any(b.startswith(blind) for b in r.blind), r.blind


PLANTS = {name: Patch(module.__name__.replace(".", "/") + ".py", old, new)
          for name, (module, _, _, old, new, _) in BUGS.items()}


@pytest.mark.audit
@pytest.mark.parametrize("name", PLANTS)
def test_the_command_fails_naming_the_blind_instrument(name, tmp_path):
    assert_command_names_blind(tmp_path, PLANTS[name], BUGS[name][5])


def test_a_moves_check_that_leaves_out_the_folding_blinds_the_run(monkeypatch):
    """Each configuration must be checked plain and folded: a check run plain twice is no check of folding."""
    mutated = _mutated(controls, controls, "moves_check", "for fold in (False, True):", "for fold in (False, False):")
    monkeypatch.setattr(gossip, "moves_check", mutated)
    r = explore(REF, TIES, SMALL)
    plain_only = "not each checked plain and folded (" + ", ".join(["plain"] * 6) + ")"
    assert any(b.startswith("gossip moves:") and plain_only in b for b in r.blind), r.blind


def test_the_cross_check_comparison_must_see_its_doctored_copies(monkeypatch):
    """The folded comparison joined by 'or' (when verdicts agree, the folded key set and the plain
    states are no longer compared): the doctored copy with one plain state more is then accepted,
    so the cross-check reports itself blind."""
    monkeypatch.setattr(controls, "compare_reductions", _mutated(
        controls, controls, "compare_reductions", "agree = (agree and {folded(k)", "agree = (agree or {folded(k)"))
    checked = controls.cross_check(REF, TIES, True, fold_drops=True)
    assert checked["controls_unseen"] == ["plain"]
    assert controls.cross_check(REF, TIES, True, fold_drops=False)["controls_unseen"] == []
    r = explore(REF, TIES, SMALL)
    assert any("did not see a copy with one state more in the plain search" in b for b in r.blind), r.blind


def test_the_bounded_check_must_see_its_doctored_copies(monkeypatch):
    """The bounded comparison with its violation test joined by 'or' accepts any bounded search
    that found no violation: the copies with one state more, or called exhaustive, then agree too,
    and the exploration reports the bounded check blind."""
    monkeypatch.setattr(controls, "bounded_agrees", _mutated(
        controls, controls, "bounded_agrees", "and not exhaustive and violation is None",
        "and not exhaustive or violation is None"))
    r = explore(REF, TIES, SMALL)
    assert any("bounded check's comparison did not see" in b for b in r.blind), r.blind


# the same plants as the in-process tests above, through ``canonmerge check`` on a scratch copy
COMMAND_PLANTS = {
    "the folded cross-check comparison joined by 'or'": (
        Patch("modelcheck/gossip_controls.py", "agree = (agree and {folded(k)", "agree = (agree or {folded(k)"),
        "gossip reductions (symmetry and drop folding): the comparison did not see a copy with one state more"),
    "the bounded comparison's violation test joined by 'or'": (
        Patch("modelcheck/gossip_controls.py", "and not exhaustive and violation is None",
              "and not exhaustive or violation is None"),
        "gossip moves: the bounded check's comparison did not see"),
    "a replica of the key control's third node sending to itself": (
        Patch("modelcheck/gossip_controls.py", "((0, 1), (1, 0), (2, 3), (3, 2))}", "((0, 1), (1, 1), (2, 3), (3, 2))}"),
        "gossip symmetry reduction: the orbit key's control nodes are not what they claim"),
    "a replica of the key control's third node sent two messages": (
        Patch("modelcheck/gossip_controls.py", "((0, 1), (1, 0), (2, 3), (3, 2))}", "((0, 2), (1, 0), (2, 3), (3, 2))}"),
        "gossip symmetry reduction: the orbit key's control nodes are not what they claim"),
}


@pytest.mark.audit
@pytest.mark.parametrize("name", COMMAND_PLANTS)
def test_the_command_fails_naming_the_blind_comparison_or_premise(name, tmp_path):
    assert_command_names_blind(tmp_path, *COMMAND_PLANTS[name])
