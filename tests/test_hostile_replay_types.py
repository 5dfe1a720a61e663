"""Replay programs as a typed language: a well-formed trace whose steps apply to the wrong kind
of value (``merge`` of a bare fragment, ``render`` of a fragment, ``join_abstract`` of two
digests) is exit 2 with one line naming the trace and the step, before anything runs — never a
backend's ``AttributeError`` and exit 1 (a false violation).  The rows are generated from the
language's own op table: one per op x operand x kind it must refuse, so an op added without a
type signature fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audit import ScratchCopy
from audit.scratch import Patch
from canonmerge.cli import main
from modelcheck.program import EXPECTATIONS, OPS
from modelcheck.program_types import FRAGMENT, KINDS, SIGNATURES, check_program, missing_signatures
from modelcheck.trace import make_trace
from modelcheck.universes import universe

TIES = universe("ties")
# a value of every kind, at a known number
PRELUDE = [
    {"op": "fragment", "index": 0},                                                  # 0 fragment
    {"op": "copy", "of": 0},                                                         # 1 copy
    {"op": "singleton", "of": 0},                                                    # 2 state
    {"op": "render", "of": 2},                                                       # 3 digest
    {"op": "abstract", "of": 2},                                                     # 4 abstract
    {"op": "render_order", "of": 2},                                                 # 5 order
    {"op": "oracle_mismatch", "of": 2, "fragments": [0], "mode": "canonical"},       # 6 text
]
VALUE_OF = {"fragment": 0, "copy": 1, "state": 2, "digest": 3, "abstract": 4, "order": 5, "text": 6}
AT = len(PRELUDE)  # the number of the step under test


def trace(ops: list[dict[str, Any]], expect: list[dict[str, Any]]) -> dict[str, Any]:
    """A trace of ``ops``: built well-typed, then given the program under test as a peer would
    (the file, not ``make_trace``, which refuses a mistyped program)."""
    document = make_trace(kind="program", check="re-deliveries", claim="C3", backend="realstate", mutant=None,
                          universe=TIES.name, geometry=TIES.geometry, fragments={0: TIES.fragments[0]},
                          ops=list(PRELUDE), expect=[{"kind": "equal", "left": 3, "right": 3}],
                          expected="", observed="")
    return {**document, "ops": ops, "expect": expect}


def well_typed(op: str) -> dict[str, Any]:
    """``op`` with every operand of a kind it accepts."""
    operands, _ = SIGNATURES[op]
    step: dict[str, Any] = {"op": op}
    for field, kind in OPS[op].items():
        if kind == "index":
            step[field] = 0
        elif kind == "mode":
            step[field] = "canonical"
        else:
            accepted = operands[field]
            ref = VALUE_OF[FRAGMENT if FRAGMENT in accepted else sorted(accepted)[0]]
            step[field] = ref if kind == "ref" else [ref]
    return step


def op_rows() -> list[tuple[str, str, str]]:
    return [(op, field, kind) for op, (operands, _) in SIGNATURES.items() for field, accepted in operands.items()
            for kind in KINDS if kind not in accepted]


def mistyped(op: str, field: str, kind: str) -> dict[str, Any]:
    step = well_typed(op)
    step[field] = VALUE_OF[kind] if OPS[op][field] == "ref" else [VALUE_OF[kind]]
    return step


def replay(tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    code = main(["check", "--replay", str(path)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.err


def test_every_op_and_expectation_has_a_type_signature():
    assert missing_signatures(OPS, EXPECTATIONS) == []
    # the check can fail: an op added to the language without a signature is named
    assert missing_signatures({**OPS, "reverse": {"of": "ref"}}, EXPECTATIONS) == ["op reverse"]
    assert missing_signatures({**OPS, "merge": {"left": "ref", "right": "ref", "third": "ref"}}, EXPECTATIONS) \
        == ["op merge"]
    assert missing_signatures(OPS, {**EXPECTATIONS, "greater": {}}) == ["expectation greater"]
    assert {op for op, _, _ in op_rows()} == {op for op in OPS if op != "fragment"}  # every op with a value operand


@pytest.mark.parametrize("op", list(OPS))
def test_every_op_well_typed_passes_the_checker_and_replays(op: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The signatures are the runtime's: each op on the kinds it accepts runs (exit 0: the
    expectation holds), so the checker refuses nothing a backend could do."""
    ops = [*PRELUDE, well_typed(op)]
    assert check_program(ops, [])[-1] == SIGNATURES[op][1]
    code, err = replay(tmp_path, trace(ops, [{"kind": "equal", "left": 3, "right": 3}]), capsys)
    assert code in (0, 1) and "mistyped" not in err, err


