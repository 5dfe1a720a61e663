"""The gossip explorer's moves check and its unrendered-comparison count: the independent
enumeration of the model (``gossip_reference``) agrees with the plain search on small
configurations, agrees with a count made by hand, and bugs planted in the explorer's move
generation or in its verdict's render bookkeeping — which the canary and the cross-check do not
see — make the exploration, and ``canonmerge check``, report the explorer blind."""

from __future__ import annotations

import dataclasses
import inspect
import json
import textwrap

import pytest

import modelcheck.gossip_controls as controls
import modelcheck.gossip_model as gossip_model
import modelcheck.gossip_verdict as gossip_verdict
from audit import Patch, ScratchCopy
from modelcheck.gossip import explore
from modelcheck.gossip_controls import FragmentIndices, moves_check
from modelcheck.gossip_model import GossipConfig, GossipModel
from modelcheck.gossip_reference import Counts, count
from modelcheck.gossip_search import search
from modelcheck.gossip_verdict import Verdict
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from tests.audit_helpers import failing_rows
from tests.test_modelcheck_gossip_controls import COMMAND, GOSSIP_ROWS, SMALL

REF = ReferenceBackend()
TIES = universe("ties")
CONFIGS = [GossipConfig(replicas=3, fragments=2, in_flight=1), GossipConfig(replicas=2, fragments=2, in_flight=2),
           GossipConfig(replicas=2, fragments=3, in_flight=2), GossipConfig(replicas=2, fragments=2, in_flight=3),
           GossipConfig(replicas=3, fragments=2, in_flight=2, homes=(2, 2))]


@pytest.mark.parametrize("fair", [True, False], ids=["fair", "safety"])
@pytest.mark.parametrize("fold", [False, True], ids=["plain", "folded"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.replicas}x{c.fragments}<={c.in_flight}{c.homes or ''}")
def test_the_enumeration_counts_what_the_plain_search_explores(config, fold, fair):
    c = dataclasses.replace(config, fold_drops=fold)
    r = search(REF, TIES, c, fair_exchange=fair)
    assert r.violation is None and r.exhaustive and r.unrendered_comparisons == 0
    ref = count(c.replicas, c.fragments, c.in_flight, c.homes, fold_drops=fold)
    assert (r.states, r.transitions, r.depth, r.folded_moves, r.unfolded_states) == dataclasses.astuple(ref)[:5]
    assert sum(ref.levels) == ref.states and len(ref.levels) == ref.depth + 1
    if fold:  # the folded states stand for exactly the plain ones
        plain = count(c.replicas, c.fragments, c.in_flight, c.homes, fold_drops=False)
        assert ref.unfolded_states == plain.states > ref.states


def test_the_enumeration_matches_a_count_by_hand():
    """2 replicas, 1 fragment at replica 0, in-flight <= 1.  Plain: nothing; published; the
    message 0->1 in flight, dropped; both hold it with nothing in flight, with 0->1 in flight
    (after a duplicate, or sent again), dropped, with 1->0 in flight, dropped: 9 states; moves
    1 + 1 + 3 + 2 + 3 + 1 + 3 + 1 + 1 = 16; the last dropped 1->0 at depth 5.  Folded: the 6
    states without a dropped message, 1 + 1 + 2 + 2 + 2 + 2 = 10 moves, 3 drops not offered, and
    splits 1 + 1 + 2 + 1 + 2 + 2 = 9 (the plain count).  By depth, plain: nothing, published, in
    flight, then {dropped, both hold it, both hold it with 0->1 in flight}, {0->1 dropped after
    both hold it, 1->0 in flight}, {1->0 dropped}; folded: 1, 1, 1, 2, 1."""
    assert count(2, 1, 1, None, fold_drops=False) == Counts(9, 16, 5, 0, 0, (1, 1, 1, 3, 2, 1))
    assert count(2, 1, 1, None, fold_drops=True) == Counts(6, 10, 4, 3, 9, (1, 1, 1, 2, 1))
    assert count(2, 1, 1, (1,), fold_drops=False) == count(2, 1, 1, None, fold_drops=False)  # the mirror image
    assert count(3, 1, 1, None, fold_drops=False).states > count(2, 1, 1, None, fold_drops=False).states


def test_every_exploration_runs_the_moves_check_and_reports_it():
    r = explore(REF, TIES, SMALL)
    assert r.violation is None and not r.blind and r.details["unrendered_comparisons"] == 0
    checked = r.details["moves_check"]
    assert checked["agree"] and len(checked["configurations"]) == 6
    assert min(e["fragments"] for e in checked["configurations"]) == 1  # the domain's smallest fragment count
    assert {e["fold_drops"] for e in checked["configurations"]} == {False, True}
    assert all(e["search"] == e["reference"] for e in checked["configurations"])


def test_the_moves_check_runs_on_sets_so_a_backend_that_is_no_cvrdt_does_not_blind_it():
    """A backend whose states are finer than sets (it keeps duplicates) changes the plain
    search's counts; the moves check is about the explorer, and stays on ``FragmentIndices``."""
    from tests.broken_backends import plant

    bad = plant(REF, "merge-keeps-duplicates")
    assert search(bad, TIES, GossipConfig(replicas=3, fragments=2, in_flight=1), fair_exchange=False).violation
    assert moves_check(TIES, fair_exchange=True)["agree"]
    indices = FragmentIndices(TIES)
    assert indices.merge(indices.singleton(0), indices.singleton(1)) == frozenset({0, 1})


def test_a_reference_that_disagrees_blinds_the_run(monkeypatch):
    """The comparison can fail: a reference one transition off is reported, naming the instrument."""
    real = controls.gossip_reference.count

    def off_by_one(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), transitions=real(*args, **kwargs).transitions + 1)

    monkeypatch.setattr(controls.gossip_reference, "count", off_by_one)
    r = explore(REF, TIES, SMALL)
    assert not r.details["moves_check"]["agree"]
    assert any(b.startswith("gossip moves:") and "transitions 706 vs 707" in b for b in r.blind)


