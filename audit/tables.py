"""The audit report as tables (``spec.Table``) for the command line to print."""

from __future__ import annotations

from audit.campaign import AuditReport
from audit.run import NOT_REACHED, NOT_RUN, MutantResult
from audit.summary import Tally
from spec import Table

_MARK = {"killed": "KILLED", "crashed": "crashed", "timeout": "timeout", "survived": "survived",
         NOT_RUN: "-", NOT_REACHED: "unreached"}


def _cell(result: MutantResult, part: str) -> str:
    cell = next((c for c in result.cells if c.part == part), None)
    if cell is None:
        return "error" if result.error else ""
    mark = _MARK.get(cell.outcome, cell.outcome)
    return f"{mark} {cell.seconds:.0f}s" if cell.outcome not in (NOT_RUN, NOT_REACHED) else mark


def matrix(report: AuditReport) -> Table:
    parts = list(report.options.config.parts)
    table = Table("audit: kill matrix (mutant x part)", ["mutant", "what", *parts, "verdict", "first failing row"])
    for r in report.results:
        first = next((c for c in r.cells if c.failing or c.message), None)
        row = (first.failing[0] if first and first.failing else first.message if first else r.error)
        verdict = "equivalent" if r.mutant.id in report.equivalent.judged and not r.detected else r.verdict
        table.rows.append([r.mutant.id, r.mutant.description, *(_cell(r, p) for p in parts), verdict, row[:70]])
    return table


def _tally_row(name: str, t: Tally) -> list[str]:
    ratio = t.ratio
    return [name, str(t.mutants), str(t.killed), str(t.crashed), str(t.timeout), str(t.survived),
            str(t.not_reached), str(t.equivalent), "-" if ratio is None else f"{ratio:.3f}"]


def summary(report: AuditReport) -> Table:
    s = report.summary
    table = Table("audit: kill ratio = (killed + crashed + timeout) / (mutants - equivalent)",
                  ["mutants", "n", "killed", "crashed", "timeout", "survived", "of which not reached",
                   "equivalent", "kill ratio"])
    for origin, t in sorted(s.by_origin.items()):
        table.rows.append(_tally_row(origin, t))
    table.rows.append(_tally_row("all", s.overall))
    return table


def by_file(report: AuditReport) -> Table:
    table = Table("audit: by file", ["file", "n", "killed", "crashed", "timeout", "survived", "not reached",
                                     "equivalent", "kill ratio"])
    for path, t in sorted(report.summary.by_file.items()):
        table.rows.append(_tally_row(path, t))
    return table


def survivors(report: AuditReport) -> Table:
    s = report.summary
    table = Table("audit: survivors (gaps left open, then equivalent)", ["mutant", "what", "kind", "why"])
    for r in s.gaps:
        reason = report.gaps.judged.get(r.mutant.id, "(no reason recorded in audit/equivalent.py GAPS)")
        kind = "gap" if r.reached else "gap (not reached)"
        table.rows.append([r.mutant.id, r.mutant.description, kind, reason])
    for r in s.equivalent_survivors:
        table.rows.append([r.mutant.id, r.mutant.description, "equivalent", report.equivalent.judged[r.mutant.id]])
    return table


def notes(report: AuditReport) -> list[str]:
    s, out = report.summary, []
    ratio = s.overall.ratio
    out.append(f"kill ratio {'-' if ratio is None else f'{ratio:.3f}'} over {s.overall.non_equivalent} "
               f"non-equivalent mutants (target {report.options.target_ratio:.2f}: "
               f"{'met' if report.meets_target else 'NOT met'}); first detected by: "
               + ", ".join(f"{p} {n}" for p, n in s.killer.most_common()))
    if report.options.sample_size is not None or report.options.files or report.options.picks:
        out.append("this is a selection of the mutants, not the full audit")
    if report.options.config.part_args:
        out.append("parts ran with extra flags, so this is not verify's ratio: "
                   + "; ".join(f"{p} {' '.join(a)}" for p, a in report.options.config.part_args.items()))
    for r in s.curated_survivors:
        out.append(f"curated bug SURVIVED: {r.mutant.id}")
    for r in s.wrongly_equivalent:
        out.append(f"listed as equivalent but detected ({r.verdict}): {r.mutant.id} — fix audit/equivalent.py")
    for r in s.errors:
        out.append(f"could not plant {r.mutant.id}: {r.error}")
    for i in report.stale_equivalent:
        out.append(f"stale equivalence entry (the source no longer generates it): {i}")
    for entries in (report.equivalent, report.gaps):
        for old, new in sorted(entries.moved.items()):
            out.append(f"judgement follows its moved line: {old} is now {new}")
    if report.reused:
        out.append(f"{report.reused} result(s) reused from the journal")
    out.append(f"{len(report.results)} mutants in {report.seconds:.0f} s with {report.options.workers} worker(s)")
    return out
