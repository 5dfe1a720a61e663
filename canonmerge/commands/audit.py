"""``canonmerge audit``: plant source-level mutants (mutmut's operators and the curated catalog)
in scratch copies and run prove/check/realstate on each; print the kill matrix and ratio.

Flags map to ``audit.campaign.AuditOptions``; everything else lives in the ``audit`` package."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from rich.console import Console

from canonmerge.printing import literal, print_table
from spec import InputError
from spec.arguments import integer, number, seed


def _part_args(text: str) -> tuple[str, tuple[str, ...]]:
    from audit.settings import ALL_PARTS

    part, sep, flags = text.partition("=")
    if not sep or part not in ALL_PARTS:
        raise argparse.ArgumentTypeError(f"want PART=FLAGS with PART one of {', '.join(ALL_PARTS)}; got {text!r}")
    return part, tuple(shlex.split(flags))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from audit.settings import DEFAULT_TARGET_RATIO, DEFAULT_TIMEOUT_S, DEFAULT_WORKERS, GROUP_PARTS, ORIGINS

    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                        help="mutants run at once, each in its own scratch copy (default %(default)s)")
    parser.add_argument("--sample", type=int, metavar="K", help="run K mutants drawn with --seed (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default %(default)s)")
    parser.add_argument("--mutant", action="append", default=[], metavar="ID",
                        help="also run this mutant (its id, or a substring matching exactly one id among the "
                             "--file targets' mutants, or all targets' without --file); repeatable")
    parser.add_argument("--file", action="append", default=[], metavar="PATH",
                        help="only mutants in this target file; repeatable")
    parser.add_argument("--origin", choices=ORIGINS, default="all", help="generated, curated or both")
    parser.add_argument("--targets", choices=tuple(GROUP_PARTS), default="verify",
                        help="which files to mutate: verify's code, or the checkers' own instruments (modelcheck, "
                             "the oracle comparison, the soak's judge and stores, the distributed replay, the bench's "
                             "structural rows), each run against the commands that exercise it (default %(default)s)")
    parser.add_argument("--parts", metavar="P,Q",
                        help="parts to run, in order (default: the group's: "
                             + "; ".join(f"{g} {','.join(p)}" for g, p in GROUP_PARTS.items()) + ")")
    parser.add_argument("--part-args", action="append", default=[], type=_part_args, metavar="PART=FLAGS",
                        help="extra flags for one part (e.g. 'prove=--only C5'); the ratio is then not verify's")
    parser.add_argument("--full-matrix", action="store_true",
                        help="run every part on every mutant, not only until one detects it")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help="seconds per part before the cell is a timeout (default %(default)g)")
    parser.add_argument("--no-reach", action="store_true",
                        help="run every mutant, even one whose statement the unpatched parts never execute")
    parser.add_argument("--journal", type=Path, metavar="FILE",
                        help="append each result as a JSON line; rerunning with it skips what is done")
    parser.add_argument("--target", type=float, default=DEFAULT_TARGET_RATIO, metavar="R",
                        help="kill ratio to meet for exit 0 (default %(default)s)")
    parser.add_argument("--list", action="store_true", help="list the selected mutants and their patches; run nothing")


def _options(args: argparse.Namespace):  # noqa: ANN202 (AuditOptions; imported lazily)
    from audit.campaign import AuditOptions
    from audit.run import RunConfig
    from audit.settings import ALL_PARTS, GROUP_PARTS

    text = ",".join(GROUP_PARTS[args.targets]) if args.parts is None else args.parts
    parts = tuple(p for p in text.split(",") if p)
    unknown = [p for p in parts if p not in ALL_PARTS]
    if unknown or not parts or len(set(parts)) != len(parts):
        raise InputError(f"--parts {text!r}: want distinct names among {', '.join(ALL_PARTS)}")
    integer("workers", args.workers, 1, 256)
    number("timeout", args.timeout, 0.001, 7 * 86400.0)
    number("target", args.target, 0.0, 1.0, " (a kill ratio)")
    seed("seed", args.seed)
    if args.sample is not None:
        integer("sample", args.sample, 0, 10**6)
    if args.journal is not None:
        from spec.output_files import check_output_path

        check_output_path(args.journal, "--journal")  # appended to: a regular file outside any store
    part_args = dict(args.part_args)
    config = RunConfig(parts=parts, part_args=part_args, timeout_s=args.timeout, full_matrix=args.full_matrix)
    return AuditOptions(config=config, group=args.targets, files=tuple(args.file), origin=args.origin, picks=tuple(args.mutant),
                        sample_size=args.sample, seed=args.seed, workers=args.workers, reach=not args.no_reach,
                        journal=args.journal, target_ratio=args.target)


def run(args: argparse.Namespace, console: Console) -> int:
    try:
        from audit import tables
        from audit.campaign import AuditError, choose, judgements, run_audit
    except ImportError as exc:
        raise InputError(f"canonmerge audit needs mutmut 3.8 and coverage (pip install 'canonmerge[audit]'): "
                         f"{exc}") from None
    from audit.mutants import diff_text
    from audit.scratch import project_root

    options = _options(args)
    try:
        if args.list:
            every, selected = choose(options, project_root())
            equivalent, gaps = judgements(every)
            stale = {"stale_equivalent_entries": equivalent.stale, "stale_gap_entries": gaps.stale,
                     "moved_entries": {**equivalent.moved, **gaps.moved}}
            if args.json:
                print(json.dumps({"exit_code": 0, "mutants": [m.to_json() for m in selected], **stale}, indent=2))
            else:
                for m in selected:
                    console.print(literal(f"{m.id}  {m.description}"))
                    console.print(literal(diff_text(m.patches)))
                for i in equivalent.stale + gaps.stale:
                    console.print(f"note: stale entry (the source no longer generates it): {literal(i)}")
            return 0
        report = run_audit(options, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except AuditError as exc:
        raise InputError(str(exc)) from None
    code = report.exit_code()
    if args.json:
        print(json.dumps({"command": "audit", "exit_code": code, **report.to_json()}, indent=2))
        return code
    for table in (tables.matrix(report), tables.by_file(report), tables.survivors(report), tables.summary(report)):
        if table.rows:
            print_table(console, table)
    for note in tables.notes(report):
        console.print(f"note: {literal(note)}")
    console.print(f"result: {'target met' if code == 0 else 'target NOT met or a curated bug survived'} (exit {code})")
    return code
