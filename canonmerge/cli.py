"""``canonmerge prove | check | realstate | verify`` (and the fragment/store tools).

Exit codes: 0 every claim holds as expected; 1 a claim fails (or a prover says unknown);
2 usage, bad input, or a part that is not built yet."""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
import time
from types import ModuleType

from rich.console import Console
from rich.markup import escape

from canonmerge.channels import OutputError, ensure_stderr, guarded, silence, stdout_problem
from canonmerge.environment import describe_environment
from canonmerge.parser import Parser, as_typed
from canonmerge.printing import json_report, print_part, results_table
from canonmerge.progress import ProgressPrinter
from canonmerge.terminal import terminal_safe
from realstate.kernel.threads import DEFAULT_HELP as THREADS_HELP
from realstate.kernel.threads import configure as configure_threads
from spec import CLAIMS, ArgumentError, ClaimResult, InputError, Outcome, PartReport, UsageError, exit_code_for
from spec.interrupts import signal_number, stopping_signals

# subcommand -> (module implementing it, one-line help)
PART_COMMANDS: dict[str, tuple[str, str]] = {
    "prove": ("canonmerge.commands.prove", "Z3 and Coq proofs of the CvRDT laws and the ordering contract"),
    "check": ("canonmerge.commands.check",
              "exhaustive permutation/merge-tree/re-delivery checker and gossip explorer"),
    "realstate": ("canonmerge.commands.realstate",
                  "bit-for-bit replay of the claims on real transformers Qwen3 caches"),
}
PART_OF = {"prove": "proofs", "check": "modelcheck", "realstate": "realstate"}
# commands that report claims like a part but are not run by ``verify`` (processes, minutes)
CHECK_COMMANDS: dict[str, tuple[str, str]] = {
    "soak": ("canonmerge.commands.soak",
             "replicas in real processes converge under injected faults (kills, endpoint restarts, torn uploads)"),
    "replicate": ("canonmerge.commands.replicate",
                  "distributed replay of C7: torch.distributed ranks merge in their own orders, one digest"),
}
TOOL_COMMANDS: dict[str, tuple[str, str]] = {
    "fragment": ("canonmerge.commands.fragment", "inspect and validate fragment files"),
    "store": ("canonmerge.commands.store", "replica stores: put, list, merge, render"),
    "bench": ("canonmerge.commands.bench",
              "accuracy benchmark: CanonicalMerge vs BagMerge orders, references, controls"),
    "claims": ("canonmerge.commands.claims", "the claim index: every check each part registers, under its claim"),
    "audit": ("canonmerge.commands.audit",
              "source-level mutants (mutmut operators + curated bugs) against prove/check/realstate: kill matrix"),
}
FAIL_FAST_HELP = ("stop at the first check that does not hold (exit 1); checks after it are not run and "
                  "not reported, so a stopped run is never a pass")