@pytest.mark.parametrize("op,field,kind", op_rows(), ids=[f"{o}.{f}={k}" for o, f, k in op_rows()])
def test_a_step_on_the_wrong_kind_is_one_line_naming_the_trace_and_the_step(
        op: str, field: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = trace([*PRELUDE, mistyped(op, field, kind)], [{"kind": "equal", "left": 3, "right": 3}])
    code, err = replay(tmp_path, document, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert str(tmp_path / "t.json") in lines[0] and f"ops[{AT}] ({op}).{field}" in lines[0], lines[0]
    assert f"got value {VALUE_OF[kind]}, a{'n' if kind[0] in 'aeiou' else ''} {kind}" in lines[0], lines[0]


EXPECTATION_ROWS = [("equal", {"left": 3, "right": 5}, "different kinds"),
                    ("equal", {"left": 2, "right": 2}, "got a state"),
                    ("equal", {"left": 0, "right": 0}, "got a fragment"),
                    ("one_of", {"value": 3, "among": [3, 6]}, "got a text"),
                    ("subset", {"left": 3, "right": 3}, "got a digest"),
                    ("empty", {"value": 5}, "got an order")]


@pytest.mark.parametrize("kind,fields,says", EXPECTATION_ROWS, ids=[f"{k}-{s}" for k, _, s in EXPECTATION_ROWS])
def test_an_expectation_on_the_wrong_kind_is_one_line(kind: str, fields: dict[str, Any], says: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, err = replay(tmp_path, trace(list(PRELUDE), [{"kind": kind, **fields}]), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"expect[0] ({kind})" in err and says in err, err


def test_the_reported_three_in_the_installed_command(tmp_path: Path) -> None:
    """``merge`` of a bare fragment, ``render`` of a fragment, ``join_abstract`` of two digests."""
    for step, where in [({"op": "merge", "left": 0, "right": 0}, "ops[7] (merge).left"),
                        ({"op": "render", "of": 0}, "ops[7] (render).of"),
                        ({"op": "join_abstract", "left": 3, "right": 3}, "ops[7] (join_abstract).left")]:
        path = tmp_path / f"{step['op']}.json"
        path.write_text(json.dumps(trace([*PRELUDE, step], [{"kind": "equal", "left": 3, "right": 3}])))
        if step["op"] != "merge":
            assert main(["check", "--replay", str(path)]) == 2
            continue
        out = subprocess.run([sys.executable, "-m", "canonmerge", "check", "--replay", str(path)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert str(path) in out.stderr and where in out.stderr and "Traceback" not in out.stderr


def test_a_checker_that_accepts_every_kind_lets_the_mistyped_program_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The cheap negative: the signatures widened to every kind in this process, the product's
    command runs the mistyped ``merge`` and the backend's failure escapes — the refusal above is
    the checker's doing, not the loader's."""
    from modelcheck import program_types

    everything = frozenset(KINDS)
    monkeypatch.setattr(program_types, "SIGNATURES", {op: ({f: everything for f in operands}, makes)
                                                      for op, (operands, makes) in SIGNATURES.items()})
    path = tmp_path / "merge.json"
    path.write_text(json.dumps(trace([*PRELUDE, {"op": "merge", "left": 0, "right": 0}],
                                     [{"kind": "equal", "left": 3, "right": 3}])))
    with pytest.raises(AttributeError):
        main(["check", "--replay", str(path)])
    assert "mistyped program" not in capsys.readouterr().err


@pytest.mark.heavy  # a scratch copy of the packages and a process: seconds
def test_a_checker_with_a_planted_bug_lets_the_mistyped_program_run(tmp_path: Path) -> None:
    """The negative: the operand check planted away in the checker's source, the product's own
    command runs the mistyped program again and the backend's failure escapes (not exit 2 and
    one line), so the rows above are the checker's doing."""
    scratch = ScratchCopy(tmp_path / "copy").apply(Patch("modelcheck/program_types.py",
                                                         "                if kinds[ref] not in accepted:\n",
                                                         "                if False:\n"))
    path = tmp_path / "merge.json"
    path.write_text(json.dumps(trace([*PRELUDE, {"op": "merge", "left": 0, "right": 0}],
                                     [{"kind": "equal", "left": 3, "right": 3}])))
    out = scratch.run("check", "--replay", str(path), timeout=120)
    assert out.returncode != 2 and "mistyped program" not in out.stderr, out.stderr
