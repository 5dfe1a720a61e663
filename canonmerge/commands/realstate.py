"""``canonmerge realstate``: the bit-for-bit replay on real transformers Qwen3 caches."""

from __future__ import annotations

import argparse

from realstate.settings import DEFAULT_GEOMETRY, GEOMETRY_NAMES, ReplaySettings
from spec import InputError, PartReport, Progress

PART = "realstate"


def _offsets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"want comma-separated integers, got {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"want non-negative offsets, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--geometry", choices=GEOMETRY_NAMES, default=None,
                        help=f"a Qwen3 geometry with seeded weights (default {DEFAULT_GEOMETRY})")
    source.add_argument("--checkpoint", metavar="DIR",
                        help="a local Qwen3 checkpoint directory, loaded offline")
    parser.add_argument("--agents", type=int, default=5, help="number of agents N (1..6; default 5)")
    parser.add_argument("--latent-steps", type=int, default=2, help="latent steps per agent (default 2)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    parser.add_argument("--seed", type=int, default=0, help="seed for weights and prompts (default 0)")
    parser.add_argument("--decode-tokens", type=int, default=4,
                        help="tokens the final agent decodes greedily per permutation (default 4)")
    parser.add_argument("--fidelity-offsets", type=_offsets, default=ReplaySettings.fidelity_offsets,
                        help="comma-separated target offsets for the fidelity check (default 1,100,1000,10000,30000)")
    parser.add_argument("--prompt", action="append", metavar="TEXT",
                        help="an agent's text prompt (repeat per agent; needs a checkpoint with a tokenizer)")
    parser.add_argument("--only", metavar="CLAIM|CHECK",
                        help="run only the checks of one claim (e.g. C3) or one check by name")
    parser.add_argument("--iteration", choices=["arrival", "id", "shuffled"], default="arrival",
                        help="FragmentSet iteration order while checking (default %(default)s)")


def settings_from(args: argparse.Namespace) -> ReplaySettings:
    if args.prompt and not args.checkpoint:
        raise InputError("--prompt needs --checkpoint with a tokenizer; seeded geometries use seeded token ids")
    return ReplaySettings(
        geometry=args.geometry or DEFAULT_GEOMETRY, checkpoint=args.checkpoint, agents=args.agents,
        latent_steps=args.latent_steps, device=args.device, dtype=args.dtype, seed=args.seed,
        decode_tokens=args.decode_tokens, fidelity_offsets=args.fidelity_offsets,
        prompts=tuple(args.prompt) if args.prompt else None, iteration=args.iteration,
    )


def run(args: argparse.Namespace, progress: Progress) -> PartReport:
    settings = settings_from(args)  # refuse bad flags before paying for torch
    settings.validate()
    import realstate.properties  # noqa: F401  (registers the checks; torch-free)
    from spec import select_checks

    checks = select_checks(PART, args.only)
    from realstate.replay import run_replay

    return run_replay(settings, progress, checks=checks, fail_fast=getattr(args, "fail_fast", False))


def run_default(progress: Progress, fail_fast: bool = False) -> PartReport:
    from realstate.replay import run_replay

    return run_replay(ReplaySettings(), progress, fail_fast=fail_fast)
