"""``canonmerge bench``: the accuracy benchmark (realstate.bench) — flags to settings, one library
call, then the tables, the JSON document and the figures.  Exit 0 when every structural claim row
holds, 1 when one fails (or a causal-audit control is not what it claims), 2 for bad input."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from realstate.bench.settings import DEFAULT_LATENT_STEPS, DEFAULT_MODEL, SPLITS, TOST_MARGIN, BenchSettings
from realstate.models.geometry import GEOMETRY_NAMES, MODEL_NAMES
from spec import InputError, InstrumentError, exit_code_for
from spec.output_files import check_output_tree

FLAGS = {"model": "--model", "geometry": "--geometry", "checkpoint": "--checkpoint", "latent_steps": "--latent-steps",
         "split": "--split", "problems": "--problems", "hotpotqa": "--hotpotqa", "limit": "--limit",
         "max_new_tokens": "--max-new-tokens", "bootstrap": "--bootstrap", "tost_margin": "--tost-margin",
         "threads": "--threads", "device": "--device", "dtype": "--dtype"}


def _budgets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"want comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("want at least one budget")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", choices=MODEL_NAMES, default=None,
                        help=f"real trained weights from an installed package (default {DEFAULT_MODEL})")
    source.add_argument("--geometry", choices=GEOMETRY_NAMES, default=None,
                        help="seeded weights of a geometry (structure only: accuracies are noise)")
    source.add_argument("--checkpoint", metavar="PATH", help="local weights: a transformers directory or a .gguf")
    problems = parser.add_mutually_exclusive_group()
    problems.add_argument("--split", choices=SPLITS, default="eval",
                          help="the committed problem split (default eval; dev is for prompt design only)")
    problems.add_argument("--problems", metavar="FILE", help="a JSONL problem file instead of the committed split")
    problems.add_argument("--hotpotqa", metavar="FILE", help="HotpotQA distractor-setting JSON "
                                                             "(hotpot_dev_distractor_v1.json) instead")
    parser.add_argument("--hotpotqa-agents", type=int, default=2, help="agents per HotpotQA question (default 2)")
    parser.add_argument("--hotpotqa-distractors", type=int, default=2,
                        help="distractor paragraphs kept per HotpotQA question (default 2)")
    parser.add_argument("--quick", action="store_true",
                        help="one problem per family and latent budgets 0,1 (the tests run this)")
    parser.add_argument("--latent-steps", type=_budgets, default=DEFAULT_LATENT_STEPS,
                        help="comma-separated latent-step budgets, 0 included (default 0,2; --quick: 0,1)")
    parser.add_argument("--families", default="", help="comma-separated families to run (default all)")
    parser.add_argument("--limit", type=int, default=None,
                        help="at most N problems per family, spread over k (round-robin)")
    parser.add_argument("--seed", type=int, default=0, help="seed for controls, bootstrap and seeded weights")
    parser.add_argument("--max-new-tokens", type=int, default=4, help="greedy tokens per answer (early stop)")
    parser.add_argument("--bootstrap", type=int, default=2000, help="paired bootstrap resamples (default 2000)")
    parser.add_argument("--tost-margin", type=float, default=TOST_MARGIN,
                        help=f"TOST equivalence margin in accuracy (default {TOST_MARGIN})")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument("--out", metavar="DIR", default="bench-out",
                        help="where bench.json and the figures go (default ./bench-out)")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")


def settings_from(args: argparse.Namespace) -> BenchSettings:
    chosen = args.geometry is not None or args.checkpoint is not None
    return BenchSettings(
        model=args.model or (None if chosen else DEFAULT_MODEL), geometry=args.geometry, checkpoint=args.checkpoint,
        dtype=args.dtype, device=args.device, seed=args.seed, latent_steps=args.latent_steps, split=args.split,
        problems=args.problems, hotpotqa=args.hotpotqa, hotpotqa_agents=args.hotpotqa_agents,
        hotpotqa_distractors=args.hotpotqa_distractors, quick=args.quick, limit=args.limit,
        max_new_tokens=args.max_new_tokens, bootstrap=args.bootstrap, tost_margin=args.tost_margin,
        threads=args.threads, families=tuple(f.strip() for f in args.families.split(",") if f.strip()),
    )


def run(args: argparse.Namespace, console: Console) -> int:
    settings = settings_from(args)  # an ArgumentError becomes its flag in canonmerge.cli (FLAGS)
    settings.validate()  # refuse bad flags and bad problem files before paying for torch
    from realstate.bench.selection import load_problems

    load_problems(settings)
    check_output_tree(args.out, "--out")  # before the work, not after: outputs never go into a store
    if importlib.util.find_spec("scipy") is None:
        raise InputError("the benchmark's statistics need scipy: pip install 'canonmerge[bench]'")
    from canonmerge.environment import describe_environment
    from canonmerge.printing import print_table, results_table
    from canonmerge.progress import ProgressPrinter
    from realstate.bench.report import tables, to_json, write_json
    from realstate.bench.runner import run_bench

    try:
        with ProgressPrinter(enabled=True) as progress:
            outcome = run_bench(settings, progress)
    except InstrumentError as exc:
        print(f"canonmerge bench: a causal-audit control is invalid: {exc}", file=sys.stderr)
        return 1
    document = {**outcome.document, "environment": describe_environment()}
    out = Path(args.out)
    written = [write_json(document, out)]
    if not args.no_figures:
        from realstate.bench.figures import write_figures

        written += write_figures(document, out)
    code = exit_code_for(outcome.results)
    if args.json:
        print(to_json(document))
        return code
    for table in tables(document):
        print_table(console, table)
    console.print(results_table("bench: structural claims (every cell checked)", outcome.results))
    for line in document["framing"]:
        console.print(f"note: {escape(line)}")
    console.print("wrote " + ", ".join(escape(str(p)) for p in written))
    verdict = {0: "every structural claim holds", 1: "a structural claim FAILS", 2: "nothing was run"}[code]
    console.print(f"result: {verdict} (exit {code})")
    return code
