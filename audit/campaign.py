"""One audit: choose the mutants, run the unpatched control (under coverage), run every mutant,
summarize.  ``canonmerge audit`` maps its flags to ``AuditOptions`` and prints the report.

The control must pass — every part exits 0 on the unpatched copy — or the audit stops: a kill
means nothing if the product already fails.  With a journal, every finished mutant is appended
as one JSON line, and a rerun with the same journal skips what is already there (a full run
takes hours; an interruption loses at most the mutants in flight)."""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from audit import curated
from audit.equivalent import EQUIVALENT, GAPS
from audit.generate import generate, mutmut_version, sample
from audit.mutants import Mutant
from audit.reach import Reach, control_with_coverage
from audit.run import (
    SURVIVED,
    Cell,
    MutantResult,
    RunConfig,
    always,
    environment_note,
    journal_line,
    journal_records,
    load_journal,
    run_all,
    run_mutant,
)
from audit.scratch import ScratchCopy, project_root, stopping_runs_on_exit
from audit.settings import DEFAULT_TARGET_RATIO, DEFAULT_WORKERS, ORIGINS
from audit.summary import Attached, Summary, attach, summarize
from audit.targets import GROUPS, OPERATORS, Target, target


class AuditError(RuntimeError):
    """The audit cannot give a meaningful answer (bad selection, control fails, bad journal)."""


@dataclass(frozen=True)
class AuditOptions:
    config: RunConfig = field(default_factory=RunConfig)
    group: str = "verify"  # audit.targets.GROUPS: verify's code or the instruments
    files: tuple[str, ...] = ()
    origin: str = "all"
    picks: tuple[str, ...] = ()
    sample_size: int | None = None
    seed: int = 0
    workers: int = DEFAULT_WORKERS
    reach: bool = True
    journal: Path | None = None
    target_ratio: float = DEFAULT_TARGET_RATIO


@dataclass
class AuditReport:
    options: AuditOptions
    generated: list[Mutant]
    selected: list[Mutant]
    control: list[Cell]
    reach: Reach | None
    results: list[MutantResult]
    summary: Summary
    stale_equivalent: list[str]
    seconds: float
    reused: int = 0
    equivalent: Attached = field(default_factory=Attached)  # audit.equivalent's entries, attached
    gaps: Attached = field(default_factory=Attached)

    @property
    def meets_target(self) -> bool:
        ratio = self.summary.overall.ratio
        return ratio is not None and ratio >= self.options.target_ratio

    def exit_code(self) -> int:
        """0: the ratio meets the target and no curated bug survived; 1 otherwise."""
        s = self.summary
        return 0 if self.meets_target and not s.curated_survivors and not s.errors and not s.wrongly_equivalent else 1

    def to_json(self) -> dict[str, Any]:
        o = self.options
        return {
            "tool": {"mutmut": mutmut_version(), "operators": list(OPERATORS)},
            "targets": [t.path for t in _targets(o.files, o.group)],
            "target_parts": {t.path: list(o.config.parts_for(t.path)) for t in _targets(o.files, o.group)},
            "selection": {"group": o.group, "origin": o.origin, "files": list(o.files), "picks": list(o.picks),
                          "sample": o.sample_size, "seed": o.seed, "generated": len(self.generated),
                          "selected": len(self.selected)},
            "parts": [" ".join(o.config.command(p)) for p in o.config.parts],
            "full_matrix": o.config.full_matrix, "timeout_s": o.config.timeout_s, "workers": o.workers,
            "environment": environment_note(),
            "control": [c.to_json() for c in self.control],
            "reach": None if self.reach is None else {
                p: {"statements_not_executed": self.reach.unexecuted(p)} for p in sorted(self.reach.sources)},
            "target_ratio": o.target_ratio, "meets_target": self.meets_target,
            "summary": self.summary.to_json(),
            "stale_equivalent_entries": self.stale_equivalent,
            "moved_equivalent_entries": self.equivalent.moved,
            "equivalent": {r.mutant.id: self.equivalent.judged[r.mutant.id]
                           for r in self.summary.equivalent_survivors},
            "mutants": [r.to_json() for r in self.results],
            "seconds": round(self.seconds, 1), "reused_from_journal": self.reused,
        }


def _targets(files: Sequence[str], group: str = "verify") -> list[Target]:
    if group not in GROUPS:
        raise AuditError(f"--targets must be one of {', '.join(GROUPS)}; got {group!r}")
    if not files:
        return list(GROUPS[group])
    try:
        return [target(f) for f in files]
    except KeyError as exc:
        raise AuditError(str(exc.args[0])) from None


def choose(options: AuditOptions, root: Path) -> tuple[list[Mutant], list[Mutant]]:
    """(every mutant the selection draws from, the ones to run)."""
    if options.origin not in ORIGINS:
        raise AuditError(f"--origin must be one of {', '.join(ORIGINS)}; got {options.origin!r}")
    targets = _targets(options.files, options.group)
    paths = {t.path for t in targets}
    every = generate(root, targets) + [m for m in curated.as_mutants(root) if m.path in paths]
    pool = [m for m in every if options.origin in ("all", m.origin)]
    chosen: dict[str, Mutant] = {}
    if options.sample_size is not None:
        if options.sample_size < 0:
            raise AuditError(f"--sample must be >= 0; got {options.sample_size}")
        chosen.update((m.id, m) for m in sample(pool, options.sample_size, options.seed))
    elif not options.picks:
        chosen.update((m.id, m) for m in pool)
    for pick in options.picks:  # looked up among the selected files' mutants (every target's without --file)
        matches = _matching(every, pick)
        if len(matches) != 1:
            shown = ", ".join(m.id for m in matches[:5]) or "none"
            raise AuditError(f"--mutant {pick!r} matches {len(matches)} mutants (want 1): {shown}")
        chosen.setdefault(matches[0].id, matches[0])
    return every, sorted(chosen.values(), key=lambda m: (m.origin != "curated", m.path, m.line, m.id))