def _load(module_name: str) -> ModuleType | None:
    """Import a command module; ``None`` when the module itself does not exist (part not built)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise


def _not_built(part: str) -> PartReport:
    results = [
        ClaimResult(c.id, part, f"{part} (not built)", Outcome.NOT_BUILT, figure="not built")
        for c in CLAIMS.values() if part in c.checked_by
    ]
    return PartReport(part=part, results=results, notes=[f"part '{part}' is not built yet"])


def error_message(exc: BaseException) -> str:
    """One line naming what is wrong: an ``InputError``'s own message, or for an OS error the
    path(s) and the cause (``strerror``), never a traceback."""
    if isinstance(exc, OSError):
        cause = exc.strerror or str(exc) or type(exc).__name__
        paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
        return f"{' -> '.join(paths)}: {cause}" if paths else cause
    return str(exc)


def error_document(command: str, exc: BaseException) -> str:
    kind = "usage" if isinstance(exc, UsageError) else "os" if isinstance(exc, OSError) else "input"
    return json.dumps({"command": command, "exit_code": 2,
                       "error": {"kind": kind, "message": error_message(exc)}}, indent=2)


def report_error(command: str, exc: BaseException, as_json: bool) -> int:
    """The one place an error becomes exit 2: a message on stderr, or a JSON document on stdout
    with ``--json``.  Messages are made terminal-safe (paths may hold control characters)."""
    if as_json:
        print(error_document(command, exc))
    elif isinstance(exc, UsageError):  # the parser's line already names its (sub)command
        print(terminal_safe(str(exc)), file=sys.stderr)
    else:
        print(f"canonmerge {command}: error: {terminal_safe(error_message(exc))}", file=sys.stderr)
    return 2


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, the options of that one subcommand alone are
    loaded (the others keep their name and help).  A command module imports what its options
    need (z3, numpy, ...), so a run pays only for its own command's imports."""
    parser = Parser(
        prog="canonmerge",
        description="Order-independent KV-cache merging for multi-agent LLMs, proved and checked.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in {**PART_COMMANDS, **CHECK_COMMANDS, **TOOL_COMMANDS}.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is not None and name != only:
            continue  # never parsed in this run: argparse only reads the chosen subcommand's options
        module = _load(module_name)
        if module is not None:
            module.add_arguments(p)
        if name in PART_COMMANDS:
            p.add_argument("--fail-fast", action="store_true", help=FAIL_FAST_HELP)
        p.add_argument("--json", action="store_true", help="print a machine-readable report")
        _add_threads(p)
        p.set_defaults(_module=module, _module_name=module_name)
    v = sub.add_parser("verify", help="run every part on the embedded default; one summary table",
                       description="Run every built part on the embedded default configuration.")
    v.add_argument("--json", action="store_true", help="print a machine-readable report")
    v.add_argument("--fail-fast", action="store_true",
                   help=FAIL_FAST_HELP + "; the parts after a failing one are not run either")
    _add_threads(v)
    return parser


def _add_threads(parser: argparse.ArgumentParser) -> None:
    """``--threads`` on a command and, after the action word, on each of its actions (where an
    earlier one is kept: SUPPRESS leaves the command's value alone)."""
    parser.add_argument("--threads", type=int, default=None, metavar="N", help=THREADS_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.add_argument("--threads", type=int, default=argparse.SUPPRESS, metavar="N", help=THREADS_HELP)


def _run_part(name: str, args: argparse.Namespace | None, progress: ProgressPrinter,
              fail_fast: bool = False) -> PartReport:
    module_name, _ = PART_COMMANDS[name]
    module = _load(module_name)
    if module is None:
        return _not_built(PART_OF[name])
    started = time.perf_counter()
    report = module.run(args, progress) if args is not None else module.run_default(progress, fail_fast=fail_fast)
    report.seconds = time.perf_counter() - started
    return report


def _verify(progress: ProgressPrinter, fail_fast: bool) -> list[PartReport]:
    """Every part on its defaults; with ``fail_fast``, no part after one whose report fails."""
    reports: list[PartReport] = []
    for name in PART_COMMANDS:
        reports.append(_run_part(name, None, progress, fail_fast))
        if fail_fast and exit_code_for(reports[-1].results) == 1:
            skipped = list(PART_COMMANDS)[len(reports):]
            if skipped:
                reports[-1].notes.append(f"--fail-fast: parts not run after this failure: {', '.join(skipped)}")
            break
    return reports


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    command = next((a for a in argv if not a.startswith("-")), "")
    ensure_stderr()
    closed = stdout_problem()
    if closed is not None:  # before any work: the report would be lost (exit 2, never a silent 0)
        print(f"canonmerge {command}: error: {closed}; nothing was run", file=sys.stderr)
        return 2
    with guarded() as stdout, stopping_signals():
        try:
            code = _main(argv)
            sys.stdout.flush()  # a full stdout fails here at the latest, not at interpreter exit
            return code
        except BrokenPipeError:
            # the reader went away (``| head``): silence the rest, as the Python docs advise
            silence(stdout)
            return 1
        except OutputError as exc:  # never a JSON document: stdout is what failed
            silence(stdout)
            print(f"canonmerge {command}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as interruption:  # Ctrl-C, SIGTERM or SIGHUP: one clean-up, one line
            signum = signal_number(interruption)
            print(f"canonmerge {command}: interrupted ({signal.Signals(signum).name}); outputs are written "
                  "whole or not at all", file=sys.stderr)
            return 128 + signum
        except (InputError, OSError) as exc:
            return report_error(command, exc, as_json)


def _as_flag(exc: BaseException, args: argparse.Namespace) -> BaseException:
    """A library ``ArgumentError`` re-spelled as the command's flag (the module's ``FLAGS`` where
    the two differ, else ``--name-with-dashes``)."""
    if not isinstance(exc, ArgumentError):
        return exc
    flags = getattr(getattr(args, "_module", None), "FLAGS", {})
    flag = flags.get(exc.argument) or "--" + exc.argument.split(".")[-1].replace("_", "-")
    typed = getattr(args, "_typed", {}).get(flag, [])
    if len(typed) == 1 and not isinstance(exc.value, tuple):  # one value, quoted as the user typed it
        return InputError(f"{flag} {as_typed(typed[0])}: {exc.problem}")
    return InputError(exc.as_flag(flag))


def _main(argv: list[str]) -> int:
    # the top-level parser takes no options but -h, so the first word is the subcommand
    parser = build_parser(only=next((a for a in argv if not a.startswith("-")), ""))
    args = parser.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 140, emoji=False)
    with ProgressPrinter(enabled=True) as progress:
        try:
            configure_threads(args.threads)  # before any tensor work; an ArgumentError names --threads
            if args.command == "verify":
                reports = _verify(progress, args.fail_fast)
            elif args.command in TOOL_COMMANDS:
                if args._module is None:
                    print(f"canonmerge {args.command}: not built yet", file=sys.stderr)
                    return 2
                return int(args._module.run(args, console))
            elif args.command in CHECK_COMMANDS:
                started = time.perf_counter()
                reports = [args._module.run(args, progress)]
                reports[0].seconds = time.perf_counter() - started
            else:
                reports = [_run_part(args.command, args, progress)]
        except (InputError, OSError) as exc:
            if isinstance(exc, (BrokenPipeError, OutputError)):
                raise
            command = args.command + (f" {args.action}" if getattr(args, "action", None) else "")
            return report_error(command, _as_flag(exc, args), bool(getattr(args, "json", False)))
    results = [r for rep in reports for r in rep.results]
    code = exit_code_for(results)
    if args.json:
        print(json_report(args.command, reports, code, describe_environment()))
        return code
    if args.command == "verify":
        for rep in reports:
            for note in rep.notes:
                console.print(f"note ({rep.part}): {escape(note)}")
        console.print(results_table("canonmerge verify: summary", results))
    else:
        print_part(console, reports[0])
    verdict = {0: "every claim holds as expected", 1: "a claim FAILS",
               2: "incomplete: a part is not built, or nothing applicable was checked"}[code]
    console.print(f"result: {verdict} (exit {code})")
    return code
