"""``canonmerge store put | list | merge | render | verify | clean``: replica stores, in a local
directory or under ``s3://bucket/prefix`` (credentials and endpoint from boto3's standard chain).

Every command validates its input before it writes: a failing ``put`` leaves the store as it
was (a new store is not even created); a failing ``merge`` writes nothing unless the fragments
it copies span several batches, and then only whole, valid ones.  ``render`` loads the model
only to check that every fragment's fingerprint is the model's: fragments of another model
never merge.  Outputs (``render --out``) are written atomically, never into a store."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console

from canonmerge.commands.fragment import FRAGMENT_COLUMNS, describe, fragment_row
from canonmerge.printing import print_table
from canonmerge.terminal import terminal_safe
from realstate.models.geometry import DEFAULT_GEOMETRY, GEOMETRIES
from spec import InputError, Table, content_id_hex
from spec.arguments import integer, number, seed, within_positions

if TYPE_CHECKING:  # realstate loads torch: import it only when a command runs
    from realstate.exchange.stores import FragmentStore

DEFAULT_CLEAN_AGE_S = 3600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    where = "a directory or s3://bucket/prefix"
    put = sub.add_parser("put", help="validate fragment files and add them (creates the store if needed)")
    put.add_argument("store", metavar="STORE", help=where)
    put.add_argument("files", nargs="+", metavar="FILE")
    listing = sub.add_parser("list", help="validate every fragment in a store and list them")
    listing.add_argument("store", metavar="STORE", help=where)
    merge = sub.add_parser("merge", help="anti-entropy: add every fragment of SRC that DST lacks (creates DST); "
                                         "idempotent, and resumable after an interruption")
    merge.add_argument("dst", metavar="DST", help=where)
    merge.add_argument("src", metavar="SRC", help=where)
    merge.add_argument("--workers", type=int, default=8, help="concurrent transfers (default %(default)s)")
    render = sub.add_parser("render", help="CanonicalMerge of a store for a model; digest and layout")
    render.add_argument("store", metavar="STORE", help=where)
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("--geometry", choices=sorted(GEOMETRIES),
                        help=f"a Qwen3 geometry with seeded weights (e.g. {DEFAULT_GEOMETRY})")
    source.add_argument("--checkpoint", metavar="DIR", help="a local Qwen3 checkpoint, loaded offline")
    render.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    render.add_argument("--seed", type=int, default=0, help="seed of the seeded weights (default 0)")
    render.add_argument("--base", type=int, default=0, help="position of the first rendered token")
    render.add_argument("--out", metavar="FILE", help="also save the rendered context as a fragment file "
                                                      "(written atomically; never into a store)")
    verify = sub.add_parser("verify", help="re-read and re-hash every fragment; report every corrupted one")
    verify.add_argument("store", metavar="STORE", help=where)
    clean = sub.add_parser("clean", help="remove leftovers of killed writers (temporary files; S3: "
                                         "incomplete multipart uploads); with --foreign, foreign entries too")
    clean.add_argument("store", metavar="STORE", help=where)
    clean.add_argument("--older-than", type=float, default=DEFAULT_CLEAN_AGE_S, metavar="SECONDS",
                       help="only leftovers older than this (default %(default)s; a live writer's are younger)")
    clean.add_argument("--foreign", action="store_true",
                       help="also remove the foreign entries other writers put into the store (files and "
                            "directories, or objects and nested prefixes, that are not fragments); one that "
                            "holds a replica store is kept")
    for p in (put, listing, merge, render, verify, clean):  # also accept --json after the action
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="print a machine-readable report")


def _existing(location: str) -> FragmentStore:
    from realstate.exchange.stores import open_store
    return open_store(location)


def _foreign(args: argparse.Namespace, store: FragmentStore) -> list[dict[str, str]]:
    """Name every foreign entry on stderr (escaped): not part of the state, never fatal."""
    entries = [{"entry": where, "kind": what} for where, what in store.foreign()]
    for e in entries:
        print(f"canonmerge store {args.action}: warning: {terminal_safe(e['entry'])}: a foreign entry "
              f"({e['kind']}), not part of the store's state; skipped ('canonmerge store clean --foreign' "
              f"removes it)", file=sys.stderr)
    return entries


def _emit(args: argparse.Namespace, console: Console, report: dict[str, Any], table: Table | None,
          lines: list[str], code: int = 0) -> int:
    if args.json:
        print(json.dumps({"exit_code": code, **report}, indent=2))
        return code
    if table is not None and table.rows:
        print_table(console, table)  # literal: markup escaped, control characters shown as escapes
    for line in lines:
        console.print(terminal_safe(line), markup=False, highlight=False)
    return code


def _put(args: argparse.Namespace, console: Console) -> int:
    from realstate.exchange.fragment_file import load_fragment
    from realstate.exchange.stores import (
        open_store,
        refuse_store_in_store,
        require_one_fingerprint,
        store_is_absent,
    )

    refuse_store_in_store(args.store)  # before anything is read or created
    incoming = [(path, load_fragment(path)) for path in args.files]  # all validated first
    require_one_fingerprint([f for _, f in incoming])
    store = open_store(args.store, create=store_is_absent(args.store))  # an existing one must be a store
    store.check_fingerprints((fragment, path) for path, fragment in incoming)
    rows = []
    for path, fragment in incoming:
        added = store.put(fragment)
        rows.append({"file": path, "id": content_id_hex(fragment.content_id),
                     "status": "added" if added else "already present"})
    added = sum(r["status"] == "added" for r in rows)
    table = Table(f"store {args.store}: put", ["file", "id", "status"],
                  [[r["file"], r["id"][:16], r["status"]] for r in rows])
    foreign = _foreign(args, store)
    return _emit(args, console, {"command": "store put", "store": store.location, "kind": store.kind,
                                 "added": added, "files": rows, "foreign": foreign}, table,
                 [f"{added} added, {len(rows) - added} already present; the store holds {len(store)}"])


def _list(args: argparse.Namespace, console: Console) -> int:
    store = _existing(args.store)
    listing = store.listing()
    records = []
    for fragment in store.fragments():
        record = describe(fragment)
        record.update(file=store.where(fragment.content_id), bytes=listing[fragment.content_id])
        records.append(record)
    temporaries = store.temporaries()
    foreign = _foreign(args, store)
    table = Table(f"store {args.store}: {len(records)} fragments (all validated)", FRAGMENT_COLUMNS,
                  [fragment_row(r) for r in records])
    lines = [f"{len(records)} fragments, {sum(r['tokens'] for r in records)} tokens"]
    if temporaries:
        lines.append(f"{len(temporaries)} leftovers of writers (in flight or killed; not part of the state; "
                     f"'canonmerge store clean' removes old ones)")
    return _emit(args, console, {"command": "store list", "store": store.location, "kind": store.kind,
                                 "fragments": records, "temporaries": temporaries, "foreign": foreign}, table,
                 lines + ([f"{len(foreign)} foreign entries (not part of the state; named on stderr)"] if foreign
                          else []))


def _merge(args: argparse.Namespace, console: Console) -> int:
    from realstate.exchange.stores import open_store, refuse_store_in_store, store_is_absent
    from realstate.exchange.stores.anti_entropy import describe as describe_merge
    from realstate.exchange.stores.anti_entropy import merge_stores, refuse_nested

    integer("workers", args.workers, 1, 64)
    refuse_nested(args.dst, args.src)  # before either is opened (or DST created)
    refuse_store_in_store(args.dst)
    source = open_store(args.src)
    foreign = _foreign(args, source)
    destination: FragmentStore | str = args.dst if store_is_absent(args.dst) else open_store(args.dst)
    if not isinstance(destination, str):
        foreign += _foreign(args, destination)
    result = merge_stores(destination, source, workers=args.workers)
    total = len(open_store(result.dst))
    return _emit(args, console, {"command": "store merge", "dst": result.dst, "src": result.src,
                                 "added": result.added, "already_present": result.listed - result.added,
                                 "raced": result.raced, "bytes_copied": result.bytes_copied, "total": total,
                                 "seconds": round(result.seconds, 3), "foreign": foreign}, None,
                 [f"{describe_merge(result)}; {args.dst} holds {total}"])


def _render(args: argparse.Namespace, console: Console) -> int:
    from realstate.exchange.fragment_file import save_fragment
    from spec import FormatError
    from spec.output_files import check_output_path

    integer("base", args.base, 0, 2**63 - 1)
    seed("seed", args.seed)
    if args.out is not None:
        check_output_path(args.out, "--out")  # before the work, not after
    store = _existing(args.store)
    fragments = store.fragments()
    foreign = _foreign(args, store)
    if not len(fragments):
        raise InputError(f"{args.store}: the store is empty; nothing to render")
    from realstate.kernel.render import canonical_render
    from realstate.models.checkpoint import load_checkpoint  # transformers: only once the input is good
    from realstate.models.seeded import load_seeded

    lm = (load_checkpoint(args.checkpoint, args.dtype) if args.checkpoint
          else load_seeded(args.geometry, args.dtype, "cpu", args.seed))
    for fragment in fragments:
        if fragment.fingerprint != lm.fingerprint:
            raise FormatError(store.where(fragment.content_id), "fingerprint",
                                      f"differs from the model's ({lm.source}: {lm.source_detail}) in "
                                      f"{lm.fingerprint.describe_mismatch(fragment.fingerprint)}")
    tokens = sum(f.tokens for f in fragments)
    within_positions(lm.fingerprint.max_positions, [("base", args.base, args.base), (None, "fragment tokens", tokens)],
                     "the render")
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
    return _emit(args, console, {"command": "store render", "store": store.location, "digest": rendered.digest(),
                                 "tokens": rendered.tokens, "base": args.base, "layout": layout,
                                 "model": lm.describe(), "out": args.out, "out_id": out_id, "foreign": foreign},
                 table, lines)


def _verify(args: argparse.Namespace, console: Console) -> int:
    """Exit 2 when any fragment is corrupt (bad data in the store), 0 when every one re-hashes."""
    report = _existing(args.store).verify()
    table = Table(f"store {args.store}: corrupted fragments", ["fragment", "problem"],
                  [[where, problem] for where, problem in report.corrupt])
    lines = [f"{report.checked} fragments re-read and re-hashed ({report.bytes_read} bytes): "
             + ("every one is intact" if report.ok else f"{len(report.corrupt)} CORRUPTED")]
    if report.temporaries:
        lines.append(f"{len(report.temporaries)} leftovers of writers (not part of the state)")
    if report.foreign:
        lines.append(f"{len(report.foreign)} foreign entries (not part of the state; named on stderr; "
                     f"'canonmerge store clean --foreign' removes them)")
        for where, what in report.foreign:
            print(f"canonmerge store verify: warning: {terminal_safe(where)}: a foreign entry ({what}), not part "
                  f"of the store's state", file=sys.stderr)
    if not report.ok:
        lines.append("a corrupted fragment is not repaired here: remove it and merge from a healthy replica")
    code = 0 if report.ok else 2
    if not report.ok and not args.json:
        for where, problem in report.corrupt:
            print(f"canonmerge store verify: error: {terminal_safe(where)}: {terminal_safe(problem)}",
                  file=sys.stderr)
    return _emit(args, console, {"command": "store verify", "store": report.location, "checked": report.checked,
                                 "bytes_read": report.bytes_read, "ok": report.ok,
                                 "corrupt": [{"fragment": w, "problem": p} for w, p in report.corrupt],
                                 "temporaries": report.temporaries,
                                 "foreign": [{"entry": w, "kind": k} for w, k in report.foreign]}, table, lines, code)


def _clean(args: argparse.Namespace, console: Console) -> int:
    number("older_than", args.older_than, 0.0, 10 * 365 * 86400.0, " seconds (ten years)")
    store = _existing(args.store)
    removed = store.clean_temporaries(args.older_than)
    left = store.temporaries()
    foreign_removed: list[str] = []
    kept: list[tuple[str, str]] = []
    if args.foreign:
        foreign_removed, kept = store.remove_foreign()
        for where, why in kept:
            print(f"canonmerge store clean: warning: {terminal_safe(where)}: a foreign entry kept: {why}",
                  file=sys.stderr)
    remaining = [] if args.foreign else _foreign(args, store)
    lines = [f"removed {len(removed)} leftovers older than {args.older_than:g} s; {len(left)} younger left "
             f"(possibly a live writer's)"]
    if args.foreign:
        lines.append(f"removed {len(foreign_removed)} foreign entries; {len(kept)} kept")
    elif remaining:
        lines.append(f"{len(remaining)} foreign entries left in place (named on stderr; --foreign removes them)")
    return _emit(args, console, {"command": "store clean", "store": store.location, "removed": removed,
                                 "left": left, "foreign_removed": foreign_removed,
                                 "foreign_kept": [{"entry": w, "why": y} for w, y in kept],
                                 "foreign": remaining}, None, lines)


def run(args: argparse.Namespace, console: Console) -> int:
    actions = {"put": _put, "list": _list, "merge": _merge, "render": _render, "verify": _verify, "clean": _clean}
    return actions[args.action](args, console)