def _matching(mutants: Sequence[Mutant], pick: str) -> list[Mutant]:
    """The mutant whose id is ``pick``, else those whose id contains it."""
    return [m for m in mutants if m.id == pick] or [m for m in mutants if pick in m.id]


def _sources_hash(root: Path, paths: Sequence[str]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.encode() + b"\0" + (root / p).read_bytes() + b"\0")
    return h.hexdigest()


def _control(options: AuditOptions, root: Path, paths: list[str]) -> tuple[list[Cell], Reach | None]:
    config = options.config
    key = {"commands": [config.command(p) for p in config.parts], "sources": _sources_hash(root, paths),
           "reach": options.reach}
    if options.journal is not None:
        saved = _saved_control(options.journal, key, root)
        if saved is not None:
            return saved
    if options.reach:
        with tempfile.TemporaryDirectory(prefix="canonmerge-audit-control-", dir=config.workdir) as tmp:
            cells, reach = control_with_coverage(ScratchCopy(Path(tmp), root), config, paths)
    else:
        cells, reach = run_mutant(None, replace(config, full_matrix=True)).cells, None
    if options.journal is not None and all(c.outcome == SURVIVED for c in cells):
        line = {"kind": "control", **key, "cells": [c.to_json() for c in cells],
                "executed": None if reach is None else reach.to_json()}
        with options.journal.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    return cells, reach


def _saved_control(journal: Path, key: dict[str, Any], root: Path) -> tuple[list[Cell], Reach | None] | None:
    try:
        records = journal_records(journal)
    except ValueError as exc:
        raise AuditError(str(exc)) from None
    for number, data in reversed(records):
        if data.get("kind") == "control" and all(data.get(k) == v for k, v in key.items()):
            try:
                cells = [Cell.from_json(c) for c in data["cells"]]
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise AuditError(f"{journal}:{number}: not a journal line ({type(exc).__name__}: {exc})") from None
            if data["executed"] is None:
                return cells, None
            executed = {part: {p: set(v) for p, v in paths.items()} for part, paths in data["executed"].items()}
            paths = {p for by_path in executed.values() for p in by_path}
            reach = Reach(executed, {p: (root / p).read_text(encoding="utf-8") for p in paths})
            return cells, reach
    return None


def run_audit(options: AuditOptions, progress: Callable[[str], None] = lambda line: None) -> AuditReport:
    with stopping_runs_on_exit():  # a terminated or interrupted audit leaves no part process behind
        return _run_audit(options, progress)


def configured(options: AuditOptions) -> AuditOptions:
    """``options`` with each target's own parts (``Target.parts``) in its run configuration."""
    by_path = {t.path: t.parts for t in GROUPS.get(options.group, ()) if t.parts}
    return replace(options, config=replace(options.config, parts_by_path={**by_path, **options.config.parts_by_path}))


def _run_audit(options: AuditOptions, progress: Callable[[str], None]) -> AuditReport:
    started = time.perf_counter()
    options = configured(options)
    root = options.config.source or project_root()
    generated, selected = choose(options, root)
    paths = [t.path for t in GROUPS[options.group]]
    progress(f"audit: {len(selected)} of {len(generated)} mutants; control run first "
             f"({'under coverage' if options.reach else 'plain'})")
    control, reach = _control(options, root, paths)
    failing = [c for c in control if c.outcome != SURVIVED]
    if failing:
        raise AuditError("the unpatched product does not pass, so no kill would mean anything: "
                         + "; ".join(f"{c.part}: {c.outcome} {c.failing or c.message}" for c in failing))
    progress("audit: control passes: " + ", ".join(f"{c.part} {c.seconds:.0f} s" for c in control))
    done: dict[str, MutantResult] = {}
    if options.journal is not None:
        try:
            done = load_journal(options.journal, selected)
        except ValueError as exc:
            raise AuditError(str(exc)) from None
    todo = [m for m in selected if m.id not in done]
    counter = {"n": len(done)}

    def finished(result: MutantResult) -> None:
        counter["n"] += 1
        if options.journal is not None:
            with options.journal.open("a", encoding="utf-8") as out:
                out.write(journal_line(result) + "\n")
        by = next((c.part for c in result.cells if c.outcome == result.verdict), "")
        progress(f"[{counter['n']}/{len(selected)}] {result.verdict}{' by ' + by if by else ''} "
                 f"({result.seconds:.0f} s) {result.mutant.id}")

    reached = reach.reaches if reach is not None else always
    fresh = run_all(todo, options.config, options.workers, reached, finished)
    by_id = {**done, **{r.mutant.id: r for r in fresh}}
    results = [by_id[m.id] for m in selected]
    equivalent, gaps = judgements(generated)
    summary = summarize(results, equivalent.judged)
    return AuditReport(options, generated, selected, control, reach, results, summary, equivalent.stale,
                       time.perf_counter() - started, reused=len(done), equivalent=equivalent, gaps=gaps)


def judgements(generated: Sequence[Mutant]) -> tuple[Attached, Attached]:
    """``audit.equivalent``'s EQUIVALENT and GAPS attached to ``generated`` (``audit.summary.attach``),
    counting only entries in the generated mutants' files as stale (a run over some targets)."""
    paths = {m.path for m in generated}
    ids = [m.id for m in generated]
    equivalent = attach({i: r for i, r in EQUIVALENT.items() if i.split(":")[0] in paths}, ids)
    gaps = attach({i: r for i, r in GAPS.items() if i.split(":")[0] in paths}, ids)
    return equivalent, gaps
