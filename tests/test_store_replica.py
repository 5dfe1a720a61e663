"""The replica store in one process: put/get/ids/fragments/merge/render, temporaries, the CLI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import safetensors.torch
import torch

from canonmerge.cli import main
from realstate.exchange.fragment_file import (
    FormatError,
    fragment_to_bytes,
    load_fragment,
    read_header,
    save_fragment,
)
from realstate.exchange.stores import MARKER_NAME, DirectoryStore
from realstate.exchange.stores.anti_entropy import merge_stores
from realstate.kernel.fragment import fragment_set
from realstate.kernel.render import canonical_render
from spec import InputError
from tests.realstate_helpers import bits, random_fragment, tiny_fingerprint

FP = tiny_fingerprint()
FRAGMENTS = [random_fragment(FP, n, seed=20 + n, start=n) for n in (1, 2, 3, 4)]


def test_file_round_trip_for_every_dtype(tmp_path: Path) -> None:
    for dtype in ("bfloat16", "float16", "float32"):
        f = random_fragment(tiny_fingerprint(dtype, layers=3, heads=2, head_dim=6), 5, seed=7, start=9)
        path = tmp_path / f"{dtype}.cmfrag"
        assert save_fragment(f, path) == path.stat().st_size
        back = load_fragment(path)
        assert back.content_id == f.content_id and back.start == 9 and back.fingerprint == f.fingerprint
        assert torch.equal(bits(back.keys), bits(f.keys)) and torch.equal(bits(back.values), bits(f.values))
        header = read_header(path)
        assert header.content_id == f.content_id and header.tokens == 5 and header.file_size == path.stat().st_size
        plain = safetensors.torch.load_file(path)  # a standard safetensors file, readable by the library
        assert torch.equal(bits(plain["keys"]), bits(f.keys)) and set(plain) == {"keys", "values"}


def test_files_of_a_real_model_cache_round_trip(tmp_path: Path) -> None:
    from realstate.models.agents import run_agents
    from realstate.models.seeded import load_seeded

    lm = load_seeded("qwen3-tiny")
    runs = run_agents(lm, 2, latent_steps=1)
    for run in runs:
        path = tmp_path / "a.cmfrag"
        save_fragment(run.fragment, path)
        assert load_fragment(path).content_id == run.fragment.content_id
        assert load_fragment(path).fingerprint == lm.fingerprint


def test_put_is_idempotent_and_get_validates(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s", create=True)
    assert store.ids() == [] and store.fingerprint() is None and len(store) == 0
    assert store.put(FRAGMENTS[0]) is True
    assert store.put(FRAGMENTS[0].copy()) is False
    assert store.put(FRAGMENTS[1]) is True
    assert store.ids() == sorted(f.content_id for f in FRAGMENTS[:2])
    assert store.get(FRAGMENTS[1].content_id.hex()).content_id == FRAGMENTS[1].content_id
    assert store.get(FRAGMENTS[1].content_id) == FRAGMENTS[1]
    assert FRAGMENTS[0].content_id in store and FRAGMENTS[2].content_id not in store
    with pytest.raises(KeyError):
        store.get(FRAGMENTS[2].content_id)
    assert store.fragments() == fragment_set(FRAGMENTS[:2])
    assert sorted(os.listdir(store.path)) == sorted([MARKER_NAME] + [f.content_id.hex() + ".cmfrag"
                                                                      for f in FRAGMENTS[:2]])
    assert DirectoryStore(store.path).fingerprint() == FP  # reopened: read from a header


def test_put_file_validates_and_stores_the_canonical_bytes(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s", create=True)
    path = tmp_path / "in.cmfrag"
    path.write_bytes(fragment_to_bytes(FRAGMENTS[2]))
    assert store.put_file(path) is True and store.put_file(path) is False
    assert store.get(FRAGMENTS[2].content_id).content_id == FRAGMENTS[2].content_id


def test_merge_is_set_union_and_renders_agree(tmp_path: Path) -> None:
    a = DirectoryStore(tmp_path / "a", create=True)
    b = DirectoryStore(tmp_path / "b", create=True)
    for f in FRAGMENTS[:3]:
        a.put(f)
    for f in FRAGMENTS[1:]:
        b.put(f)
    c = DirectoryStore(tmp_path / "c", create=True)
    assert [merge_stores(c, b).added, merge_stores(c, a).added, merge_stores(c, a).added] == [3, 1, 0]
    assert merge_stores(a, b).added == 1 and merge_stores(b, a).added == 1  # both replicas now hold the union
    assert a.fragments() == b.fragments() == c.fragments() == fragment_set(FRAGMENTS)
    expected = canonical_render(FRAGMENTS).digest()
    assert a.render().digest() == b.render().digest() == c.render().digest() == expected
    assert a.render(base=100).digest() == canonical_render(FRAGMENTS, 100).digest()


def test_marker_and_creation_rules(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no such store directory"):
        DirectoryStore(tmp_path / "missing")
    with pytest.raises(FormatError, match="not a canonmerge store"):
        DirectoryStore(tmp_path)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x").write_text("x")
    with pytest.raises(FormatError, match="not empty and not a canonmerge store"):
        DirectoryStore(tmp_path / "junk", create=True)
    assert os.listdir(tmp_path / "junk") == ["x"]  # nothing written into a foreign directory
    store = DirectoryStore(tmp_path / "s", create=True)
    store.put(FRAGMENTS[0])
    assert DirectoryStore(tmp_path / "s", create=True).ids() == [FRAGMENTS[0].content_id]  # adopting is harmless
    with pytest.raises(InputError, match="nothing to render"):
        DirectoryStore(tmp_path / "empty", create=True).render()


def test_temporaries_are_ignored_and_only_stale_ones_are_cleaned(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s", create=True)
    store.put(FRAGMENTS[0])
    stale, fresh = store.path / ".tmp-123-0123456789abcdef", store.path / ".tmp-456-fedcba9876543210"
    stale.write_bytes(fragment_to_bytes(FRAGMENTS[1])[:50])  # a killed writer's half file
    fresh.write_bytes(b"in flight")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    assert store.ids() == [FRAGMENTS[0].content_id] and store.temporaries() == sorted([stale.name, fresh.name])
    assert store.fragments() == fragment_set(FRAGMENTS[:1])
    assert store.clean_temporaries() == [stale.name]
    assert store.temporaries() == [fresh.name] and store.ids() == [FRAGMENTS[0].content_id]
    assert store.clean_temporaries(older_than_s=0) == [fresh.name]
    assert sorted(os.listdir(store.path)) == sorted([MARKER_NAME, FRAGMENTS[0].content_id.hex() + ".cmfrag"])


def test_a_failed_write_leaves_no_temporary(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s", create=True)

    def chunks():
        yield b"partial"
        raise OSError("disk full")

    with pytest.raises(FormatError, match="cannot write: disk full"):
        store._write_atomic(FRAGMENTS[0].content_id.hex() + ".cmfrag", chunks())
    assert os.listdir(store.path) == [MARKER_NAME]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_line_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frags, s1, s2 = tmp_path / "frags", tmp_path / "s1", tmp_path / "s2"
    code, out, _ = cli(capsys, "fragment", "make", str(frags), "--agents", "3", "--latent-steps", "1", "--json")
    made = json.loads(out)
    assert code == 0 and len(made["fragments"]) == 3 and made["weights_source"] == "seeded"
    assert "SEEDED" in made["note"]
    files = sorted(str(p) for p in frags.iterdir())
    code, out, _ = cli(capsys, "fragment", "inspect", *files, "--json")
    inspected = json.loads(out)
    assert code == 0 and {r["id"] for r in inspected["fragments"]} == {r["id"] for r in made["fragments"]}
    assert cli(capsys, "store", "put", str(s1), *files[:2])[0] == 0
    code, out, _ = cli(capsys, "store", "put", str(s1), *files, "--json")
    assert code == 0 and json.loads(out)["added"] == 1
    assert cli(capsys, "store", "put", str(s2), files[2])[0] == 0
    code, out, _ = cli(capsys, "store", "merge", str(s2), str(s1), "--json")
    assert code == 0 and json.loads(out)["added"] == 2 and json.loads(out)["total"] == 3
    code, out, _ = cli(capsys, "store", "list", str(s2), "--json")
    assert code == 0 and len(json.loads(out)["fragments"]) == 3
    rendered = tmp_path / "rendered.cmfrag"
    code, out, _ = cli(capsys, "store", "render", str(s2), "--geometry", "qwen3-tiny",
                       "--out", str(rendered), "--json")
    report = json.loads(out)
    assert code == 0 and report["tokens"] == sum(r["tokens"] for r in made["fragments"])
    assert [p["offset"] for p in report["layout"]] == [0, report["layout"][0]["tokens"],
                                                       report["layout"][0]["tokens"] + report["layout"][1]["tokens"]]
    assert report["model"]["weights_source"] == "seeded"
    expected = canonical_render([load_fragment(p) for p in files]).digest()
    assert report["digest"] == expected
    assert load_fragment(rendered).content_id.hex() == report["out_id"]
    code, out, _ = cli(capsys, "store", "render", str(s1), "--geometry", "qwen3-tiny")  # human output
    assert code == 0 and expected in out and "SEEDED" in out
    code, out, _ = cli(capsys, "store", "list", str(s1))
    assert code == 0 and "3 fragments" in out


def with_inputs(fragment, hidden: int = 6, seed: int = 0):
    from realstate.kernel.fragment import Fragment

    g = torch.Generator().manual_seed(seed)
    inputs = torch.randn(fragment.tokens, hidden, generator=g).to(fragment.keys.dtype)
    return Fragment(fragment.fingerprint, fragment.start, fragment.keys, fragment.values, inputs)


def test_stores_take_both_versions_and_keep_the_inputs(tmp_path: Path) -> None:
    """A version-2 fragment (with inputs) is another fragment than its version-1 self: both go in
    a store, come back whole, merge and render (a render reads keys and values only)."""
    kept = with_inputs(FRAGMENTS[0])
    assert kept.version == 2 and FRAGMENTS[0].version == 1 and kept.content_id != FRAGMENTS[0].content_id
    a = DirectoryStore(tmp_path / "a", create=True)
    assert a.put(kept) is True and a.put(FRAGMENTS[1]) is True and a.put(kept.copy()) is False
    back = a.get(kept.content_id)
    assert back.version == 2 and torch.equal(back.inputs, kept.inputs) and back == kept
    assert a.get(FRAGMENTS[1].content_id).inputs is None
    b = DirectoryStore(tmp_path / "b", create=True)
    assert merge_stores(b, a).added == 2 and b.fragments() == a.fragments()
    assert b.render().digest() == canonical_render([kept, FRAGMENTS[1]]).digest()


def test_fragment_make_with_inputs_writes_version_2_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fragment", "make", str(tmp_path / "v2"), "--agents", "2", "--with-inputs", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)["fragments"]
    assert [r["format_version"] for r in made] == [2, 2] and all(r["inputs"][0] == r["tokens"] for r in made)
    assert main(["fragment", "make", str(tmp_path / "v1"), "--agents", "2", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)["fragments"]
    assert [r["format_version"] for r in plain] == [1, 1] and [r["inputs"] for r in plain] == [None, None]
    assert {r["id"] for r in made}.isdisjoint(r["id"] for r in plain)  # the inputs are in the id
    assert main(["fragment", "inspect", "--json", *(r["file"] for r in made)]) == 0
    assert [r["format_version"] for r in json.loads(capsys.readouterr().out)["fragments"]] == [2, 2]
