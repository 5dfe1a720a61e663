"""``canonmerge replicate``: the distributed replay of C7 on real tensors (torch.distributed).

Maps flags onto ``realstate.processes.replicate.launcher.ReplicateSettings``; the report has one row per
rank and the C7 verdict: one render digest across all ranks, or the command fails."""

from __future__ import annotations

import argparse

from spec import PartReport, Progress

PART = "realstate"
FLAGS = {"timeout_s": "--timeout"}  # library argument -> flag, where the two are not spelled alike


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from realstate.models.geometry import GEOMETRY_NAMES
    from realstate.processes.replicate.launcher import ReplicateSettings

    d = ReplicateSettings()
    parser.add_argument("--ranks", type=int, default=d.ranks, help="processes in the group (default %(default)s)")
    parser.add_argument("--backend", choices=["auto", "gloo", "nccl"], default=d.backend,
                        help="torch.distributed backend (auto: nccl on cuda, gloo on cpu)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=d.device)
    parser.add_argument("--store", metavar="STORE", help="replicate this store's fragments (a path or s3:// URL) "
                                                         "instead of seeded agents'")
    parser.add_argument("--geometry", choices=GEOMETRY_NAMES, default=d.geometry,
                        help="Qwen3 geometry of the seeded agents (default %(default)s)")
    parser.add_argument("--agents", type=int, default=d.agents, help="seeded agents, one fragment each")
    parser.add_argument("--latent-steps", type=int, default=d.latent_steps)
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of weights, prompts and delivery orders")
    parser.add_argument("--redeliveries", type=int, default=d.redeliveries,
                        help="copies re-delivered per rank (default %(default)s)")
    parser.add_argument("--drops", type=int, default=d.drops,
                        help="deliveries dropped then resent per rank (default %(default)s)")
    parser.add_argument("--plant", metavar="MUTANT", help="render with a planted-bug engine (realstate.evidence.planted), "
                                                          "to demonstrate that the check fails")
    parser.add_argument("--timeout", type=float, default=d.timeout_s, help="seconds for all ranks to finish")


def run(args: argparse.Namespace, progress: Progress) -> PartReport:
    from realstate.processes.replicate.launcher import ReplicateSettings, run_replicate

    settings = ReplicateSettings(
        ranks=args.ranks, backend=args.backend, device=args.device, store=args.store, geometry=args.geometry,
        agents=args.agents, latent_steps=args.latent_steps, seed=args.seed, redeliveries=args.redeliveries,
        drops=args.drops, plant=args.plant, timeout_s=args.timeout)
    settings.validate()
    return run_replicate(settings, progress)
