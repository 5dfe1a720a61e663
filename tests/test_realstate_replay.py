"""The replay on a real (tiny, seeded) Qwen3 model: every claim holds, and every planted bug
is caught by the check aimed at it."""

import math
import subprocess
import sys

import pytest
import torch
from transformers import Qwen3ForCausalLM

from realstate.evidence.planted import MUTANTS
from realstate.models.geometry import geometry
from realstate.models.loaded import from_model
from realstate.models.seeded import load_seeded
from realstate.replay.runner import run_replay
from realstate.replay.settings import ReplaySettings
from spec import Outcome


@pytest.fixture(scope="module")
def tiny():
    return load_seeded("qwen3-tiny")


@pytest.fixture(scope="module")
def cast_tiny():
    """A model cast with .to(bfloat16): its own rotary frequencies are rounded to bf16."""
    torch.manual_seed(0)
    model = Qwen3ForCausalLM._from_config(geometry("qwen3-tiny").config()).to(torch.bfloat16)
    return from_model(model, "seeded", "qwen3-tiny cast to bf16 after init")


def failing(report):
    return {(r.claim, r.check) for r in report.results if r.outcome is not Outcome.HOLDS}


@pytest.fixture(scope="module")
def default_report(tiny):
    return run_replay(ReplaySettings(agents=4, compose=True), lm=tiny)  # what verify runs


def checks_named(*names):
    import realstate.replay.properties  # noqa: F401
    from spec import registered

    chosen = [c for c in registered("realstate") if c.name in names]
    assert len(chosen) == len(names), names
    return chosen


def holds_every_claim(report, agents: int) -> None:
    assert failing(report) == set()
    claims = {r.claim for r in report.results}
    assert {"C2", "C3", "C4", "C5", "C6", "C8", "C9"} <= claims
    factorials = [math.factorial(n) for n in range(1, agents + 1)]
    assert report.data["counts"]["permutations"] == sum(factorials)
    per_n = next(r for r in report.results if r.check == "permutations render one digest").details["per_arity"]
    assert [len(row["canonical_digests"]) for row in per_n] == [1] * agents
    bags = next(r for r in report.results if r.check == "BagMerge order dependence").details["bag_digests_per_n"]
    assert bags == factorials  # N! for distinct fragments
    from realstate.replay.runner import CHECKS
    # A CPU run with composition, as verify runs it: every other check.
    assert {r.check for r in report.results} == {c.name for c in CHECKS} - {
        "canonical render has the same SHA-256 on CPU and the device"}
    assert report.data["incremental"]["differs"] is True
    assert report.data["model"]["weights_source"] == "seeded"


def test_a_three_agent_replay_holds_every_claim(tiny):
    """The default tier's representative of the default replay (four agents, below)."""
    report = run_replay(ReplaySettings(agents=3, compose=True), lm=tiny)
    holds_every_claim(report, 3)
    fidelity_above_the_bf16_floor(report, 3)


@pytest.mark.heavy
def test_default_replay_holds_every_claim(default_report):
    holds_every_claim(default_report, 4)


def test_cast_model_replay_holds_too(cast_tiny):
    assert failing(run_replay(ReplaySettings(agents=2), lm=cast_tiny)) == set()  # every check; two agents suffice


