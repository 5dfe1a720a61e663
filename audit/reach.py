"""Which target lines each unpatched part executes (coverage.py), and so which parts a mutant
can affect.

The control run — every part on an unpatched scratch copy, which must pass — runs under
coverage, restricted to the target files, one data file per part.  A generated mutant changes
one node; if the statement holding it never executes in part P's control run, then P's run
with the mutant is the same run (the parts are deterministic: same inputs, same path up to the
first execution of the mutated statement, which never comes), so P's cell is ``not reached``
without a run.  A mutant no part reaches survives (and counts against the ratio: a bug in code
verify never runs is a gap).  A mutant is mapped to the innermost statement containing its
line (for a ``def`` signature, the ``def`` itself, which runs at import); the statement ran
when any line of it ran (a compound statement whose body ran has itself run).

Only verify's parts are traced (``audit.settings.REACH_PARTS``): the soak's and the distributed
replay's workers come from fork servers and helper processes that coverage does not follow, so a
statement only they run would look unreached; those parts' control runs plainly and every mutant
of a file they exercise runs them."""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

from audit.mutants import Mutant
from audit.run import THREAD_ENV, TIMEOUT, Cell, RunConfig, classify
from audit.scratch import ScratchCopy, run_group
from audit.settings import REACH_PARTS


@lru_cache(maxsize=64)
def _statements(source: str) -> tuple[tuple[int, int], ...]:
    """(first line, last line) of every statement in ``source``."""
    return tuple((n.lineno, n.end_lineno or n.lineno) for n in ast.walk(ast.parse(source))
                 if isinstance(n, ast.stmt))


def statement_span(source: str, line: int) -> tuple[int, int]:
    """(first, last) line of the innermost statement containing ``line``."""
    holding = [(first, last) for first, last in _statements(source) if first <= line <= last]
    return max(holding, key=lambda s: (s[0], -s[1])) if holding else (line, line)


@dataclass
class Reach:
    """Executed lines per part and target file (relative path), from the control run."""

    executed: dict[str, dict[str, set[int]]] = field(default_factory=dict)  # part -> path -> lines
    sources: dict[str, str] = field(default_factory=dict)

    def reaches(self, mutant: Mutant, part: str) -> bool:
        """False only for a generated single-node mutant whose statement ``part`` never ran."""
        if mutant.origin != "mutmut" or mutant.path not in self.sources or part not in self.executed:
            return True
        first, last = statement_span(self.sources[mutant.path], mutant.line)
        ran = self.executed[part].get(mutant.path, set())
        return any(line in ran for line in range(first, last + 1))

    def unexecuted(self, path: str) -> list[int]:
        """First lines of the statements of ``path`` that no part executed."""
        source = self.sources.get(path)
        if source is None:
            return []
        ran = set().union(*(lines.get(path, set()) for lines in self.executed.values()))
        return sorted(first for first, last in _statements(source)
                      if not any(line in ran for line in range(first, last + 1)))

    def to_json(self) -> dict[str, dict[str, list[int]]]:
        return {part: {p: sorted(v) for p, v in paths.items()} for part, paths in self.executed.items()}


def control_with_coverage(scratch: ScratchCopy, config: RunConfig, paths: Sequence[str]) -> tuple[list[Cell], Reach]:
    """Run each part on the unpatched ``scratch`` under coverage; the cells say whether the
    control passed, the ``Reach`` which statements of ``paths`` ran."""
    import coverage

    include = ",".join(str(scratch.root / p) for p in paths)
    reach = Reach(sources={p: (scratch.root / p).read_text(encoding="utf-8") for p in paths})

    def one(part: str) -> Cell:
        if part not in REACH_PARTS:  # processes coverage does not follow: no reach, every mutant runs it
            env = scratch.env(dict(THREAD_ENV) if config.single_thread else {})
            started = time.perf_counter()
            try:
                out = run_group([sys.executable, "-m", "canonmerge", *config.command(part)], scratch.root, env,
                                timeout=config.timeout_s)
            except subprocess.TimeoutExpired:
                return Cell(part, TIMEOUT, time.perf_counter() - started)
            return classify(part, out.returncode, out.stdout, out.stderr, time.perf_counter() - started)
        data_file = scratch.root / f".coverage.{part}"
        # parallel mode + multiprocessing: check runs its shards in pool workers, whose lines
        # count as reached (without it a mutant only the workers execute is skipped as unreached);
        # coverage takes these settings from a configuration file only
        rcfile = scratch.root / f".coveragerc.{part}"
        rcfile.write_text(f"[run]\nconcurrency = multiprocessing\nparallel = True\ndata_file = {data_file}\n"
                          f"include = {include}\n", encoding="utf-8")
        command = [sys.executable, "-m", "coverage", "run", f"--rcfile={rcfile}", "-m", "canonmerge",
                   *config.command(part)]
        started = time.perf_counter()
        env = scratch.env(dict(THREAD_ENV) if config.single_thread else {})
        try:
            out = run_group(command, scratch.root, env, timeout=config.timeout_s * 3)
        except subprocess.TimeoutExpired:
            return Cell(part, TIMEOUT, time.perf_counter() - started)
        combined = coverage.Coverage(data_file=str(data_file), config_file=str(rcfile))
        combined.combine(keep=False)  # the main process's and every worker's .coverage.<part>.* files
        combined.save()
        data = coverage.CoverageData(basename=str(data_file))
        data.read()
        reach.executed[part] = {p: set(data.lines(str(scratch.root / p)) or ()) for p in paths}
        return classify(part, out.returncode, out.stdout, out.stderr, time.perf_counter() - started)

    # the parts are independent processes on one read-only copy: run them at once (the control
    # is the slowest step of a small audit)
    with ThreadPoolExecutor(max_workers=len(config.parts)) as pool:
        cells = list(pool.map(one, config.parts))
    return cells, reach
