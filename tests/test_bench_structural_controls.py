"""The structural rows' synthetic control cells (``structural.CONTROLS``), on their own (fast):
each is flagged by its row, and only by its one finding, on the correct rows; the rows weakened
in their source (structural.py loaded from the patched text in this process) leave a control
unflagged, and the real rows then fail, their figure starting ``BLIND:``."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from realstate.bench import structural
from realstate.bench.structural import BAG_CHECK, CONTROLS, UNIQUENESS_CHECK, structural_results
from spec import Outcome

ANSWERS_NEVER_FLAGGED = ('lambda r: r["canonical_orders"]["distinct_answers"] != 1)', "lambda r: None)")
WITNESS_OPTIONAL = ("_outcome(len(no_witness) < cells and", "_outcome(len(no_witness) <= cells and")


def _clean(name: str) -> dict:
    return structural._control_cell(name)


def _patched(patch: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    source = Path(structural.__file__).read_text()
    assert source.count(patch[0]) == 1
    module = types.ModuleType("patched_structural")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source.replace(*patch), structural.__file__, "exec"), module.__dict__)
    return module


def test_a_clean_control_cell_holds_every_row_and_each_control_fails_only_its_own() -> None:
    rows = structural_results([_clean("a"), _clean("b")], "m", 0.0)
    assert [r.outcome for r in rows] == [Outcome.HOLDS] * 4
    controls = {r.check: r.details.get("controls") for r in rows}
    assert controls[UNIQUENESS_CHECK] == {"answers differ with equal logits": True}
    assert controls[BAG_CHECK] == {"no cell with a BagMerge witness": True}
    for record, check, finding in CONTROLS.values():
        failed = {r.check: r.details[finding] if r.check == check else None
                  for r in structural._rows([record], "m", 0.0) if r.outcome is Outcome.FAILS}
        assert failed == {check: [f"{record['problem']}@L0"]}


@pytest.mark.parametrize("patch, check, control", [
    pytest.param(ANSWERS_NEVER_FLAGGED, UNIQUENESS_CHECK, "answers differ with equal logits", id="answers"),
    pytest.param(WITNESS_OPTIONAL, BAG_CHECK, "no cell with a BagMerge witness", id="witness"),
])
def test_a_row_that_misses_its_control_fails_blind(patch: tuple[str, str], check: str, control: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rows = {r.check: r for r in _patched(patch, monkeypatch).structural_results([_clean("a")], "m", 0.0)}
    assert rows[check].outcome is Outcome.FAILS and rows[check].figure.startswith(f"BLIND: {control} not flagged")
    assert rows[check].details["controls"] == {control: False}
    assert [r.outcome for r in rows.values()].count(Outcome.FAILS) == 1
