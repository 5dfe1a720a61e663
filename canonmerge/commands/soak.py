"""``canonmerge soak``: replicas in real processes converging under injected faults (C7, C2).

Maps flags onto ``realstate.processes.soak.SoakSettings`` and runs ``realstate.processes.soak.harness.run_soak``;
the report says what ran, which faults landed, and whether every replica ended equal."""

from __future__ import annotations

import argparse
from pathlib import Path

from spec import PartReport, Progress

PART = "realstate"
# library argument -> the flag that sets it, where the two are not spelled alike
FLAGS = {"kinds": "--fault", "op_timeout_s": "--op-timeout", "shape.min_tokens": "--tokens",
         "shape.max_tokens": "--tokens"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from realstate.processes.soak.settings import FAULT_HELP, FAULT_KINDS, SoakSettings

    d = SoakSettings()
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of the schedule, faults and fragments")
    parser.add_argument("--replicas", type=int, default=d.replicas, help="replica stores (default %(default)s)")
    parser.add_argument("--s3-replicas", type=int, default=d.s3_replicas,
                        help="of which S3 prefixes on a loopback moto server (default %(default)s; 0: no S3)")
    parser.add_argument("--agents", type=int, default=d.agents, help="agent processes (default %(default)s)")
    parser.add_argument("--fragments", type=int, default=d.fragments,
                        help="fragments each agent publishes (default %(default)s)")
    parser.add_argument("--gossipers", type=int, default=d.gossipers,
                        help="anti-entropy processes (default %(default)s)")
    parser.add_argument("--merges", type=int, default=d.merges,
                        help="merges of random pairs in the fault phase (default %(default)s)")
    parser.add_argument("--faults", type=int, default=d.faults,
                        help="faults the nemesis injects, spread over the kinds (default %(default)s)")
    parser.add_argument("--fault", action="append", choices=FAULT_KINDS, metavar="KIND",
                        help="only these fault kinds (repeatable): " + "; ".join(f"{k}: {v}" for k, v in
                                                                                FAULT_HELP.items()))
    parser.add_argument("--max-seconds", type=float, default=d.max_seconds,
                        help="time budget of the fault phase (default %(default)s)")
    parser.add_argument("--op-timeout", type=float, default=d.op_timeout_s,
                        help="seconds one put or merge may take (default %(default)s)")
    parser.add_argument("--tokens", type=int, nargs=2, default=[d.shape.min_tokens, d.shape.max_tokens],
                        metavar=("MIN", "MAX"), help="tokens per fragment (default %(default)s)")
    parser.add_argument("--workdir", metavar="DIR", help="where replica directories go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the replica directories afterwards")


def run(args: argparse.Namespace, progress: Progress) -> PartReport:
    import dataclasses

    from realstate.processes.soak.settings import FAULT_KINDS, SoakSettings

    base = SoakSettings()
    settings = SoakSettings(
        seed=args.seed, replicas=args.replicas, s3_replicas=args.s3_replicas, agents=args.agents,
        fragments=args.fragments, gossipers=args.gossipers, merges=args.merges, faults=args.faults,
        kinds=tuple(args.fault) if args.fault else FAULT_KINDS, max_seconds=args.max_seconds,
        op_timeout_s=args.op_timeout,
        shape=dataclasses.replace(base.shape, min_tokens=args.tokens[0], max_tokens=args.tokens[1]))
    settings.validate()  # refuse bad flags before starting any process
    if args.workdir is not None:
        from spec.output_files import check_output_directory

        check_output_directory(Path(args.workdir), "--workdir")  # replica directories never go into a store
    from realstate.processes.soak.harness import run_soak

    return run_soak(settings, progress, workdir=args.workdir, keep=args.keep)
