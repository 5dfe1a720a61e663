"""Compile the Coq development with coqc and decide each theorem's row.

The source is copied into a temporary directory (coqc writes its ``.vo`` and ``.glob`` files
there, never into the source tree) with one query block per theorem inserted just before the
section closes: a marker, ``Check`` (the statement, in the section's own names) and ``Print
Assumptions`` (the section variables the proof uses, and any axiom).  One coqc run serves every
theorem.  A theorem is PROVED only when coqc exits 0, its statement is the registered one, and
its assumptions are registered premises with their registered types: an ``Admitted`` proof or
an ``Axiom`` shows up as an axiom and fails the row, so does an unregistered hypothesis.
coqc runs in the background while the runner discharges the Z3 rows (``compiling``).  A
missing coqc is not a result: the run says so, and the runner emits no Coq rows."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from proofs.mechanised import PREMISES, SECTION_END, SOURCE, THEOREMS
from proofs.obligation import CoqTheorem, Result, Verdict

MARK = "@@canonmerge"
_ERROR_AT = re.compile(r'File "[^"]*", line (\d+), characters [^:]*:\nError:\s*(.*)', re.S)
_MISSING = re.compile(r"The reference (\S+) was not found")
_HEADER = re.compile(r"^[A-Z][A-Za-z ,-]*:$")


def missing_note() -> str:
    return (f"coqc not found: the Coq development ({len(THEOREMS)} theorems) was not compiled; "
            "install Debian's coq package")


@dataclass
class CoqRun:
    """What one run found: a verdict per theorem asked about (none when coqc is missing)."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    data: dict[str, object] | str = "missing"
    note: str = ""

    @property
    def missing(self) -> bool:
        return self.data == "missing"


def normalised(text: str) -> str:
    return " ".join(text.split())


def queries(names: Sequence[str]) -> str:
    """The query block for ``names``: coqc prints each theorem's statement and assumptions
    between markers, so that each part of the output is read as the answer about one theorem."""
    lines = ["Set Printing Width 1000."]
    for name in names:
        lines += [f'Goal True. idtac "{MARK} statement {name}". Abort.', f"Check {name}.",
                  f'Goal True. idtac "{MARK} assumptions {name}". Abort.', f"Print Assumptions {name}."]
    return "\n".join(lines) + "\n"


def with_queries(source: str, names: Sequence[str]) -> tuple[str, int]:
    """``source`` with the queries inserted before the section's end, and the first line number
    of the queries (an error at or after it is about a query, not the development)."""
    lines = source.split("\n")
    ends = [i for i, line in enumerate(lines) if line.strip() == SECTION_END]
    if len(ends) != 1:
        raise ValueError(f"{SOURCE.name} has {len(ends)} lines '{SECTION_END}' (want exactly 1)")
    at = ends[0]
    return "\n".join([*lines[:at], queries(names), *lines[at:]]), at + 1


def parse_assumptions(text: str) -> dict[str, dict[str, str]]:
    """``Print Assumptions`` output as {category: {name: type}}: "Section Variables", "Axioms",
    and whatever else coqc lists.  "Closed under the global context" is no entry at all."""
    found: dict[str, dict[str, str]] = {}
    category, name = "", ""
    for line in text.splitlines():
        if not line.strip() or line.strip() == "Closed under the global context":
            continue
        if _HEADER.match(line):
            category, name = line[:-1], ""
            found.setdefault(category, {})
        elif line[0] in " :" and name:
            found[category][name] = normalised(f"{found[category][name]} {line.strip().removeprefix(':')}")
        else:
            name, _, kind = line.partition(" : ")
            name = name.strip()
            found.setdefault(category or "unlabelled", {})[name] = normalised(kind)
            category = category or "unlabelled"
    return found


def answers(stdout: str) -> dict[str, dict[str, str]]:
    """{theorem: {"statement": text, "assumptions": text}} from coqc's output of the queries."""
    out: dict[str, dict[str, str]] = {}
    parts = re.split(rf"^{MARK} (statement|assumptions) (\S+)$", stdout, flags=re.M)
    for i in range(1, len(parts) - 2, 3):
        what, name, text = parts[i], parts[i + 1], parts[i + 2]
        out.setdefault(name, {})[what] = text
    return out


