"""How a part's process becomes a kill-matrix cell, and how cells become the kill ratio
(pure functions on recorded outputs: no product runs)."""

from __future__ import annotations

import json

from audit.mutants import Mutant
from audit.run import (
    CRASHED,
    KILLED,
    NOT_REACHED,
    NOT_RUN,
    SURVIVED,
    TIMEOUT,
    Cell,
    MutantResult,
    classify,
    journal_line,
    load_journal,
)
from audit.scratch import Patch
from audit.summary import stale_entries, summarize


def report(*outcomes: str) -> str:
    rows = [{"claim": "C3", "check": f"row {i}", "outcome": o} for i, o in enumerate(outcomes)]
    return json.dumps({"command": "check", "parts": [{"part": "modelcheck", "results": rows}]})


def test_exit_1_with_a_failing_row_is_a_kill_naming_the_rows():
    cell = classify("check", 1, report("holds", "fails"), "", 2.0)
    assert cell.outcome == KILLED and cell.failing == ["C3/row 1"]


def test_exit_0_with_every_row_holding_is_a_survivor():
    assert classify("check", 0, report("holds", "holds"), "", 1.0).outcome == SURVIVED


def test_a_traceback_is_a_crash_even_with_exit_1():
    crash = "Traceback (most recent call last):\n  ...\nZeroDivisionError: division by zero\n"
    cell = classify("check", 1, "", crash, 1)
    assert cell.outcome == CRASHED and "ZeroDivisionError" in cell.message


def test_an_error_document_or_no_report_is_a_crash():
    doc = json.dumps({"command": "check", "exit_code": 2, "error": {"kind": "input", "message": "bad fingerprint"}})
    cell = classify("check", 2, doc, "", 1)
    assert cell.outcome == CRASHED and "bad fingerprint" in cell.message
    assert classify("check", 1, "not json", "", 1).outcome == CRASHED


def test_inconsistent_exit_codes_are_crashes_not_passes():
    """Exit 0 with a failing row (a broken exit-code rule) or exit 1 with none is never a pass."""
    assert classify("check", 0, report("fails"), "", 1).outcome == CRASHED
    assert classify("check", 1, report("holds"), "", 1).outcome == CRASHED
    assert classify("check", 2, report("holds"), "", 1).outcome == CRASHED


def mutant(name: str, origin: str = "mutmut") -> Mutant:
    return Mutant(f"spec/x.py:1:{name}:00000000", origin, "spec/x.py", 1, name, (Patch("spec/x.py", "a", "b"),), name)


def result(name: str, *outcomes: str, origin: str = "mutmut") -> MutantResult:
    parts = ("prove", "check", "realstate")
    return MutantResult(mutant(name, origin), [Cell(p, o) for p, o in zip(parts, outcomes)], 1.0)


def test_the_ratio_counts_crashes_and_timeouts_and_excludes_only_equivalent_survivors():
    results = [result("a", KILLED, NOT_RUN, NOT_RUN), result("b", SURVIVED, CRASHED, NOT_RUN),
               result("c", SURVIVED, SURVIVED, TIMEOUT), result("d", SURVIVED, SURVIVED, SURVIVED),
               result("e", NOT_REACHED, NOT_REACHED, NOT_REACHED), result("f", SURVIVED, SURVIVED, SURVIVED),
               result("g", KILLED, NOT_RUN, NOT_RUN, origin="curated"),
               result("h", SURVIVED, SURVIVED, SURVIVED, origin="curated")]
    equivalent = {mutant("f").id: "why", mutant("a").id: "wrongly judged"}
    s = summarize(results, equivalent)
    o = s.overall
    assert (o.mutants, o.killed, o.crashed, o.timeout, o.survived, o.not_reached, o.equivalent) == (8, 2, 1, 1, 3, 1, 1)
    assert o.ratio == 4 / 7
    assert [r.mutant.id for r in s.gaps] == [mutant("d").id, mutant("e").id, mutant("h", "curated").id]
    assert [r.mutant.id for r in s.curated_survivors] == [mutant("h", "curated").id]
    assert [r.mutant.id for r in s.wrongly_equivalent] == [mutant("a").id]
    assert s.killer == {"prove": 2, "check": 1, "realstate": 1}
    assert s.by_origin["curated"].ratio == 0.5


