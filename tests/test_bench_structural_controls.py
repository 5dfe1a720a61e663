"""The structural rows' synthetic control cells (``structural.CONTROLS``), on their own (fast):
each is flagged by its row, and only by its one finding, on the correct rows; the rows weakened
in their source (structural.py loaded from the patched text in this process) leave a control
unflagged, and the real rows then fail, their figure starting ``BLIND:``; so do rows that carry
each other's controls.  The bench command itself catching the swap is ``-m audit``."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from audit.scratch import Patch, ScratchCopy
from realstate.bench import structural
from realstate.bench.structural import BAG_CHECK, CONTROLS, UNIQUENESS_CHECK, structural_results
from spec import Outcome
from tests.test_bench_run import CLI_QUICK

ANSWERS_NEVER_FLAGGED = ('lambda r: r["canonical_orders"]["distinct_answers"] != 1)', "lambda r: None)")
CONTROLS_SWAPPED = ("if check == row.check}", "if check != row.check}")
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


def test_rows_that_carry_each_others_controls_fail_blind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every control is still flagged (a correct run); only where they are attached is wrong."""
    rows = _patched(CONTROLS_SWAPPED, monkeypatch).structural_results([_clean("a")], "m", 0.0)
    assert [r.outcome for r in rows] == [Outcome.FAILS] * 4
    for row in rows:
        assert row.figure.startswith("BLIND: ") and "(another row's control)" in row.figure, row.figure
        assert all(row.details["controls"].values())


@pytest.mark.audit
def test_the_bench_command_fails_when_the_rows_carry_each_others_controls(tmp_path: Path) -> None:
    copy = ScratchCopy(tmp_path / "scratch").apply(Patch("realstate/bench/structural.py", *CONTROLS_SWAPPED))
    done = copy.run(*CLI_QUICK, "--latent-steps", "0", "--no-figures", "--json", "--out", str(tmp_path / "out"),
                    timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    rows = {r["check"]: r for r in json.loads(done.stdout)["claims"]}
    assert rows[UNIQUENESS_CHECK]["outcome"] == rows[BAG_CHECK]["outcome"] == "fails"
    assert "no cell with a BagMerge witness (another row's control)" in rows[UNIQUENESS_CHECK]["figure"]
    assert "answers differ with equal logits (another row's control)" in rows[BAG_CHECK]["figure"]
