"""Plant each mutant in its own scratch copy and run the product's parts on it.

The parts are the three ``canonmerge verify`` runs — ``prove``, ``check``, ``realstate`` —
each on its defaults (exactly verify's), each as its own ``python -m canonmerge PART
--fail-fast --json`` process so that every cell of the kill matrix has its own outcome and
time.  ``--fail-fast`` only makes a failing part stop early; a part that passes runs in full.

A cell's outcome:

- ``killed``: exit 1 and at least one row that does not hold (the rows are recorded);
- ``crashed``: a traceback, an exit code other than 0/1, or output that is not a report (the
  mutant broke the product outright; counted as detected, listed apart);
- ``timeout``: the part ran past its limit (counted as detected, listed apart);
- ``survived``: exit 0 — every row holds;
- ``not run``: an earlier part already detected the mutant (unless ``full_matrix``);
- ``not reached``: the part never executes the statement the mutant changes (measured with
  coverage on the unpatched control, ``audit.reach``): the part's run would be the control's
  run, so it is not run and counts as a survival of that part."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.mutants import Mutant
from audit.scratch import PatchError, ScratchCopy, kill_live_groups, project_root
from audit.settings import DEFAULT_TIMEOUT_S, FAIL_FAST_PARTS, PART_FLAGS, PARTS
from spec import FormatError
from spec.bounded import parse_json, read_text

KILLED, CRASHED, TIMEOUT, SURVIVED = "killed", "crashed", "timeout", "survived"
NOT_RUN, NOT_REACHED = "not run", "not reached"
DETECTED = (KILLED, CRASHED, TIMEOUT)
# Threads per part process: the audit runs several at once on shared machines.  The product's
# bytes do not depend on the thread count (C3 across devices and thread counts), only its speed.
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass
class Cell:
    """One (mutant, part) outcome."""

    part: str
    outcome: str
    seconds: float = 0.0
    exit_code: int | None = None
    failing: list[str] = field(default_factory=list)  # "C3/permutations" rows that did not hold
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "outcome": self.outcome, "seconds": round(self.seconds, 2),
                "exit_code": self.exit_code, "failing": self.failing, "message": self.message}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cell:
        return cls(data["part"], data["outcome"], data["seconds"], data["exit_code"], list(data["failing"]),
                   data["message"])


@dataclass
class MutantResult:
    mutant: Mutant
    cells: list[Cell]
    seconds: float
    error: str = ""  # the patch did not apply: the mutant is not counted

    @property
    def verdict(self) -> str:
        """killed / crashed / timeout (by the first part that detected it), survived, or error."""
        if self.error:
            return "error"
        for cell in self.cells:
            if cell.outcome in DETECTED:
                return cell.outcome
        return SURVIVED

    @property
    def detected(self) -> bool:
        return self.verdict in DETECTED

    @property
    def reached(self) -> bool:
        """Some part executed the mutated statement (or was run on it)."""
        return any(c.outcome != NOT_REACHED for c in self.cells)

    def to_json(self) -> dict[str, Any]:
        return {**self.mutant.to_json(), "verdict": self.verdict, "seconds": round(self.seconds, 2),
                "error": self.error, "cells": [c.to_json() for c in self.cells]}


@dataclass(frozen=True)
class RunConfig:
    parts: tuple[str, ...] = PARTS
    part_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # extra flags per part (scoping)
    timeout_s: float = DEFAULT_TIMEOUT_S
    full_matrix: bool = False
    source: Path | None = None
    workdir: Path | None = None
    single_thread: bool = True
    # the commands that exercise a target file, where not all of ``parts`` (audit.targets.Target.parts)
    parts_by_path: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def command(self, part: str) -> list[str]:
        """The part's command line: its quick settings (``PART_FLAGS``), the extra flags, and
        ``--fail-fast`` where the command has it, then ``--json``."""
        tail = ("--fail-fast", "--json") if part in FAIL_FAST_PARTS else ("--json",)
        return [part, *PART_FLAGS.get(part, ()), *self.part_args.get(part, ()), *tail]

    def parts_for(self, path: str) -> tuple[str, ...]:
        """The parts a mutant of ``path`` runs against, in ``parts``' order."""
        wanted = self.parts_by_path.get(path)
        return self.parts if wanted is None else tuple(p for p in self.parts if p in wanted)


def _tail(text: str, lines: int = 1) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])[:300]


def _rows(report: Any) -> list[dict[str, Any]] | None:
    """The claim rows of a JSON report: a part report's (``parts``), or the bench document's
    (``claims``: its structural rows); ``None`` when it is neither."""
    if not isinstance(report, dict):
        return None
    if "parts" in report:
        return [r for p in report["parts"] for r in p["results"]]
    if report.get("command") is None and isinstance(report.get("claims"), list) and "benchmark" in report:
        return list(report["claims"])
    return None