def test_stale_equivalence_entries_are_reported():
    assert stale_entries({"x": "why", "y": "why"}, ["y", "z"]) == ["x"]


def test_the_journal_round_trips_and_ignores_changed_patches(tmp_path):
    path = tmp_path / "journal.jsonl"
    done = result("a", KILLED, NOT_RUN, NOT_RUN)
    done.cells[0].failing = ["C3/row 1"]
    control = json.dumps({"kind": "control", "commands": [], "cells": [], "executed": None})
    path.write_text(control + "\n" + journal_line(done) + "\n")  # the control's line is skipped
    loaded = load_journal(path, [done.mutant])
    assert loaded[done.mutant.id].verdict == KILLED and loaded[done.mutant.id].cells[0].failing == ["C3/row 1"]
    moved = Mutant(done.mutant.id, "mutmut", "spec/x.py", 1, "a", (Patch("spec/x.py", "a", "c"),), "a")
    assert load_journal(path, [moved]) == {}
    assert load_journal(tmp_path / "absent.jsonl", [done.mutant]) == {}
    (tmp_path / "bad.jsonl").write_text('{"kind": "mutant"}\n')
    try:
        load_journal(tmp_path / "bad.jsonl", [done.mutant])
    except ValueError as exc:
        assert "bad.jsonl:1" in str(exc)
    else:
        raise AssertionError("a malformed journal line must be an error")


def test_an_unpatchable_mutant_is_an_error_never_a_kill(tmp_path):
    """A patch whose text is not in the file plants nothing: the mutant is an error (no part is
    run, it is not counted in the ratio) and the audit cannot pass."""
    from audit.campaign import AuditOptions, AuditReport
    from audit.run import RunConfig, run_mutant

    stale = Mutant("spec/ordering.py:1:curated:stale:00000000", "curated", "spec/ordering.py", 1, "curated:stale",
                   (Patch("spec/ordering.py", "this text is not in the file", "x"),), "stale patch")
    config = RunConfig(parts=("prove",), workdir=tmp_path)
    r = run_mutant(stale, config)
    assert r.verdict == "error" and not r.detected and r.cells == []
    assert "occurs 0 times" in r.error
    s = summarize([r, result("k", KILLED, NOT_RUN, NOT_RUN)], {})
    assert [e.mutant.id for e in s.errors] == [stale.id]
    assert (s.overall.mutants, s.overall.killed, s.overall.ratio) == (1, 1, 1.0)
    report = AuditReport(AuditOptions(config=config), [], [stale], [], None, [r], s, [], 0.0)
    assert report.meets_target and report.exit_code() == 1


def test_the_control_counts_lines_run_in_checks_pool_workers(tmp_path):
    """check runs its shards in worker processes: their lines must count as reached, or a mutant
    only the workers execute would be skipped as 'not reached' without being run."""
    from audit.reach import control_with_coverage
    from audit.run import RunConfig
    from audit.scratch import ScratchCopy

    scratch = ScratchCopy(tmp_path / "copy")
    config = RunConfig(parts=("check",), part_args={"check": ("--no-gossip", "--max-arity", "2", "--only", "C1",
                                                             "--workers", "2")})
    cells, reach = control_with_coverage(scratch, config, ["spec/laws.py", "modelcheck/checks.py"])
    assert [c.outcome for c in cells] == ["survived"], cells
    law_line = next(i for i, text in enumerate((scratch.root / "spec/laws.py").read_text().splitlines(), 1)
                    if "if not equal(merge(a, b), merge(b, a)):" in text)
    assert law_line in reach.executed["check"]["spec/laws.py"]  # run only inside the pool's workers