def judge(theorem: CoqTheorem, answer: dict[str, str]) -> tuple[Result, str, tuple[str, ...]]:
    """The verdict on one theorem from its answers: statement, then axioms, then premises."""
    checked = normalised(answer.get("statement", ""))
    prefix = f"{theorem.name} : "
    if not checked.startswith(prefix) or "assumptions" not in answer:
        return Result.NOT_PROVED, "coqc answered no statement or assumptions for it", ()
    stated = checked[len(prefix):]
    if stated != normalised(theorem.coq):
        return Result.NOT_PROVED, f"its statement is not the registered one: coqc states {stated}", ()
    found = parse_assumptions(answer["assumptions"])
    variables = found.pop("Section Variables", {})
    if found:
        listed = "; ".join(f"{category.lower()}: {', '.join(names)}" for category, names in found.items())
        return Result.NOT_PROVED, f"unexpected axiom or assumption ({listed}): an Admitted proof or an Axiom", ()
    for name, kind in variables.items():
        premise = PREMISES.get(name)
        if premise is None:
            return Result.NOT_PROVED, f"unexpected hypothesis {name} : {kind} (not a registered premise)", ()
        if normalised(premise.type) != kind:
            return Result.NOT_PROVED, f"premise {name} changed: coqc says {kind}, registered {premise.type}", ()
    used = tuple(n for n in PREMISES if n in variables and PREMISES[n].hypothesis)
    return Result.PROVED, "compiled; no axiom; statement and premises as registered", used


def _error(output: str, first_query_line: int) -> tuple[str, str | None]:
    """The one-line cause of a failed compile, and the theorem a query could not find (if that
    was the failure)."""
    found = _ERROR_AT.search(output)
    if not found:
        lines = [line for line in output.splitlines() if line.strip()]
        return (lines[-1] if lines else "no message"), None
    line, message = int(found.group(1)), found.group(2)
    missing = _MISSING.search(message)
    if line >= first_query_line and missing:
        return f"theorem {missing.group(1)} is not in {SOURCE.name}", missing.group(1)
    return f"{SOURCE.name} line {line}: {_summary(message)}", None


def _summary(message: str) -> str:
    """An error message without the proof context coqc prints before it."""
    lines = [line.rstrip() for line in message.strip().splitlines()]
    if lines and lines[0] == "In environment":
        body = lines[1:]
        while body and (re.match(r"^[\w', ]+ : ", body[0]) or body[0].startswith(" ")):
            body = body[1:]
        lines = body or lines
    return normalised(" ".join(lines))


