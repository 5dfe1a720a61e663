"""Hostile output paths: every command that writes refuses a path inside a replica store — the
store itself, any depth below it, reached through ``..`` or a symbolic link — with exit 2 before
anything is written (the path never appears), and the store's bytes are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile_helpers import Case, World, check_case, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _dangling_link_into_store(w: World) -> None:
    (w.root / "out-link.cmfrag").symlink_to(w.store / "rendered.cmfrag")


def _other_dir(w: World) -> None:
    (w.root / "other").mkdir()


INSIDE = "lies inside the replica store"
CHECK = ["check", "--max-arity", "2", "--universe", "ties", "--no-gossip", "--plant", "no-tie-break",
         "--workers", "1", "--trace-dir"]
CASES = [
    Case("check --trace-dir is the store", lambda w: [*CHECK, str(w.store)], "is a replica store",
         lambda w: str(w.store)),
    Case("check --trace-dir two levels below the store", lambda w: [*CHECK, w.at("store", "a", "b")], INSIDE,
         lambda w: w.at("store", "a", "b"), absent=lambda w: [w.at("store", "a")]),
    Case("check --trace-dir reaching the store through ..", lambda w: [*CHECK, w.at("other", "..", "store", "t")],
         INSIDE, lambda w: w.at("other", "..", "store", "t"), prepare=_other_dir,
         absent=lambda w: [w.at("store", "t")]),
    Case("check --trace-dir through a symbolic link to the store", lambda w: [*CHECK, w.at("link", "t")], INSIDE,
         lambda w: w.at("link", "t"), absent=lambda w: [w.at("store", "t")]),
    Case("prove --emit-smt2 is the store", lambda w: ["prove", "--only", "C5", "--emit-smt2", str(w.store)],
         "is a replica store", lambda w: str(w.store)),
    Case("prove --emit-smt2 below the store", lambda w: ["prove", "--only", "C5", "--emit-smt2",
                                                         w.at("store", "smt", "deep")], INSIDE,
         lambda w: w.at("store", "smt", "deep"), absent=lambda w: [w.at("store", "smt")]),
    Case("prove --emit-smt2 through a link", lambda w: ["prove", "--only", "C5", "--emit-smt2", str(w.link)],
         "is a replica store", lambda w: str(w.link)),
    Case("fragment make OUTDIR below the store", lambda w: ["fragment", "make", w.at("store", "made")], INSIDE,
         lambda w: w.at("store", "made"), absent=lambda w: [w.at("store", "made")]),
    Case("fragment make OUTDIR through a link", lambda w: ["fragment", "make", w.at("link", "made")], INSIDE,
         lambda w: w.at("link", "made"), absent=lambda w: [w.at("store", "made")]),
    Case("store render --out in a missing directory below the store",
         lambda w: ["store", "render", str(w.store), "--geometry", "qwen3-tiny", "--out",
                    w.at("store", "sub", "r.cmfrag")], INSIDE, lambda w: w.at("store", "sub", "r.cmfrag")),
    Case("store render --out a dangling link into the store",
         lambda w: ["store", "render", str(w.store), "--geometry", "qwen3-tiny", "--out", w.at("out-link.cmfrag")],
         INSIDE, lambda w: w.at("out-link.cmfrag"), prepare=_dangling_link_into_store,
         absent=lambda w: [w.at("store", "rendered.cmfrag")]),
    Case("bench --out below the store", lambda w: ["bench", "--geometry", "qwen3-tiny", "--quick", "--out",
                                                   w.at("store", "bench")], INSIDE, lambda w: w.at("store", "bench"),
         absent=lambda w: [w.at("store", "bench")]),
    Case("bench --out is the store through a link", lambda w: ["bench", "--geometry", "qwen3-tiny", "--out",
                                                               str(w.link)], "is a replica store",
         lambda w: str(w.link)),
    Case("store put to a new store inside a store", lambda w: ["store", "put", w.at("store", "inner"), w.files[2]],
         INSIDE, lambda w: w.at("store", "inner"), absent=lambda w: [w.at("store", "inner")]),
    Case("store put to a store inside a store through ..",
         lambda w: ["store", "put", w.at("store", "x", "..", "y"), w.files[2]], INSIDE,
         lambda w: w.at("store", "x", "..", "y"), absent=lambda w: [w.at("store", "y")]),
    Case("store merge into a new store inside the source", lambda w: ["store", "merge", w.at("link", "copy"),
                                                                       str(w.store)],
         "the destination lies inside the source", lambda w: w.at("link", "copy"),
         absent=lambda w: [w.at("store", "copy")]),
    Case("store merge into a store inside a third store",
         lambda w: ["store", "merge", w.at("store", "deep", "dst"), w.at("src")], INSIDE,
         lambda w: w.at("store", "deep", "dst"),
         prepare=lambda w: __import__("shutil").copytree(w.store, w.root / "src"),
         absent=lambda w: [w.at("store", "deep")]),
    Case("soak --workdir is the store", lambda w: ["soak", "--s3-replicas", "0", "--workdir", str(w.store)],
         "is a replica store", lambda w: str(w.store)),
    Case("audit --journal inside the store", lambda w: ["audit", "--list", "--journal", w.at("link", "j.jsonl")],
         INSIDE, lambda w: w.at("link", "j.jsonl"), json=False, absent=lambda w: [w.at("store", "j.jsonl")]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_an_output_inside_a_store_is_refused_before_anything_is_written(case: Case, world: World,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    check_case(case, world, capsys)


def test_the_same_outputs_outside_a_store_are_written(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The negative of the table: the guard refuses stores, not outputs (a refusal that refuses
    everything would pass the table)."""
    from canonmerge.cli import main

    out = world.root / "smt"
    assert main(["prove", "--only", "c5_key_injective", "--emit-smt2", str(out)]) == 0
    assert (out / "c5_key_injective.smt2").is_file()
    capsys.readouterr()
