"""The causal-audit controls must be what they claim: each check is shown to fail on a control
that is wrong in exactly the way it guards against (synthetic fragments, no model)."""

import pytest
import torch

from realstate.bench import controls
from realstate.kernel.fragment import Fragment
from spec import InstrumentError
from tests.realstate_helpers import random_fragment, tiny_fingerprint

FP = tiny_fingerprint("float32")


@pytest.fixture
def real():
    return random_fragment(FP, 9, seed=1)


def test_zeroed_control_passes_and_a_non_zero_one_fails(real):
    control = controls.zeroed(real)
    controls.check_zeroed(real, control)
    leaky = control.keys.clone()
    leaky[0, 0, 3, 1] = 1e-30  # one surviving entry is enough to fail
    with pytest.raises(InstrumentError, match="non-zero"):
        controls.check_zeroed(real, Fragment(FP, 0, leaky, control.values))
    with pytest.raises(InstrumentError, match="all zero"):
        controls.check_zeroed(control, control)  # zeroing a zero fragment tests nothing


def test_deranged_control_must_differ_and_come_from_another_problem_of_the_family(real):
    donor = random_fragment(FP, 9, seed=2)
    controls.check_deranged(real, donor, "p1", "bridge", "p2", "bridge")
    with pytest.raises(InstrumentError, match="equals the real fragment"):
        controls.check_deranged(real, real.copy(), "p1", "bridge", "p2", "bridge")
    with pytest.raises(InstrumentError, match="same problem"):
        controls.check_deranged(real, donor, "p1", "bridge", "p1", "bridge")
    with pytest.raises(InstrumentError, match="family"):
        controls.check_deranged(real, donor, "p1", "bridge", "p2", "retrieval")
    with pytest.raises(InstrumentError, match="same positions"):
        controls.check_deranged(real, random_fragment(FP, 8, seed=3), "p1", "bridge", "p2", "bridge")


def test_moment_matched_noise_has_the_real_moments_and_wrong_moments_fail(real):
    noise = controls.moment_matched(real, seed=5)
    controls.check_moment_matched(real, noise)
    assert not torch.equal(noise.keys, real.keys)
    assert torch.equal(noise.keys, controls.moment_matched(real, seed=5).keys)  # seeded
    doubled = Fragment(FP, 0, noise.keys * 2, noise.values)  # std twice too large (and mean too)
    with pytest.raises(InstrumentError, match="keys"):
        controls.check_moment_matched(real, doubled)
    shifted = Fragment(FP, 0, noise.keys, noise.values + noise.values.std())  # mean off by one std
    with pytest.raises(InstrumentError, match="values"):
        controls.check_moment_matched(real, shifted)
    plain = Fragment(FP, 0, torch.randn(real.keys.shape), torch.randn(real.values.shape))  # unmatched N(0, 1)
    with pytest.raises(InstrumentError):
        controls.check_moment_matched(real, plain)
    with pytest.raises(InstrumentError, match="equals"):
        controls.check_moment_matched(real, real.copy())


def test_donors_match_length_exactly_else_by_prefix_and_never_the_same_problem(real):
    exact = random_fragment(FP, 9, seed=11)
    longer = random_fragment(FP, 12, seed=12)
    shorter = random_fragment(FP, 4, seed=13)
    chosen = controls.choose_donor(real, "p1", [("p1", 0, exact), ("p2", 0, longer), ("p3", 1, exact)], seed=0)
    assert (chosen.problem, chosen.match, chosen.fragment.tokens) == ("p3", "exact", 9)
    chosen = controls.choose_donor(real, "p1", [("p2", 0, longer), ("p3", 0, shorter)], seed=0)
    assert (chosen.problem, chosen.match, chosen.tokens, chosen.fragment.tokens) == ("p2", "prefix", 12, 9)
    assert torch.equal(chosen.fragment.keys, longer.keys[:, :, :9])
    assert controls.choose_donor(real, "p1", [("p1", 0, longer), ("p3", 0, shorter)], seed=0) is None
    ties = [("p2", 0, exact), ("p3", 0, random_fragment(FP, 9, seed=14))]
    picks = {controls.choose_donor(real, "p1", ties, seed=s).problem for s in range(12)}
    assert picks == {"p2", "p3"}  # ties drawn by the seed, reproducibly
    assert controls.choose_donor(real, "p1", ties, seed=3) == controls.choose_donor(real, "p1", ties, seed=3)


def test_a_donor_identical_to_the_real_fragment_is_never_chosen(real):
    """Two problems of a family can share a document: another problem's copy of the same cache
    (or a longer cache whose prefix is it) would make the deranged control the real one."""
    def three_more(t: torch.Tensor) -> torch.Tensor:
        return torch.cat([t, torch.randn(*t.shape[:2], 3, t.shape[3]).to(t.dtype)], 2)

    longer_same_prefix = Fragment(real.fingerprint, real.start, three_more(real.keys), three_more(real.values))
    assert controls.choose_donor(real, "p1", [("p2", 0, real.copy()), ("p3", 0, longer_same_prefix)], seed=0) is None
    other = random_fragment(FP, real.tokens, seed=21)
    chosen = controls.choose_donor(real, "p1", [("p2", 0, real.copy()), ("p4", 1, other)], seed=0)
    assert chosen.problem == "p4"
    controls.check_deranged(real, chosen.fragment, "p1", "f", chosen.problem, "f")