def classify(part: str, returncode: int, stdout: str, stderr: str, seconds: float) -> Cell:
    """A part's process outcome as a matrix cell (see the module docstring)."""
    if "Traceback (most recent call last)" in stderr:
        return Cell(part, CRASHED, seconds, returncode, message=_tail(stderr))
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        return Cell(part, CRASHED, seconds, returncode, message=_tail(stderr) or "no JSON report on stdout")
    rows = _rows(report)
    if rows is None:
        error = report.get("error", {}) if isinstance(report, dict) else {}
        return Cell(part, CRASHED, seconds, returncode,
                    message=f"exit {returncode}: {error.get('message', 'not a part report')}"[:300])
    failing = [f"{r['claim']}/{r['check']}" for r in rows if r["outcome"] not in ("holds", "not applicable")]
    if returncode == 0 and not failing:
        return Cell(part, SURVIVED, seconds, 0)
    if returncode == 1 and failing:
        return Cell(part, KILLED, seconds, 1, failing)
    return Cell(part, CRASHED, seconds, returncode, failing,
                message=f"exit {returncode} with {len(failing)} failing row(s)")


def run_part(scratch: ScratchCopy, part: str, config: RunConfig) -> Cell:
    env = dict(THREAD_ENV) if config.single_thread else {}
    started = time.perf_counter()
    try:
        out = scratch.run(*config.command(part), timeout=config.timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return Cell(part, TIMEOUT, time.perf_counter() - started, message=f"over {config.timeout_s:g} s")
    return classify(part, out.returncode, out.stdout, out.stderr, time.perf_counter() - started)


Reached = Callable[[Mutant, str], bool]


def always(mutant: Mutant, part: str) -> bool:
    return True


def run_mutant(mutant: Mutant | None, config: RunConfig, reached: Reached = always) -> MutantResult:
    """Plant ``mutant`` (``None``: the unpatched control) in a fresh scratch copy and run the
    parts; a part that ``reached`` says never executes the mutated statement is not run."""
    started = time.perf_counter()
    parts = config.parts if mutant is None else config.parts_for(mutant.path)
    wanted = [p for p in parts if mutant is None or reached(mutant, p)]
    if mutant is not None and not wanted:
        return MutantResult(mutant, [Cell(p, NOT_REACHED) for p in parts], 0.0)
    with tempfile.TemporaryDirectory(prefix="canonmerge-audit-", dir=config.workdir) as tmp:
        scratch = ScratchCopy(Path(tmp), config.source or project_root())
        if mutant is not None:
            try:
                scratch.apply(*mutant.patches)
                scratch.check_imported()
            except PatchError as exc:
                return MutantResult(mutant, [], time.perf_counter() - started, error=str(exc))
        cells: list[Cell] = []
        for part in parts:
            if part not in wanted:
                cells.append(Cell(part, NOT_REACHED))
            elif cells and not config.full_matrix and any(c.outcome in DETECTED for c in cells):
                cells.append(Cell(part, NOT_RUN))
            else:
                cells.append(run_part(scratch, part, config))
    placeholder = Mutant("control", "control", "", 0, "none", (), "the unpatched product")
    return MutantResult(mutant or placeholder, cells, time.perf_counter() - started)


def run_all(mutants: Sequence[Mutant], config: RunConfig, workers: int = 2, reached: Reached = always,
            done: Callable[[MutantResult], None] = lambda r: None) -> list[MutantResult]:
    """Every mutant, at most ``workers`` at a time (each mutant's parts run as child processes);
    ``done`` is called as each finishes (journal, progress).  Results come back in input order."""
    results: dict[str, MutantResult] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = {pool.submit(run_mutant, m, config, reached): m for m in mutants}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future].id] = result
            done(result)
    except BaseException:  # interrupted or terminated: kill the runs first, or shutdown waits on them
        kill_live_groups()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return [results[m.id] for m in mutants]


def environment_note() -> str:
    threads = ", ".join(f"{k}={v}" for k, v in THREAD_ENV.items())
    return (f"each part runs as `python -m canonmerge PART [quick settings] [--fail-fast] --json` with {threads}; "
            f"cpu count {os.cpu_count()}")


def load_journal(path: Path, mutants: Iterable[Mutant]) -> dict[str, MutantResult]:
    """Results already in the journal for these mutants (same id, same patches): a resumed run
    does not redo them.  Lines that do not parse are an error naming the line."""
    wanted = {m.id: m for m in mutants}
    found: dict[str, MutantResult] = {}
    for number, data in journal_records(path):
        try:
            if data.get("kind") != "mutant":  # the control's line, kept by audit.campaign
                continue
            mutant = wanted.get(data["id"])
            if mutant is None:
                continue
            if [list(p.values()) for p in data["patches"]] != [[p.path, p.old, p.new] for p in mutant.patches]:
                continue
            found[mutant.id] = MutantResult(mutant, [Cell.from_json(c) for c in data["cells"]], data["seconds"],
                                            data["error"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path}:{number}: not a journal line ({type(exc).__name__}: {exc})") from None
    return found


def journal_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The journal's lines as (line number, object), read bounded (``spec.bounded``: a regular
    file, never a FIFO, of at most 64 MiB; strict JSON); none when the file does not exist yet.
    A line that is not a JSON object is a ``ValueError`` naming it."""
    if not os.path.lexists(path):
        return []
    try:
        text = read_text(path)
    except FormatError as exc:
        raise ValueError(str(exc)) from None
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = parse_json(line, f"{path}:{number}")
        except FormatError as exc:
            raise ValueError(f"{path}:{number}: not a journal line ({exc.problem})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}:{number}: not a journal line (want a JSON object)")
        records.append((number, data))
    return records


def journal_line(result: MutantResult, kind: str = "mutant") -> str:
    return json.dumps({"kind": kind, **result.to_json()})
