"""``canonmerge store put | list | merge | render``: replica stores on disk.

Every command validates all of its input before it writes anything, so a failing command leaves
the store as it was (a new store is not even created).  ``render`` loads the model only to check
that every fragment's fingerprint is the model's: fragments of another model never merge."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from rich.console import Console

from canonmerge.commands.fragment import FRAGMENT_COLUMNS, describe, fragment_row
from canonmerge.printing import print_table
from realstate.geometry import GEOMETRIES
from realstate.settings import DEFAULT_GEOMETRY
from spec import InputError, Table, content_id_hex

if TYPE_CHECKING:  # realstate loads torch: import it only when a command runs
    from realstate.fragment import Fragment
    from realstate.store import ReplicaStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    put = sub.add_parser("put", help="validate fragment files and add them (creates the store if needed)")
    put.add_argument("store", metavar="STORE")
    put.add_argument("files", nargs="+", metavar="FILE")
    listing = sub.add_parser("list", help="validate every fragment in a store and list them")
    listing.add_argument("store", metavar="STORE")
    merge = sub.add_parser("merge", help="add every fragment of SRC to DST (set union; creates DST)")
    merge.add_argument("dst", metavar="DST")
    merge.add_argument("src", metavar="SRC")
    render = sub.add_parser("render", help="CanonicalMerge of a store for a model; digest and layout")
    render.add_argument("store", metavar="STORE")
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("--geometry", choices=sorted(GEOMETRIES),
                        help=f"a Qwen3 geometry with seeded weights (e.g. {DEFAULT_GEOMETRY})")
    source.add_argument("--checkpoint", metavar="DIR", help="a local Qwen3 checkpoint, loaded offline")
    render.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    render.add_argument("--seed", type=int, default=0, help="seed of the seeded weights (default 0)")
    render.add_argument("--base", type=int, default=0, help="position of the first rendered token")
    render.add_argument("--out", metavar="FILE", help="also save the rendered context as a fragment file")
    for p in (put, listing, merge, render):  # also accept --json after the action
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="print a machine-readable report")


def _existing(path: str) -> ReplicaStore:
    from realstate.store import ReplicaStore
    return ReplicaStore(path)


def _creating(path: str, incoming: list[Fragment]) -> ReplicaStore:
    """Open or create ``path`` only once ``incoming`` is known to be one fingerprint's fragments."""
    from realstate.store import ReplicaStore, require_one_fingerprint
    require_one_fingerprint(incoming)
    fresh = not os.path.lexists(path) or (os.path.isdir(path) and not os.listdir(path))
    store = ReplicaStore(path, create=fresh)  # an existing path must already be a store
    for fragment in incoming:
        store.check_fingerprint(fragment, f"fragment {content_id_hex(fragment.content_id)}")
    return store


def _emit(args: argparse.Namespace, console: Console, report: dict[str, Any], table: Table | None,
          lines: list[str]) -> int:
    if args.json:
        print(json.dumps({"exit_code": 0, **report}, indent=2))
        return 0
    if table is not None and table.rows:
        print_table(console, table)
    for line in lines:
        console.print(line, markup=False)
    return 0


def _put(args: argparse.Namespace, console: Console) -> int:
    from realstate.fragment_file import load_fragment
    incoming = [(path, load_fragment(path)) for path in args.files]  # all validated first
    store = _creating(args.store, [f for _, f in incoming])
    rows = []
    for path, fragment in incoming:
        added = store.put(fragment)
        rows.append({"file": path, "id": content_id_hex(fragment.content_id),
                     "status": "added" if added else "already present"})
    added = sum(r["status"] == "added" for r in rows)
    table = Table(f"store {args.store}: put", ["file", "id", "status"],
                  [[r["file"], r["id"][:16], r["status"]] for r in rows])
    return _emit(args, console, {"command": "store put", "store": args.store, "added": added, "files": rows},
                 table, [f"{added} added, {len(rows) - added} already present; the store holds {len(store)}"])


