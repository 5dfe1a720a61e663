"""``canonmerge fragment inspect | make``: look inside fragment files, or make some to play with.

``inspect`` validates every file completely (the same loader the store uses) and reports each;
one bad file makes the exit code 2 but the others are still reported.  ``make`` runs the tiny
seeded agents and saves one file per agent: seeded weights, never called real ones."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from canonmerge.printing import print_table
from canonmerge.terminal import terminal_safe
from realstate.models.geometry import DEFAULT_GEOMETRY, GEOMETRIES
from spec import InputError, Table, content_id_hex
from spec.arguments import integer, seed
from spec.output_files import check_output_tree

MAX_LATENT_STEPS = 200  # 26 seeded agents of at most 81 prompt tokens fit every geometry's positions

if TYPE_CHECKING:  # realstate loads torch: import it only when a command runs
    from realstate.kernel.fragment import Fragment


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    inspect = sub.add_parser("inspect", help="validate fragment files and show what they hold",
                             description="Validate fragment files completely and show what they hold.")
    inspect.add_argument("files", nargs="+", metavar="FILE")
    make = sub.add_parser("make", help="write one fragment file per tiny seeded agent (to play with)",
                          description="Run seeded agents on a Qwen3 geometry with seeded weights and "
                                      "save each agent's cache as a fragment file.")
    make.add_argument("outdir", metavar="OUTDIR")
    make.add_argument("--geometry", choices=sorted(GEOMETRIES), default=DEFAULT_GEOMETRY,
                      help=f"Qwen3 geometry with seeded weights (default {DEFAULT_GEOMETRY})")
    make.add_argument("--agents", type=int, default=3, help="number of agents, one file each (1..26; default 3)")
    make.add_argument("--latent-steps", type=int, default=1,
                      help=f"latent steps per agent (0..{MAX_LATENT_STEPS}; default 1)")
    make.add_argument("--seed", type=int, default=0, help="seed for weights and prompts (0..2**32-1; default 0)")
    make.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    make.add_argument("--with-inputs", action="store_true",
                      help="keep each agent's layer-0 inputs in its file (format version 2, which a "
                           "composition can re-run; another content id)")
    for p in (inspect, make):  # also accept --json after the action; SUPPRESS keeps an earlier one
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="print a machine-readable report")


def describe(fragment: Fragment, path: str | None = None) -> dict[str, Any]:
    """One fragment as a JSON-ready record (shared with ``canonmerge store``)."""
    fp = fragment.fingerprint
    record: dict[str, Any] = {
        "id": content_id_hex(fragment.content_id),
        "architecture": fp.architecture,
        "layers": fp.layers, "kv_heads": fp.kv_heads, "head_dim": fp.head_dim,
        "dtype": fp.dtype, "max_positions": fp.max_positions, "weights": fp.weights,
        "start": fragment.start, "tokens": fragment.tokens,
        "format_version": fragment.version,
        "inputs": None if fragment.inputs is None else list(fragment.inputs.shape),
    }
    if path is not None:
        record["file"] = path
        record["bytes"] = os.path.getsize(path)
    return record


def fragment_row(record: dict[str, Any]) -> list[str]:
    return [record["id"][:16], f"{record['architecture']} L{record['layers']} H{record['kv_heads']} "
            f"D{record['head_dim']}", record["dtype"], str(record["start"]), str(record["tokens"]),
            str(record.get("bytes", "")), record["weights"][:23]]


FRAGMENT_COLUMNS = ["id", "fingerprint", "dtype", "start", "tokens", "bytes", "weights"]


def _inspect(args: argparse.Namespace, console: Console) -> int:
    from realstate.exchange.fragment_file import load_fragment
    from spec import FormatError
    records, errors = [], []
    for path in args.files:
        try:
            records.append(describe(load_fragment(path), path))
        except FormatError as exc:
            errors.append({"file": exc.source, "field": exc.field, "error": str(exc)})
            print(f"canonmerge fragment inspect: error: {terminal_safe(str(exc))}", file=sys.stderr)
    code = 2 if errors else 0
    if args.json:
        print(json.dumps({"command": "fragment inspect", "exit_code": code, "fragments": records,
                          "errors": errors}, indent=2))
        return code
    if records:
        table = Table("valid fragment files", ["file"] + FRAGMENT_COLUMNS)
        table.rows = [[r["file"]] + fragment_row(r) for r in records]
        print_table(console, table)
    console.print(f"{len(records)} valid, {len(errors)} refused")
    return code


def _make(args: argparse.Namespace, console: Console) -> int:
    from realstate.exchange.fragment_file import FILE_SUFFIX, load_fragment, save_fragment
    from realstate.models.agents import run_agents
    from realstate.models.seeded import load_seeded

    outdir = check_output_tree(args.outdir, "OUTDIR")  # a store takes fragments only through 'store put'
    integer("agents", args.agents, 1, 26)
    integer("latent_steps", args.latent_steps, 0, MAX_LATENT_STEPS)
    seed("seed", args.seed)
    lm = load_seeded(args.geometry, args.dtype, "cpu", args.seed)
    runs = run_agents(lm, args.agents, args.latent_steps, seed=args.seed, keep_inputs=args.with_inputs)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{outdir}: cannot create OUTDIR: {exc.strerror or exc}") from None
    records = []
    for run in runs:
        path = outdir / f"agent-{run.name}-{content_id_hex(run.fragment.content_id)[:12]}{FILE_SUFFIX}"
        save_fragment(run.fragment, path)
        if load_fragment(path).content_id != run.fragment.content_id:  # read back what we wrote
            raise InputError(f"{path}: reading the file back gave another content id")
        records.append({"agent": run.name, **describe(run.fragment, str(path))})
    note = (f"weights are SEEDED, not real: {lm.source_detail}; the files are for trying the "
            f"format and the store")
    if args.json:
        print(json.dumps({"command": "fragment make", "exit_code": 0, "weights_source": lm.source,
                          "weights_detail": lm.source_detail, "note": note, "fragments": records},
                         indent=2))
        return 0
    table = Table(f"fragment files written to {outdir}", ["agent", "file"] + FRAGMENT_COLUMNS)
    table.rows = [[r["agent"], Path(r["file"]).name] + fragment_row(r) for r in records]
    print_table(console, table)
    console.print(f"note: {note}", markup=False)
    return 0


def run(args: argparse.Namespace, console: Console) -> int:
    return {"inspect": _inspect, "make": _make}[args.action](args, console)