EXPECTED_CATCH = {
    "unstable-sort": ("C5", "tied m (head-swapped twin) still orders uniquely"),
    "value-returning-sort": ("C5", "tied m (head-swapped twin) still orders uniquely"),
    "no-tie-break": ("C5", "tied m (head-swapped twin) still orders uniquely"),
    "reduced-precision-key": ("C5", "order key equals the exact reference"),
    "wrong-rope-sign": ("C3", "render equals the independent oracle"),
    "theta-frequencies": ("C8", "re-encoding uses the model's own rotary frequencies"),
    "identity-dedup": ("C2", "re-delivery leaves the canonical render unchanged"),
    "order-by-arrival": ("C3", "permutations render one digest"),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_every_planted_bug_makes_the_replay_fail(tiny, mutant):
    claim, name = EXPECTED_CATCH[mutant]
    report = run_replay(ReplaySettings(agents=3), engine=MUTANTS[mutant], lm=tiny, checks=checks_named(name))
    assert failing(report) == {(claim, name)}


def test_theta_frequencies_break_fidelity_on_a_cast_model(cast_tiny):
    """With bf16-rounded model frequencies, re-encoding with exact ones fails at large offsets."""
    report = run_replay(ReplaySettings(agents=2), engine=MUTANTS["theta-frequencies"], lm=cast_tiny,
                        checks=checks_named("re-encoding fidelity"))
    assert ("C8", "re-encoding fidelity") in failing(report)


def fidelity_above_the_bf16_floor(report, agents: int) -> None:
    row = next(r for r in report.results if r.check == "re-encoding fidelity")
    bases = {x["base"] for x in row.details["rows"]}
    assert max(bases) == 30000 and 0 in bases
    assert len(row.details["rows"]) == agents * len(bases)  # every placement of every render
    assert min(c for x in row.details["rows"] for c in x["rope_min_cosine"]) >= 0.9999


@pytest.mark.heavy
def test_fidelity_is_above_the_bf16_floor_at_every_offset_up_to_30000(default_report):
    fidelity_above_the_bf16_floor(default_report, 4)


def test_bad_settings_are_input_errors():
    from spec import InputError

    with pytest.raises(InputError, match=r"^agents=9 must be an integer in 1\.\.6"):  # the CLI re-spells it as --agents
        run_replay(ReplaySettings(agents=9))


# The command line's JSON report of a seeded replay (``canonmerge realstate --agents 2 --json``
# in a subprocess) is asserted on the unpatched realstate control of test_planted_in_source.py,
# which runs that command anyway (with --latent-steps 0); a second process would cost ~10 s of
# torch/transformers start-up for the same assertions.


def test_cli_rejects_prompt_without_checkpoint():
    out = subprocess.run([sys.executable, "-m", "canonmerge", "realstate", "--prompt", "hi"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--prompt needs --checkpoint" in out.stderr


def test_order_by_arrival_breaks_permutations_and_trees_too(tiny):
    report = run_replay(ReplaySettings(agents=3), engine=MUTANTS["order-by-arrival"], lm=tiny,
                        checks=checks_named("permutations render one digest", "merge trees render the same digest",
                                            "greedy decode identical for every permutation"))
    assert {("C3", "permutations render one digest"), ("C3", "merge trees render the same digest"),
            ("C8", "greedy decode identical for every permutation")} <= failing(report)


def test_c4_check_fails_when_bagmerge_ignores_order(tiny, monkeypatch):
    """Planted: a 'BagMerge' that sorts its input is not order dependent; C4 must say so."""
    import realstate.replay.context as replay_module

    def sorted_bag(fragments, base=0, engine=None):
        return replay_module.canonical_render(list(fragments), base, engine)

    monkeypatch.setattr(replay_module, "bag_render", sorted_bag)
    failed = failing(run_replay(ReplaySettings(agents=3), lm=tiny,
                                checks=checks_named("BagMerge order dependence", "BagMerge re-delivery")))
    assert {("C4", "BagMerge order dependence"), ("C4", "BagMerge re-delivery")} == failed


def test_c6_check_fails_when_bagmerge_lays_out_differently(tiny, monkeypatch):
    """Planted: a BagMerge whose layout starts one position later matches neither order."""
    import realstate.replay.context as replay_module

    real = replay_module.bag_render
    def shifted_bag(fragments, base=0, engine=None):
        return real(fragments, base + 1, engine)

    monkeypatch.setattr(replay_module, "bag_render", shifted_bag)
    assert ("C6", "n = 2 canonical render equals one BagMerge order") in failing(
        run_replay(ReplaySettings(agents=2), lm=tiny,
                   checks=checks_named("n = 2 canonical render equals one BagMerge order")))


def test_the_tied_twin_has_the_same_m_and_other_bytes_with_one_kv_head_too():
    """With one KV head the heads cannot be swapped: positions 0 and 1 are, which keeps the
    multiset of key norms (so m's bits) and changes the content id; one head and one token: none."""
    import torch

    from realstate.kernel.fingerprint import Fingerprint
    from realstate.kernel.fragment import Fragment
    from realstate.replay.context import tied_twin

    fp = Fingerprint(architecture="test", layers=2, kv_heads=1, head_dim=4, dtype="float32",
                     inv_freq=(1.0, 0.5), rope_theta=10000.0, max_positions=64, weights="test")
    keys = torch.arange(2 * 1 * 3 * 4, dtype=torch.float32).reshape(2, 1, 3, 4)
    base = Fragment(fp, 0, keys, keys + 1)
    twin = tied_twin(base)
    assert twin is not None and twin.content_id != base.content_id
    assert twin.order_value.hex() == base.order_value.hex()
    single = Fragment(fp, 0, keys[:, :, :1].contiguous(), keys[:, :, :1].contiguous())
    assert tied_twin(single) is None
