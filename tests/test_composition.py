"""Composition (``realstate.compose``, claim C9): the selection is exact and a function of the
bytes, both gates hold, a fragment without inputs is refused by name, and the replay's C9 rows
hold on a tiny seeded set and fail with the planted arrival-order selection."""

from __future__ import annotations

import itertools

import pytest
import torch

from realstate.composition.compose import compose, compose_render
from realstate.composition.ranking import ranked, top_count
from realstate.composition.settings import ComposeSettings
from realstate.kernel.adapter import tensors_from_cache
from realstate.kernel.fragment import Fragment, fragment_set
from realstate.kernel.render import canonical_merge, canonical_render
from spec import ArgumentError, InputError
from tests.realstate_helpers import bits


@pytest.fixture(scope="module")
def tiny():
    from realstate.models.agents import run_agents
    from realstate.models.seeded import load_seeded

    lm = load_seeded()
    return lm, run_agents(lm, 3, 0, keep_inputs=True), run_agents(lm, 3, 1, keep_inputs=True)


def test_ranking_is_by_score_then_position_and_the_count_is_an_exact_ceiling():
    assert ranked([1.0, 3.0, 3.0, float("nan"), -0.0, 0.0]) == [3, 1, 2, 0, 5, 4]
    assert top_count(0.15, 20) == 3  # 0.15 * 20 is 3.0000000000000004 in floats
    assert top_count(0.15, 21) == 4 and top_count(0.0, 9) == 0 and top_count(1.0, 9) == 9


def test_settings_name_the_argument():
    for bad, name in (((1.5, 2, 1), "recompute"), ((float("nan"), 2, 1), "recompute"), ((0.1, -1, 1), "anchors"),
                      ((0.1, 2, True), "layers")):
        with pytest.raises(ArgumentError) as e:
            ComposeSettings(*bad).validate(4)
        assert e.value.argument == name
    with pytest.raises(ArgumentError, match="layers=4"):
        ComposeSettings(layers=4).validate(4)


def test_both_gates(tiny):
    lm, text, latent = tiny
    state = fragment_set([r.fragment for r in latent])
    zero = compose(state, lm, recompute=0.0, anchors=0)
    for got, want in zip(tensors_from_cache(zero, lm.fingerprint.layers),
                         tensors_from_cache(canonical_merge(state), lm.fingerprint.layers)):
        assert torch.equal(bits(got), bits(want))
    composed = compose_render(fragment_set([r.fragment for r in text]), lm, ComposeSettings(1.0, 0))
    by_id = {r.fragment.content_id: r for r in text}
    ids = [t for p in composed.layout for t in by_id[p.fragment.content_id].prompt_ids]
    from transformers import DynamicCache

    cache = DynamicCache()
    with torch.no_grad():
        lm.decoder(input_ids=torch.tensor([ids]), position_ids=torch.arange(len(ids)).unsqueeze(0), cache=cache,
                   use_cache=True)
    keys, values = tensors_from_cache(cache, lm.fingerprint.layers)
    assert torch.equal(bits(keys), bits(composed.keys)) and torch.equal(bits(values), bits(composed.values))


def test_every_order_composes_one_render_that_differs_from_the_canonical_one(tiny):
    lm, _, latent = tiny
    fragments = [r.fragment for r in latent]
    settings = ComposeSettings(0.2, 1)
    found = {(c.digest(), tuple(c.selected))
             for c in (compose_render(list(order), lm, settings) for order in itertools.permutations(fragments))}
    assert len(found) == 1
    digest, selected = found.pop()
    assert digest != canonical_render(fragments).digest() and selected
    anchors = {p.offset for p in canonical_render(fragments).layout[1:]}
    assert anchors <= set(selected)


def test_a_fragment_without_inputs_or_of_another_model_is_refused_by_name(tiny):
    lm, _, latent = tiny
    bare = Fragment(latent[1].fragment.fingerprint, 0, latent[1].fragment.keys, latent[1].fragment.values)
    with pytest.raises(ArgumentError, match="holds no inputs") as e:
        compose([latent[0].fragment, bare], lm)
    assert e.value.argument == "state" and bare.content_id.hex()[:12] in str(e.value)
    with pytest.raises(InputError, match="inputs must be"):
        Fragment(bare.fingerprint, 0, bare.keys, bare.values, inputs=torch.zeros(bare.tokens + 1, 8))


def test_the_replay_c9_rows_hold_and_the_planted_selection_is_caught(tiny):
    from realstate.replay import properties as P
    from realstate.replay.composition import orders_row, run_composition
    from realstate.replay.context import Replay
    from realstate.replay.runner import run_replay
    from realstate.replay.settings import ReplaySettings
    from realstate.evidence.planted import selector_named
    from realstate.kernel.engine import CANONICAL
    from spec import Outcome, no_progress
    from spec.fragment_set import iteration_order

    lm, text, _ = tiny
    settings = ReplaySettings(agents=3, latent_steps=0, decode_tokens=1, compose=True)
    report = run_replay(settings, lm=lm, checks=list(P.COMPOSE_CHECKS))
    assert {r.check: r.outcome for r in report.results} == {c.name: Outcome.HOLDS for c in P.COMPOSE_CHECKS}
    replay = Replay(lm, text, settings, CANONICAL, no_progress)
    for mode, outcome in (("arrival", Outcome.FAILS), ("id", Outcome.HOLDS)):  # id order hides the bug
        with iteration_order(mode):
            found = run_composition(replay, ComposeSettings(0.15, 1), selector_named("select-by-arrival"),
                                    decode=False, arities=(3,), kinds=("rotations",))
        assert orders_row(P.COMPOSE_ORDERS, found, (3,), 0.0).outcome is outcome
    with pytest.raises(InputError, match="--compose"):
        run_replay(ReplaySettings(agents=3, latent_steps=0), lm=lm, checks=list(P.COMPOSE_CHECKS))