def _list(args: argparse.Namespace, console: Console) -> int:
    store = _existing(args.store)
    records = [describe(f, str(store.path_of(f.content_id))) for f in store.fragments()]
    temporaries = store.temporaries()
    table = Table(f"store {args.store}: {len(records)} fragments (all validated)", FRAGMENT_COLUMNS,
                  [fragment_row(r) for r in records])
    lines = [f"{len(records)} fragments, {sum(r['tokens'] for r in records)} tokens"]
    if temporaries:
        lines.append(f"{len(temporaries)} temporary files (writes in flight or left by killed writers; "
                     f"not part of the state)")
    return _emit(args, console, {"command": "store list", "store": args.store, "fragments": records,
                                 "temporaries": temporaries}, table, lines)


def _merge(args: argparse.Namespace, console: Console) -> int:
    source = _existing(args.src)
    incoming = list(source.fragments())  # every source file validated before DST is touched
    store = _creating(args.dst, incoming)
    present = set(store.ids())
    added = store.put_all(f for f in incoming if f.content_id not in present)
    return _emit(args, console, {"command": "store merge", "dst": args.dst, "src": args.src, "added": added,
                                 "total": len(store)}, None,
                 [f"merged {args.src} into {args.dst}: {added} added, {len(incoming) - added} already "
                  f"present; {args.dst} holds {len(store)}"])


def _render(args: argparse.Namespace, console: Console) -> int:
    from realstate.fragment_file import FragmentFormatError, save_fragment
    from realstate.models import load_checkpoint, load_seeded
    from realstate.render import canonical_render

    store = _existing(args.store)
    fragments = store.fragments()
    if not len(fragments):
        raise InputError(f"{args.store}: the store is empty; nothing to render")
    if args.base < 0:
        raise InputError(f"--base must be >= 0, got {args.base}")
    if args.out is not None and os.path.isdir(args.out):
        raise InputError(f"--out {args.out}: is a directory")
    lm = (load_checkpoint(args.checkpoint, args.dtype) if args.checkpoint
          else load_seeded(args.geometry, args.dtype, "cpu", args.seed))
    for fragment in fragments:
        if fragment.fingerprint != lm.fingerprint:
            raise FragmentFormatError(str(store.path_of(fragment.content_id)), "fingerprint",
                                      f"differs from the model's ({lm.source}: {lm.source_detail}) in "
                                      f"{lm.fingerprint.describe_mismatch(fragment.fingerprint)}")
    rendered = canonical_render(fragments, args.base)
    layout = [{"id": content_id_hex(p.fragment.content_id), "start": p.fragment.start, "offset": p.offset,
               "tokens": p.fragment.tokens} for p in rendered.layout]
    out_id = None
    if args.out is not None:
        out_fragment = rendered.as_fragment()
        save_fragment(out_fragment, args.out)
        out_id = content_id_hex(out_fragment.content_id)
    table = Table(f"store {args.store}: canonical layout", ["#", "id", "stored start", "offset", "tokens"],
                  [[str(i), r["id"][:16], str(r["start"]), str(r["offset"]), str(r["tokens"])]
                   for i, r in enumerate(layout)])
    weights = "SEEDED weights, not real ones" if lm.source == "seeded" else "checkpoint weights"
    lines = [f"render digest (SHA-256): {rendered.digest()}",
             f"{rendered.tokens} tokens from {len(layout)} fragments, positions {args.base}.."
             f"{args.base + rendered.tokens - 1}",
             f"model: {lm.source_detail} ({weights}); the bytes depend only on the fragments"]
    if args.out is not None:
        lines.append(f"rendered context saved to {args.out} as fragment {out_id}")
    return _emit(args, console, {"command": "store render", "store": args.store, "digest": rendered.digest(),
                                 "tokens": rendered.tokens, "base": args.base, "layout": layout,
                                 "model": lm.describe(), "out": args.out, "out_id": out_id}, table, lines)


def run(args: argparse.Namespace, console: Console) -> int:
    return {"put": _put, "list": _list, "merge": _merge, "render": _render}[args.action](args, console)