def _version(coqc: str) -> str:
    try:
        out = subprocess.run([coqc, "--print-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout.split() else "unknown"


class _Compile:
    """coqc on a copy of the development in ``scratch``, asked about ``theorems``; it runs in
    the background from ``start`` (the Z3 rows meanwhile) until ``result`` collects it.  A
    thread waits for it, so that its own wall time is known whenever it is collected.  Output
    goes to files, so a coqc that prints much never blocks on a full pipe."""

    def __init__(self, coqc: str, theorems: Sequence[CoqTheorem], budget: float, scratch: Path) -> None:
        self.coqc, self.theorems, self.budget, self.scratch = coqc, list(theorems), budget, scratch
        self.pending = list(theorems)
        self.verdicts: dict[str, Verdict] = {}
        self.outcome = "compiled"
        self.process: subprocess.Popen[bytes] | None = None
        self.watcher: threading.Thread | None = None
        self.first_query = 0
        self.started = time.perf_counter()
        self.compile_seconds = 0.0
        self.done: CoqRun | None = None

    def settle(self, rows: Sequence[CoqTheorem], result: Result, reason: str, outcome: str | None = None) -> None:
        for row in rows:
            self.verdicts[row.name] = Verdict(row, result, 0.0, reason)
        self.pending = [t for t in self.pending if t not in rows]
        self.outcome = outcome or self.outcome

    def start(self) -> None:
        """Write the copy with the queries and start coqc on it (or settle every row at once
        when there is nothing to compile)."""
        try:
            source = SOURCE.read_text(encoding="utf-8")
            text, self.first_query = with_queries(source, [t.name for t in self.pending])
            (self.scratch / SOURCE.name).write_text(text, encoding="utf-8")
        except OSError as exc:
            return self.settle(self.pending, Result.UNKNOWN, f"cannot read {SOURCE}: {exc.strerror}", "unreadable")
        except ValueError as exc:
            return self.settle(self.pending, Result.NOT_PROVED, str(exc), "failed")
        try:
            with open(self.scratch / "out", "wb") as out, open(self.scratch / "err", "wb") as err:
                self.process = subprocess.Popen([self.coqc, "-q", SOURCE.name], cwd=self.scratch, stdout=out,
                                                stderr=err, stdin=subprocess.DEVNULL)
        except OSError as exc:
            return self.settle(self.pending, Result.UNKNOWN, f"coqc could not run: {exc}", "failed")
        self.watcher = threading.Thread(target=self._watch, args=(self.process, time.perf_counter()), daemon=True)
        self.watcher.start()

    def _watch(self, process: subprocess.Popen[bytes], since: float) -> None:
        process.wait()
        self.compile_seconds += time.perf_counter() - since

    def wait(self) -> None:
        """Collect the running coqc and judge its answers; ask again without a theorem that a
        query could not find."""
        while self.process is not None and self.watcher is not None:
            process, self.process = self.process, None
            self.watcher.join(timeout=max(self.budget - (time.perf_counter() - self.started), 0.001))
            if self.watcher.is_alive():
                process.kill()
                self.watcher.join()
                return self.settle(self.pending, Result.UNKNOWN, f"coqc did not finish within {self.budget:g} s",
                                   "timeout")
            stdout = (self.scratch / "out").read_text(encoding="utf-8", errors="replace")
            stderr = (self.scratch / "err").read_text(encoding="utf-8", errors="replace")
            if process.returncode == 0:
                replies = answers(stdout)
                for row in self.pending:
                    result, reason, used = judge(row, replies.get(row.name, {}))
                    self.verdicts[row.name] = Verdict(row, result, 0.0, reason, hypotheses=used)
                self.pending = []
                return None
            cause, missing = _error(stderr + stdout, self.first_query)
            gone = [t for t in self.pending if t.name == missing]
            if not gone:
                return self.settle(self.pending, Result.NOT_PROVED, f"coqc failed: {cause}", "failed")
            self.settle(gone, Result.NOT_PROVED, cause)
            if self.pending:
                self.start()
        return None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.watcher is not None:
            self.watcher.join()

    def result(self) -> CoqRun:
        if self.done is None:
            asked = time.perf_counter()
            self.wait()
            for verdict in self.verdicts.values():
                verdict.seconds = self.compile_seconds / max(1, len(self.theorems))
            data = {"coqc": self.coqc, "version": _version(self.coqc), "source": f"proofs/coq/{SOURCE.name}",
                    "outcome": self.outcome, "seconds": round(self.compile_seconds, 3),
                    "waited_seconds": round(time.perf_counter() - asked, 3), "theorems": len(self.theorems)}
            self.done = CoqRun({t.name: self.verdicts[t.name] for t in self.theorems}, data)
        return self.done


@contextmanager
def compiling(theorems: Sequence[CoqTheorem], timeout_s: float) -> Iterator[Callable[[], CoqRun]]:
    """Start coqc on the development for ``theorems`` and give a function that waits for its
    result; coqc runs while the caller does other work, and is killed (its scratch directory
    removed) when the block ends.  ``timeout_s`` is per theorem of the development: the compile
    checks all of them, whichever are asked about.  No theorems: nothing runs; no coqc: a
    result that says so and holds no verdict."""
    if not theorems:
        yield lambda: CoqRun(data="not selected")
        return
    coqc = shutil.which("coqc")
    if coqc is None:
        missing = CoqRun(note=missing_note())
        yield lambda: missing
        return
    with tempfile.TemporaryDirectory(prefix="canonmerge-coq-") as scratch:
        job = _Compile(coqc, theorems, timeout_s * len(THEOREMS), Path(scratch))
        job.start()
        try:
            yield job.result
        finally:
            job.stop()