# --- the explorer's own bugs, planted by the audit's patch text ------------------------------------

def _mutated(module, cls: type, method: str, old: str, new: str):
    """``cls.method`` compiled from its source with ``old`` replaced by ``new`` (exactly once)."""
    source = textwrap.dedent(inspect.getsource(getattr(cls, method)))
    old, new = textwrap.dedent(old), textwrap.dedent(new)
    assert source.count(old.strip()) == 1, old
    scope = dict(vars(module))
    exec(compile(source.replace(old.strip(), new.strip()), module.__file__, "exec"), scope)
    return scope[method]


MODEL_BUGS = {
    "publish does not record the fragment": ("apply", "n.published | {f},", "n.published & {f},"),
    "never publishes": ("successors", "if f not in n.published]", "if f in n.published]"),
    "a dropped message offers only re-sends": ("successors", "out += [(\"resend\", key)", "out = [(\"resend\", key)"),
}
VERDICT_BUG = ("first_violation", "jobs += [(s, None) for s in exchanged]", "jobs = [(s, None) for s in exchanged]")


@pytest.mark.parametrize("bug", MODEL_BUGS.values(), ids=MODEL_BUGS.keys())
@pytest.mark.parametrize("symmetry", [False, True])
def test_a_move_generation_bug_is_reported_blind(monkeypatch, bug, symmetry):
    method, old, new = bug
    monkeypatch.setattr(GossipModel, method, _mutated(gossip_model, GossipModel, method, old, new))
    r = explore(REF, TIES, dataclasses.replace(SMALL, symmetry=symmetry))
    assert r.violation is None and not r.details["moves_check"]["agree"]
    assert any(b.startswith("gossip moves: the search's counts differ") for b in r.blind), r.blind


def test_a_verdict_that_drops_its_pair_renders_is_reported_blind(monkeypatch):
    monkeypatch.setattr(Verdict, VERDICT_BUG[0], _mutated(gossip_verdict, Verdict, *VERDICT_BUG))
    r = explore(REF, TIES, SMALL)
    assert r.violation is None and r.unrendered_comparisons > 0
    assert any(b.startswith("gossip verdict:") and "no render digest" in b for b in r.blind), r.blind


def test_a_comparison_without_a_digest_is_counted_never_passed():
    """Records the batch never rendered (an empty render call) are not compared as equal."""
    model = GossipModel(REF, TIES, SMALL)
    verdict = Verdict(model)
    verdict.render_fresh = lambda states: []  # type: ignore[method-assign]
    n, _ = model.run_actions(model.initial(), [("publish", 0), ("send", 0, 1), ("deliver", (0, 1, 0))])
    assert verdict.first_violation([(n, verdict.facts(n))], "union", fair_exchange=False) is None
    assert verdict.unrendered == 1
    assert verdict.first_violation([(n, verdict.facts(n))], "union", fair_exchange=True) is None
    assert verdict.unrendered == 2 + model.config.replicas
    half = verdict.facts(n)  # one side of the pair rendered, the other not: still not compared
    half[0][1] = "rendered"
    assert verdict.first_violation([(n, half)], "union", fair_exchange=False) is None
    assert verdict.unrendered == 3 + model.config.replicas


# --- planted in the source of a scratch copy, caught by the product's command ----------------------

