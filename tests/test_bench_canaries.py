"""The bench's instruments prove in every run that they could see: canaries through the same
pipeline, coverage counted from what was rendered against k! in closed form, re-delivery compared
as bytes.  Bugs planted in the SOURCE of a scratch copy — a structural row that counts one input
order as all k! orders, one that compares re-delivery by content ids — make the product's own
``canonmerge bench`` exit 1."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from audit.scratch import Patch, ScratchCopy
from realstate.bench.canaries import CANARIES, forged_redelivery, with_canaries
from realstate.bench.runner import run_bench
from realstate.bench import structural
from realstate.bench.structural import INSTRUMENTS, structural_results
from spec import Outcome
from tests.realstate_helpers import random_fragment, tiny_fingerprint
from tests.test_bench_run import CLI_QUICK, ONE_CELL

CLI = [*CLI_QUICK, "--latent-steps", "0", "--no-figures", "--json"]
@pytest.fixture(scope="module")
def outcome():
    return run_bench(ONE_CELL)


def test_every_instrument_has_a_canary_and_saw_it(outcome):
    assert sorted(i for c in CANARIES for i in c.instruments) == sorted(INSTRUMENTS)
    for row in outcome.results:
        assert row.outcome is Outcome.HOLDS and "instruments saw their canaries" in row.figure, row.figure
        assert row.details["canaries"] and all(c["seen"] for c in row.details["canaries"].values())
    assert set(outcome.document["canaries"]) == {c.name for c in CANARIES}
    for canary in outcome.document["canaries"].values():  # each canary's own rows fail: it was caught
        assert any(r["outcome"] == "fails" for r in canary["claims"])


def test_the_structural_control_cells_have_every_field_of_a_real_cell(outcome):
    cell, control = outcome.document["cells"][0], structural._control_cell("x")
    for part in ("canonical_orders", "structure"):
        assert set(control[part]) == set(cell[part]), part


def test_coverage_is_counted_from_the_renders_beside_k_factorial(outcome):
    cell = outcome.document["cells"][0]
    assert cell["structure"]["orders_rendered"] == math.factorial(cell["k"])
    assert cell["canonical_orders"]["orders"] == math.factorial(cell["k"])
    assert cell["structure"]["redeliveries_rendered"] == cell["k"]
    render = next(r for r in outcome.results if r.claim == "C3" and "canary" not in r.check)
    assert f"of Σk! = {math.factorial(cell['k'])} input orders rendered" in render.figure
    one_order = outcome.document["canaries"]["one order"]
    assert one_order["structure"]["orders_rendered"] == 1 and one_order["canonical_orders"]["rows"] == math.factorial(
        one_order["k"])


def test_a_canary_an_instrument_misses_fails_its_row_naming_the_instrument(outcome):
    canaries = {name: structural_results([c["record"]], "m", 0.0) for name, c in _records(outcome).items()}
    render = INSTRUMENTS["re-delivery bytes"][0]
    missed = {"cells_where_redelivery_changed_bytes": []}
    canaries["arrival order"] = [dataclasses.replace(r, details={**r.details, **missed}) if r.check == render else r
                                 for r in canaries["arrival order"]]
    real = [dataclasses.replace(r, details={k: v for k, v in r.details.items() if k != "canaries"})
            for r in outcome.results]
    rows = {r.check: r for r in with_canaries(real, canaries)}
    assert rows[render].outcome is Outcome.FAILS
    assert rows[render].figure.startswith("BLIND: re-delivery bytes (canary 'arrival order')"), rows[render].figure
    assert [r.outcome for r in rows.values()].count(Outcome.FAILS) == 1
    nothing = with_canaries(real, {})  # no canary ran: every row is blind
    assert all(r.outcome is Outcome.FAILS for r in nothing)


def _records(outcome) -> dict:
    """Each canary's cell record, rebuilt from the document (the structural rows read only these)."""
    return {name: {"record": {"problem": c["cell"], "latent_steps": c["latent_steps"], "k": c["k"],
                              "canonical_orders": c["canonical_orders"], "structure": c["structure"]}}
            for name, c in outcome.document["canaries"].items()}


def test_the_forged_redelivery_keeps_the_id_and_changes_every_value_bit():
    fragment = random_fragment(tiny_fingerprint("bfloat16"), 3, seed=2)
    (forged,) = forged_redelivery(fragment)
    assert forged.content_id == fragment.content_id and forged.order_key == fragment.order_key
    def bits(t: torch.Tensor) -> torch.Tensor:
        return t.contiguous().view(torch.int16)

    # the sign bit, and only it, in every element
    assert bool(((bits(forged.values) ^ bits(fragment.values)) == -32768).all())


PLANTS = {
    "structural row counts CanonicalMerge rows, not the distinct orders decoded": (Patch(
        "realstate/bench/structural.py",
        'short_decodes = _cells(records, lambda r: r["canonical_orders"]["orders"] != math.factorial(r["k"]))',
        'short_decodes = _cells(records, lambda r: r["canonical_orders"]["rows"] != math.factorial(r["k"]))'),
        INSTRUMENTS["decoded-order coverage"][0], "decoded-order coverage"),
    "structural row compares re-delivery by content ids, not bytes": (Patch(
        "realstate/bench/structural.py",
        'any(d != r[s]["canonical_digest"]\n                                                       '
        'for d in r[s]["redelivery_digests"])',
        'any(ids != r[s]["canonical_layout"]\n                                                       '
        'for ids in r[s]["redelivery_layouts"])'),
        INSTRUMENTS["re-delivery bytes"][0], "re-delivery bytes"),
}
AUDIT_PLANTS = {
    "the rendered orders are counted from the loop, not from what was fed": (Patch(
        "realstate/bench/conditions.py",
        "return len({tuple(f.content_id for f in fed) for fed in inputs "
        "if sorted(f.content_id for f in fed) == members})",
        "return len(inputs)"),
        INSTRUMENTS["rendered-order coverage"][0], "rendered-order coverage"),
    "a re-delivery render is compared by its layout's ids": (Patch(
        "realstate/bench/conditions.py",
        "redelivered.append(again.digest())",
        "redelivered.append(canonical[0].digest() if [p.fragment.content_id for p in again.layout] == "
        "[p.fragment.content_id for p in canonical[0].layout] else again.digest())"),
        INSTRUMENTS["re-delivery bytes"][0], "re-delivery bytes"),
}


@pytest.mark.parametrize("name", [*PLANTS, *(pytest.param(n, marks=pytest.mark.audit) for n in AUDIT_PLANTS)])
def test_a_blind_instrument_planted_in_the_source_fails_the_bench_command(name, tmp_path):
    patch, row, instrument = {**PLANTS, **AUDIT_PLANTS}[name]
    copy = ScratchCopy(tmp_path / "scratch").apply(patch)
    done = copy.run(*CLI, "--out", str(tmp_path / "out"), timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    rows = {r["check"]: r for r in json.loads(done.stdout)["claims"]}
    assert rows[row]["outcome"] == "fails" and rows[row]["figure"].startswith(f"BLIND: {instrument} "), rows[row]
    assert not rows[row]["details"]["canaries"][instrument]["seen"]
    assert [r["outcome"] for r in rows.values()].count("fails") == 1  # the real cells look fine: only the canary saw
