"""Beyond N <= 5: the Hypothesis-driven mode holds on the reference and finds planted bugs."""

import pathlib

import pytest

from modelcheck.randomized import run_randomized
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from tests.broken_backends import plant, replay_planted

REF = ReferenceBackend()
GEOMETRY = universe("random").geometry


def test_holds_on_the_reference_with_a_fixed_budget():
    r = run_randomized(REF, GEOMETRY, 25, backend_name="reference", mutant=None)
    assert r.trace is None and r.examples == 25 and r.orderings == 75
    assert r.largest >= 16


def test_float32_geometry_runs_too():
    g = universe("float32").geometry
    r = run_randomized(REF, g, 5, backend_name="reference", mutant=None)
    assert r.trace is None and r.examples == 5


@pytest.mark.parametrize("mutant,check", [("order-by-arrival", "randomized permutations"),
                                          ("identity-dedup", "randomized re-deliveries"),
                                          ("render-depends-on-merge-tree", None)])
def test_finds_planted_bugs_with_a_minimal_replayable_trace(mutant, check):
    r = run_randomized(plant(REF, mutant), GEOMETRY, 50, backend_name="reference", mutant=mutant)
    assert r.trace is not None and r.trace["universe"] == "randomized"
    if check:
        assert r.failing_check == check and r.trace["check"] == "randomized N <= 64 (Hypothesis)"
    assert len(r.trace["fragments"]) <= 3
    assert replay_planted(r.trace, REF).reproduced
    assert not replay_planted(dict(r.trace, mutant=None), REF).reproduced


def test_orders_come_from_hypothesis_permutations_not_shuffle():
    source = (pathlib.Path(__file__).parents[1] / "modelcheck" / "randomized.py").read_text()
    assert "st.permutations" in source and "shuffle" not in source
