"""``canonmerge bench`` end to end on the embedded seeded geometry (qwen3-tiny, byte prompts):
the document's structure, the structural claim rows, identical JSON on a rerun with the same
seed, and the negative tests — a planted order-dependent CanonicalMerge is flagged by the
answer-uniqueness row, through the library hook AND through a source patch run by the product's
own command line.  Accuracy values are never asserted (seeded weights answer noise)."""

import itertools
import json

import pytest
import torch

from audit.scratch import Patch, ScratchCopy
from canonmerge.cli import main
from realstate.bench.report import to_json, without_timings
from realstate.bench.runner import run_bench
from realstate.bench.settings import BenchSettings
from realstate.bench.summary import CONDITIONS
from realstate.evidence.planted import MUTANTS

# three families, so --quick's k cycle gives k = 2, 3 and 4 (24 orders)
FAMILIES = ("retrieval", "comparison", "aggregation")
QUICK = BenchSettings(model=None, geometry="qwen3-tiny", quick=True, threads=1, families=FAMILIES, bootstrap=200)
# the smallest run that still decodes every condition: one k = 2 problem at the 0-step budget
ONE_CELL = BenchSettings(model=None, geometry="qwen3-tiny", quick=True, threads=1, families=("retrieval",),
                         latent_steps=(0,), bootstrap=200)
CLI_QUICK = ["bench", "--quick", "--geometry", "qwen3-tiny", "--threads", "1", "--bootstrap", "200",
             "--families", "retrieval"]
CLI_ONE_CELL = [*CLI_QUICK, "--latent-steps", "0", "--no-figures", "--json"]


@pytest.fixture(scope="module")
def outcome():
    return run_bench(QUICK)


def test_every_cell_decodes_every_condition_from_one_set_of_fragments(outcome):
    doc = outcome.document
    assert doc["settings"]["quick"] and doc["settings"]["latent_steps"] == [0, 1]
    assert doc["problems"]["count"] == 3 and sorted(int(k) for k in doc["problems"]["k"]) == [2, 3, 4]
    assert doc["problems"]["derangement_donors_only"]  # one problem per family needs donors from others
    assert len(doc["cells"]) == 6
    for cell in doc["cells"]:
        k = cell["k"]
        orders = {"bag[" + ",".join(map(str, o)) + "]" for o in itertools.permutations(range(k))}
        assert orders <= set(cell["answers"])
        assert cell["canonical_orders"]["orders"] == len(orders)  # CanonicalMerge fed every input order
        assert {"canonical", "naive", "zeroed", "moment-matched"} <= set(cell["answers"])
        # a fragment with no donor as long as itself leaves its cell without the deranged control, on record
        assert ("deranged" in cell["answers"]) == (cell["controls"]["deranged_donors"] is not None)
        assert {f"alone[{i}]" for i in range(k)} <= set(cell["answers"])
        text_level = {"full-prompt", "no-context", "packllm"}
        assert (text_level <= set(cell["answers"])) == (cell["latent_steps"] == 0)
        assert sorted(cell["structure"]["canonical_layout"]) == list(range(k))
        if cell["latent_steps"] == 0:
            assert sum(cell["packllm"]["weights"]) == pytest.approx(1.0)
    assert any("deranged" in cell["answers"] for cell in doc["cells"])
    donors = doc["controls"]["deranged_donors"]
    assert donors["cells_without_deranged_control"] == sum("deranged" not in c["answers"] for c in doc["cells"])
    assert doc["summary"]["conditions"] == list(CONDITIONS)
    assert {r["regime"] for r in doc["summary"]["regimes"]} == {f"k={k} L={b}" for k in (2, 3, 4) for b in (0, 1)}
    assert "SEEDED" in doc["framing"][0]
    json.loads(to_json(doc))  # strict JSON (no NaN)


def test_structural_rows_hold_and_name_their_claims(outcome):
    assert [(r.claim, r.outcome.value) for r in outcome.results] == [
        ("C8", "holds"), ("C3", "holds"), ("C2", "holds"), ("C4", "holds")]
    assert all(r.part == "realstate" for r in outcome.results)


def test_a_rerun_with_the_same_seed_gives_identical_json_apart_from_timings():
    first, again = run_bench(ONE_CELL), run_bench(ONE_CELL)
    assert first.document["cells"] and first.document["timings"]["total_wall_seconds"] > 0
    assert to_json(without_timings(again.document)) == to_json(without_timings(first.document))


def test_agent_fragments_at_a_smaller_budget_are_prefixes_of_one_run():
    from realstate.models.agents import run_agent
    from realstate.models.seeded import load_seeded

    lm = load_seeded("qwen3-tiny")
    ids = list(b"Mira lives in Oslo.\n")
    longest, shorter = run_agent(lm, "a", ids, 2).fragment, run_agent(lm, "a", ids, 1).fragment
    assert torch.equal(longest.keys[:, :, :shorter.tokens], shorter.keys)
    assert torch.equal(longest.values[:, :, :shorter.tokens], shorter.values)


def test_planted_order_dependent_render_through_the_library_hook_fails_uniqueness():
    planted = run_bench(ONE_CELL, engine=MUTANTS["order-by-arrival"])
    outcome = {r.claim: r for r in planted.results}
    assert outcome["C8"].outcome.value == "fails" and outcome["C8"].details["cells_with_several_logits"]
    assert outcome["C3"].outcome.value == "fails"
    assert planted.document["engine"] == "order-by-arrival"


def test_command_writes_json_and_figures_and_a_source_patch_fails_with_exit_1(tmp_path, capsys):
    out = tmp_path / "good"
    assert main([*CLI_QUICK, "--out", str(out)]) == 0
    assert "bench: structural claims" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == {"bench.json", "accuracy_by_family.png", "order_flip_rate.png",
                                                "order_spread.png"}
    copy = ScratchCopy(tmp_path / "scratch").apply(Patch(
        "realstate/kernel/render.py",
        "layouts.append(layout(engine.order(members), base))",
        "layouts.append(layout(list(state), base))"))  # CanonicalMerge in arrival order
    done = copy.run(*CLI_ONE_CELL, "--out", str(tmp_path / "bad"), timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    rows = {r["check"]: r for r in json.loads(done.stdout)["claims"]}
    uniqueness = rows["bench: one CanonicalMerge answer over all k! input orders"]
    assert uniqueness["outcome"] == "fails" and uniqueness["claim"] == "C8"


def test_a_zeroed_control_that_is_not_zero_fails_the_command_with_exit_1(tmp_path):
    copy = ScratchCopy(tmp_path / "scratch").apply(Patch(
        "realstate/bench/controls.py",
        "return Fragment(fragment.fingerprint, fragment.start, torch.zeros_like(fragment.keys),",
        "return Fragment(fragment.fingerprint, fragment.start, fragment.keys.clone(),"))  # keys survive "zeroing"
    done = copy.run(*CLI_ONE_CELL, "--out", str(tmp_path / "bad"), timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "causal-audit control is invalid" in done.stderr and "non-zero" in done.stderr
