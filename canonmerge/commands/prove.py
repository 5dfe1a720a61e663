"""``canonmerge prove``: discharge the Z3 proof obligations and code links, and compile the Coq
development (part "proofs")."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofs.runner import DEFAULT_TIMEOUT_S
from proofs.runner import run as run_proofs
from spec import PartReport, Progress
from spec.output_files import check_output_tree

PART = "proofs"
FLAGS = {"timeout_s": "--timeout", "emit_smt2": "--emit-smt2", "only": "--only"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", metavar="NAME",
                        help="run one obligation by name, or every obligation of a claim id (e.g. C5); "
                             "several separated by commas")
    parser.add_argument("--timeout", metavar="S", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds per obligation (default {DEFAULT_TIMEOUT_S:g}; coqc gets S for each theorem of "
                             "the Coq development); a timeout is reported as unknown, never as proved")
    parser.add_argument("--emit-smt2", metavar="DIR", type=Path,
                        help="write each obligation's query as DIR/<name>.smt2 for another solver")


def run(args: argparse.Namespace, progress: Progress) -> PartReport:
    if args.emit_smt2 is not None:
        check_output_tree(args.emit_smt2, "--emit-smt2")  # before any proof runs
    return run_proofs(args.only, args.timeout, args.emit_smt2, progress,
                      fail_fast=getattr(args, "fail_fast", False))


def run_default(progress: Progress, fail_fast: bool = False) -> PartReport:
    return run_proofs(None, DEFAULT_TIMEOUT_S, None, progress, fail_fast=fail_fast)