PLANTS = {
    "never publishes": Patch("modelcheck/gossip_model.py", "out: list[Action] = [(\"publish\", f) for f in "
                             "range(self.config.fragments) if f not in n.published]",
                             "out: list[Action] = [(\"publish\", f) for f in "
                             "range(self.config.fragments) if f in n.published]"),
    "pair renders discarded": Patch("modelcheck/gossip_verdict.py", *VERDICT_BUG[1:]),
    "a depth-bounded search called exhaustive": Patch(
        "modelcheck/gossip_search.py", "result.exhaustive = bool(result.exhaustive and not model.successors(n))",
        "result.exhaustive = bool(result.exhaustive or not model.successors(n))"),
}
BLIND_PREFIX = {"never publishes": "gossip moves:", "pair renders discarded": "gossip verdict:",
                "a depth-bounded search called exhaustive": "gossip moves:"}


def assert_command_names_blind(tmp_path, patch, prefix: str, command: tuple[str, ...] = COMMAND) -> None:
    """``canonmerge check`` (``command``) on a scratch copy with ``patch`` planted exits 1, both
    gossip rows fail, and a blind line starts with ``prefix``."""
    out = ScratchCopy(tmp_path).apply(patch).run(*command, timeout=900)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert GOSSIP_ROWS <= failing_rows(out.stdout)
    blind = json.loads(out.stdout)["parts"][0]["data"]["gossip"]["blind"]
    assert any(b.startswith(prefix) for b in blind), blind


@pytest.mark.parametrize("name", PLANTS)
def test_the_command_fails_naming_the_blind_instrument(name, tmp_path):
    assert_command_names_blind(tmp_path, PLANTS[name], BLIND_PREFIX[name])


# the domain's smallest values refused (a valid configuration made an input error), and the empty
# replica's mark made a state's: the moves check runs one fragment and depth 0 against the
# reference, and its counts see two nodes merged by their marks; (class, method, old, new)
DOMAIN_BUGS = {
    "one fragment refused": (GossipConfig, "validate", 'integer("fragments", self.fragments, 1,',
                             'integer("fragments", self.fragments, 2,'),
    "depth 0 refused": (GossipConfig, "validate", 'integer("max_depth", self.max_depth, 0,',
                        'integer("max_depth", self.max_depth, 1,'),
    "an empty replica marked as the second state": (GossipModel, "mark", "return -1", "return +1"),
}
DOMAIN_WHY = {"one fragment refused": "the search refused a configuration of its documented domain: fragments=1",
              "depth 0 refused": "bounded by max_depth 0: the search refused it",
              "an empty replica marked as the second state": "search vs reference: states"}


@pytest.mark.parametrize("name", DOMAIN_BUGS)
def test_a_domain_refused_or_an_empty_mark_taken_blinds_the_moves_check(name, monkeypatch):
    cls, method, old, new = DOMAIN_BUGS[name]
    monkeypatch.setattr(cls, method, _mutated(gossip_model, cls, method, old, new))
    checked = moves_check(TIES, True)
    assert not checked["agree"] and DOMAIN_WHY[name] in controls.moves_differences(checked)


@pytest.mark.audit
@pytest.mark.parametrize("name", DOMAIN_BUGS)
def test_the_command_fails_on_a_domain_refused_or_an_empty_mark_taken(name, tmp_path):
    _, _, old, new = DOMAIN_BUGS[name]
    assert_command_names_blind(tmp_path, Patch("modelcheck/gossip_model.py", old, new), "gossip moves:")


# --- the search's bounds ---------------------------------------------------------------------------

def test_the_bounded_searches_agree_with_the_reference():
    bounded = moves_check(TIES, True)["bounded"]
    assert [(b["bound"], b["value"]) for b in bounded] == [("max_depth", 5), ("max_depth", 0), ("max_states", 1)]
    assert all(b["agree"] and not b["exhaustive"] for b in bounded), bounded
    assert bounded[1]["states"] == bounded[2]["states"] == 1
    assert bounded[0]["states"] == bounded[0]["reference_states"] > 1


@pytest.mark.parametrize("bug", ["bounded run called exhaustive", "one state past max_states"])
def test_a_bound_the_search_misreports_blinds_the_run(monkeypatch, bug):
    """A depth-bounded search that calls itself exhaustive, or a state-bounded one that keeps one
    state more than asked, is reported, naming the instrument."""
    real = controls.search

    def wrong(backend, universe, config, **kwargs):
        r = real(backend, universe, config, **kwargs)
        if bug.startswith("bounded") and config.max_depth is not None:
            r.exhaustive = True
        if bug.startswith("one") and config.max_states == 1:
            r.states += 1
        return r

    monkeypatch.setattr(controls, "search", wrong)
    r = explore(REF, TIES, SMALL)
    assert not r.details["moves_check"]["agree"]
    assert any(b.startswith("gossip moves:") and "bounded by max_" in b for b in r.blind), r.blind
