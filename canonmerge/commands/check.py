"""``canonmerge check``: the exhaustive checker and gossip explorer on realstate's own render.

The backend is realstate's (``_backend()``), never a copy of its render; ``--plant`` swaps one
mechanic of realstate's engine for a planted-bug preset (``realstate.evidence.planted``) to demonstrate
that the checker catches it, and ``--replay`` re-runs a saved counterexample (exit 1 if it still
reproduces, 0 if not, 2 for a malformed trace)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from spec import InputError, Outcome, PartReport, Progress, Table, registered
from spec.output_files import check_output_tree

PART = "modelcheck"
DEFAULT_TRACE_DIR = "canonmerge-traces"


PLANTED = ("unstable-sort", "value-returning-sort", "reduced-precision-key", "no-tie-break",
           "wrong-rope-sign", "theta-frequencies", "identity-dedup", "order-by-arrival")


def _backend(mutant: str | None = None) -> Any:
    """realstate's backend: the real canonical render and BagMerge, never a copy (with
    ``mutant``, realstate's engine with that one planted bug).

    Imported here, not at module level, so that modelcheck itself never imports torch."""
    from realstate.evidence.checker_backend import make_backend

    return make_backend(mutant)


def _recipe(mutant: str | None = None) -> Any:
    """How a worker process (pool or Ray) builds the same backend as ``_backend(mutant)``."""
    from modelcheck.shards import BackendRecipe

    return BackendRecipe("realstate.evidence.checker_backend:make_worker_backend", (mutant,), name="realstate", mutant=mutant)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from modelcheck.executors import ENGINES
    from modelcheck.runner import (
        DEFAULT_ARITY,
        DEFAULT_IN_FLIGHT,
        DEFAULT_ITERATION,
        DEFAULT_MAX_STATES,
        MAX_EXHAUSTIVE_ARITY,
    )
    from modelcheck.universes import OPT_IN, UNIVERSES
    from spec.fragment_set import ITERATION_ORDERS

    parser.add_argument("--max-arity", type=int, default=DEFAULT_ARITY, metavar="N",
                        help=f"check every set of N = 1..this many fragments exhaustively (1..{MAX_EXHAUSTIVE_ARITY}, "
                             "the cap; default %(default)s); N runs on the selected universes of at least N fragments, "
                             "and an N that none has is refused. Orderings per universe: N = 6: 46,080; "
                             "N = 7: 811,440; N = 8: 18,789,120 (every universe to N = 8: 4 to 5 minutes on 2 cores; docs/RESULTS.md); "
                             "N = 9: 535,610,880, on --universe specials9 alone (opt-in, 9 fragments): a cluster-sized "
                             "job, about 9.5 CPU-hours, some 9 minutes on 64 cores (projected from measured N = 9 "
                             "shards; docs/results/scale.md)")
    parser.add_argument("--workers", type=int, default=0, metavar="W",
                        help="local engine: processes in the pool (0 = one per available core; 1 = in this "
                             "process); ray engine: CPUs of the local Ray it starts (0 = all)")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="where the shards run: a local process pool, or Ray tasks (default %(default)s)")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="with --engine ray: an existing Ray cluster (e.g. ray://head:10001 or auto); "
                             "default: start a local Ray on loopback for this run")
    parser.add_argument("--no-symmetry", action="store_true",
                        help="gossip: explore every state, not one per orbit of replica relabellings")
    parser.add_argument("--gossip-workers", type=int, default=1, metavar="W",
                        help="gossip: shard the search's visited set over W worker processes, level by level "
                             "(default %(default)s: one search in one process; the counts are the same)")
    parser.add_argument("--fold-drops", action="store_true",
                        help="gossip: no drop/resend moves (a dropped message is one not delivered yet): the same "
                             "replica states and message multisets, the full count being the sum of their splits")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR",
                        help="gossip: after every completed level, write what a later run needs to go on (the "
                             "visited table, the frontier, the counts) into DIR, atomically; never into a store")
    parser.add_argument("--resume", type=Path, metavar="DIR",
                        help="gossip: go on from the checkpoint in DIR (and keep writing it there); refused, exit 2, "
                             "if DIR was written for another configuration or version of the search, or is torn")
    parser.add_argument("--universe", action="append", metavar="NAME",
                        help=f"fragment universe to check (repeatable; default all of {', '.join(UNIVERSES)}); "
                             f"opt-in, only when named: {', '.join(OPT_IN)} (9 fragments, for --max-arity 9)")
    parser.add_argument("--redeliveries", type=int, default=1, metavar="R",
                        help="re-delivery patterns with up to R extra deliveries (0..3; default %(default)s)")
    parser.add_argument("--replicas", type=int, default=3, metavar="R",
                        help="gossip: number of replicas (default %(default)s)")
    parser.add_argument("--fragments", type=int, default=3, metavar="F",
                        help="gossip: fragments published, round-robin over replicas (default %(default)s)")
    parser.add_argument("--in-flight", type=int, default=DEFAULT_IN_FLIGHT, metavar="K",
                        help="gossip: bound on messages in flight or dropped (default %(default)s)")
    parser.add_argument("--max-states", type=int, default=DEFAULT_MAX_STATES, metavar="S",
                        help="gossip: stop exploring after this many states (default %(default)s)")
    parser.add_argument("--max-depth", type=int, default=None, metavar="D",
                        help="gossip: explore at most this many steps deep (default: to the fixpoint)")
    parser.add_argument("--no-gossip", action="store_true", help="skip the gossip explorer (C7)")
    parser.add_argument("--randomized", type=int, default=0, metavar="K",
                        help="also run K Hypothesis examples of C3 with N up to 64 (0 = off)")
    parser.add_argument("--replay", type=Path, metavar="FILE",
                        help="re-execute a saved counterexample trace; exit 1 if it still reproduces")
    parser.add_argument("--plant", metavar="MUTANT",
                        help="swap one mechanic of realstate's engine for a known bug, to demonstrate "
                             f"that the checker catches it (exit 1 with a trace): {', '.join(PLANTED)}")
    parser.add_argument("--only", metavar="CLAIM|CHECK",
                        help="run only the checks of one claim (e.g. C3) or one check by name")
    parser.add_argument("--iteration", choices=ITERATION_ORDERS, default=DEFAULT_ITERATION,
                        help="FragmentSet iteration order while checking (default %(default)s: a render "
                             "that forgets to sort cannot hide behind id-ordered iteration)")
    parser.add_argument("--trace-dir", type=Path, default=Path(DEFAULT_TRACE_DIR), metavar="DIR",
                        help="where counterexample traces are saved (default ./%(default)s)")


def _replay(args: argparse.Namespace) -> PartReport:
    from modelcheck import trace as trace_io
    from modelcheck.trace_replay import replay

    if args.plant is not None:
        raise InputError("--replay takes the mutant from the trace; drop --plant")
    trace = trace_io.load(args.replay)
    if trace["mutant"] is not None and trace["mutant"] not in PLANTED:
        raise InputError(f"{args.replay}: mutant: {trace['mutant']!r} is not a planted bug this canonmerge has "
                         f"(known: {', '.join(PLANTED)})")
    import modelcheck.properties  # noqa: F401  (registers the checks)

    check = next((c for c in registered(PART) if c.name == trace["check"] and c.claim == trace["claim"]), None)
    if check is None:
        raise InputError(f"{args.replay}: the trace names check {trace['check']!r} ({trace['claim']}), "
                         "which this canonmerge does not have")
    result = replay(trace, _backend(trace["mutant"]))
    outcome = Outcome.FAILS if result.reproduced else Outcome.HOLDS
    figure = "violation reproduces" if result.reproduced else "no longer reproduces"
    if result.reproduced:
        figure += " (same bytes)" if result.same_bytes else " (other bytes)"
    details = {"trace": str(args.replay), "mutant": trace["mutant"], "universe": trace["universe"],
               "reproduced": result.reproduced, "same_bytes": result.same_bytes,
               "expected": result.expected, "observed": result.observed,
               "recorded_expected": trace["expected"], "recorded_observed": trace["observed"]}
    table = Table(f"replay of {args.replay}", ["field", "value"], [
        ["check", trace["check"]], ["claim", trace["claim"]], ["mutant", str(trace["mutant"])],
        ["universe", trace["universe"]], ["operations", str(len(trace["ops"]))],
        ["expected", result.expected], ["observed", result.observed]])
    notes = [n for n in [trace.get("note", "")] if n] + result.notes
    return PartReport(PART, [check.result(outcome, figure, 0.0, **details)], [table], {"replay": details}, notes)


def run(args: argparse.Namespace, progress: Progress) -> PartReport:
    import modelcheck
    from spec import select_checks

    if args.replay is not None:
        return _replay(args)
    check_output_tree(args.trace_dir, "--trace-dir")  # before any work: traces never go into a store
    if args.plant is not None and args.plant not in PLANTED:
        raise InputError(f"--plant {args.plant!r}: unknown planted bug; known: {', '.join(PLANTED)}")
    import modelcheck.properties  # noqa: F401  (registers the checks)
    from modelcheck.executors import in_process

    checks = select_checks(PART, args.only)
    local = in_process(args.engine, args.workers)
    report = modelcheck.run(
        _backend(args.plant) if local else None, max_arity=args.max_arity, universes=args.universe,
        replicas=args.replicas, fragments=args.fragments, in_flight=args.in_flight, randomized=args.randomized,
        redeliveries=args.redeliveries, gossip=not args.no_gossip, max_states=args.max_states,
        max_depth=args.max_depth, trace_dir=args.trace_dir, checks=checks,
        iteration=args.iteration, progress=progress, engine=args.engine, workers=args.workers,
        recipe=None if local and args.gossip_workers == 1 else _recipe(args.plant), ray_address=args.ray_address,
        symmetry=not args.no_symmetry, fail_fast=getattr(args, "fail_fast", False), fold_drops=args.fold_drops,
        gossip_workers=args.gossip_workers, gossip_checkpoint=args.checkpoint, gossip_resume=args.resume)
    if args.plant is not None:
        report.notes.insert(0, f"planted bug {args.plant!r} in realstate's engine (a demonstration): the "
                               "checks that catch it FAIL, with replayable traces")
    return report


def defaults() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([])


def run_default(progress: Progress, fail_fast: bool = False) -> PartReport:
    args = defaults()
    args.fail_fast = fail_fast
    return run(args, progress)
