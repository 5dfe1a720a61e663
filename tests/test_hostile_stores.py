"""Hostile stores: entries another writer put into a store (a file, a directory, a link, a FIFO,
a name that looks like a fragment's, a name full of escape codes; S3 objects and nested prefixes)
never make it unusable: every store command still works on its fragments and names the foreign
entry on stderr, escaped; nothing is removed unless ``store clean --foreign`` is asked for, and
not even then an entry that holds a replica store.  An S3 object is judged by its header, fetched
with ranged reads, before a byte of its body is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from realstate.exchange.stores import MARKER_NAME, MARKER_TEXT, DirectoryStore, open_store
from tests.hostile_helpers import FRAGMENTS, Case, World, check_case, make_world, run_cli, tree_digest


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _file(w: World) -> None:
    (w.store / "README").write_text("notes\n")


def _directory(w: World) -> None:
    (w.store / "sub" / "deeper").mkdir(parents=True)
    (w.store / "sub" / "deeper" / "x.bin").write_bytes(b"\0" * 10)


def _link(w: World) -> None:
    (w.store / "passwd").symlink_to("/etc/passwd")


def _fifo(w: World) -> None:
    os.mkfifo(w.store / "pipe")


def _escapes(w: World) -> None:
    (w.store / "evil\x1b[2J[red]x").write_text("x")


def _fragment_named_link(w: World) -> None:
    (w.store / f"{FRAGMENTS[2].content_id.hex()}.cmfrag").symlink_to(w.files[2])


NAMED = "a foreign entry"
CASES = [
    Case("store list with a foreign file", lambda w: ["store", "list", str(w.store)], NAMED,
         lambda w: str(w.store / "README"), code=0, prepare=_file),
    Case("store verify with a foreign directory tree", lambda w: ["store", "verify", str(w.store)], NAMED,
         lambda w: str(w.store / "sub"), code=0, prepare=_directory),
    Case("store merge from a store holding a symbolic link", lambda w: ["store", "merge", w.at("copy"), str(w.store)],
         NAMED, lambda w: str(w.store / "passwd"), code=0, prepare=_link),
    Case("store list with a FIFO in the store (never opened)", lambda w: ["store", "list", str(w.store)],
         "a FIFO, socket or device", lambda w: str(w.store / "pipe"), code=0, prepare=_fifo),
    Case("store list with escape codes in a foreign name", lambda w: ["store", "list", str(w.store)], NAMED,
         lambda w: str(w.store / "evil\\x1b[2J[red]x"), code=0, prepare=_escapes),
    Case("store clean without --foreign leaves a foreign entry", lambda w: ["store", "clean", str(w.store)],
         "--foreign' removes it", lambda w: str(w.store / "README"), code=0, prepare=_file),
    Case("store put of a fragment whose name a foreign link takes", lambda w: ["store", "put", str(w.store),
                                                                               w.files[2]],
         "taken by a foreign entry", lambda w: f"{FRAGMENTS[2].content_id.hex()}.cmfrag", prepare=_fragment_named_link),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_foreign_entry_is_named_and_never_fatal(case: Case, world: World,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    result = check_case(case, world, capsys)
    if case.code == 0 and "list" in case.argv(world):
        assert "2 fragments" in result.out  # the store's own fragments, all of them


def test_render_skips_a_foreign_entry(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """Rendering needs the model's own fragments: made by the seeded tiny model."""
    from realstate.models.agents import run_agents
    from realstate.models.seeded import load_seeded

    store = DirectoryStore(world.root / "model-store", create=True)
    store.put_all(run.fragment for run in run_agents(load_seeded("qwen3-tiny"), 2, 0))
    (store.path / "notes.txt").write_text("x")
    before = tree_digest(store.path)
    result = run_cli(capsys, ["store", "render", str(store.path), "--geometry", "qwen3-tiny"])
    assert result.code == 0 and "render digest" in result.out and str(store.path / "notes.txt") in result.err
    assert tree_digest(store.path) == before


def test_clean_foreign_removes_foreign_entries_but_never_a_nested_store(world: World,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    for make in (_file, _directory, _link, _fifo):
        make(world)
    (world.store / "nested" / "replica").mkdir(parents=True)  # a store someone made inside ours by hand
    (world.store / "nested" / "replica" / MARKER_NAME).write_text(MARKER_TEXT)
    DirectoryStore(world.store / "nested" / "replica").put(FRAGMENTS[2])
    kept = tree_digest(world.store / "nested")
    fragments = {k: v for k, v in tree_digest(world.store).items() if k.endswith(".cmfrag") and "/" not in k}
    result = run_cli(capsys, ["store", "clean", str(world.store), "--foreign", "--json"])
    document = json.loads(result.out)
    assert result.code == 0 and len(document["foreign_removed"]) == 4
    assert [k["entry"] for k in document["foreign_kept"]] == [str(world.store / "nested")]
    assert "holds the replica store" in result.err
    after = tree_digest(world.store)
    assert {k: v for k, v in after.items() if k.endswith(".cmfrag") and "/" not in k} == fragments
    assert tree_digest(world.store / "nested") == kept
    assert DirectoryStore(world.store).foreign() == [(str(world.store / "nested"), "a directory")]


# -------------------------------------------------------------------------------------------------
# S3: foreign objects, nested prefixes, a store inside a store, a hostile object's size

@pytest.fixture(scope="module")
def s3():
    from tests.s3_helpers import loopback_s3

    with loopback_s3() as endpoint:
        yield endpoint


@pytest.fixture
def bucket(s3, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    from tests.s3_helpers import use_endpoint

    use_endpoint(monkeypatch, s3.env)
    return s3.bucket(f"hostile-{abs(hash(request.node.name)) % 10**8}")


def _objects(s3, bucket: str) -> dict[str, str]:
    import hashlib

    listed = s3.client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: hashlib.sha256(s3.client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()).hexdigest()
            for o in listed}


def test_s3_foreign_objects_and_prefixes_are_named_and_removed_only_on_request(
        s3, bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store(f"s3://{bucket}/r", create=True)
    for f in FRAGMENTS[:2]:
        store.put(f)
    s3.client.put_object(Bucket=bucket, Key="r/notes.txt", Body=b"hi")
    s3.client.put_object(Bucket=bucket, Key="r/junk/a/b", Body=b"hi")
    open_store(f"s3://{bucket}/elsewhere", create=True)
    s3.client.copy_object(Bucket=bucket, Key="r/nest/CANONMERGE_STORE",
                          CopySource={"Bucket": bucket, "Key": "elsewhere/CANONMERGE_STORE"})
    before = _objects(s3, bucket)
    for argv in (["store", "list", store.location], ["store", "verify", store.location],
                 ["store", "merge", str(tmp_path / "copy"), store.location],
                 ["store", "clean", store.location]):
        result = run_cli(capsys, argv)
        assert result.code == 0, result.err
        for entry in ("notes.txt", "junk/", "nest/"):
            assert f"s3://{bucket}/r/{entry}" in result.err, (argv, result.err)
    assert _objects(s3, bucket) == before
    result = run_cli(capsys, ["store", "clean", store.location, "--foreign", "--json"])
    document = json.loads(result.out)
    assert sorted(document["foreign_removed"]) == [f"s3://{bucket}/r/junk/", f"s3://{bucket}/r/notes.txt"]
    assert [k["entry"] for k in document["foreign_kept"]] == [f"s3://{bucket}/r/nest/"]
    assert len(store.ids()) == 2 and "r/nest/CANONMERGE_STORE" in _objects(s3, bucket)


def test_s3_store_inside_a_store_is_refused(s3, bucket: str, world: World,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    outer = open_store(f"s3://{bucket}/outer", create=True)
    outer.put(FRAGMENTS[0])
    before = _objects(s3, bucket)
    for argv in (["store", "put", f"s3://{bucket}/outer/a/inner", world.files[2]],
                 ["store", "merge", f"s3://{bucket}/outer/inner", str(world.store)]):
        result = run_cli(capsys, argv)
        assert result.code == 2 and f"lies inside the replica store s3://{bucket}/outer/" in result.err, result.err
    assert _objects(s3, bucket) == before


def test_s3_object_claiming_a_huge_tensor_is_refused_from_its_header(s3, bucket: str, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The object is 8 MiB of which only the header is fetched: its header claims far more data
    than the object holds, which the ranged header read sees before any body is fetched."""
    import struct

    from tests.test_fragment_file_bad_inputs import huge_tokens

    store = open_store(f"s3://{bucket}/r", create=True)
    store.put(FRAGMENTS[0])
    hostile = bytearray(huge_tokens())
    header_length = struct.unpack("<Q", hostile[:8])[0]
    data = bytes(hostile) + b"\0" * (8 << 20)
    key = f"r/{json.loads(hostile[8:8 + header_length])['__metadata__']['content_id']}.cmfrag"
    s3.client.put_object(Bucket=bucket, Key=key, Body=data)
    fetched = []
    real = store.client.get_object

    def counting(**kwargs):
        reply = real(**kwargs)
        fetched.append(int(reply["ContentLength"]))
        return reply

    monkeypatch.setattr(store.client, "get_object", counting)
    report = store.verify()
    assert len(report.corrupt) == 1 and "keys.shape" in report.corrupt[0][1] + report.corrupt[0][0]
    assert sum(fetched) < 64 << 10, fetched  # the header and one small fragment, never the 8 MiB


def _deep_tree(top: Path, levels: int, marker: bool) -> None:
    """``levels`` directories of 200-character names below ``top`` (far past PATH_MAX), made by
    descriptors; with ``marker`` a replica store's marker at the bottom."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for level in range(levels):
            name = f"{level:03d}" + "d" * 197
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        if marker:
            out = os.open(MARKER_NAME, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(out, MARKER_TEXT.encode("ascii"))
            os.close(out)
    finally:
        os.close(fd)


def test_clean_foreign_keeps_a_store_nested_deeper_than_the_path_limit(world: World,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """26 levels of 200-character names: a walk by path strings cannot see the store at the bottom
    (and once removed it); the walk by descriptors keeps it, and removes a deep tree without one."""
    _deep_tree(world.store / "deep-store", 26, marker=True)
    _deep_tree(world.store / "deep-nothing", 26, marker=False)
    result = run_cli(capsys, ["store", "clean", str(world.store), "--foreign", "--json"])
    document = json.loads(result.out)
    assert result.code == 0, result.err
    assert document["foreign_removed"] == [str(world.store / "deep-nothing")]
    assert [k["entry"] for k in document["foreign_kept"]] == [str(world.store / "deep-store")]
    assert "holds the replica store" in result.err
    assert (world.store / "deep-store").is_dir() and not (world.store / "deep-nothing").exists()


def test_a_foreign_tree_that_cannot_be_examined_whole_is_kept_and_named(world: World, monkeypatch) -> None:
    from realstate.exchange.stores import directory

    (world.store / "unreadable" / "below").mkdir(parents=True)

    def refusing(top, follow_symlinks, onerror):
        onerror(PermissionError(13, "Permission denied", str(top)))
        return iter(())

    monkeypatch.setattr(directory.os, "fwalk", refusing)
    removed, kept = DirectoryStore(world.store).remove_foreign()
    assert removed == [] and kept == [(str(world.store / "unreadable"),
                                       "cannot be examined whole (Permission denied), so it may hold a replica "
                                       "store; remove it by hand")]
    assert (world.store / "unreadable" / "below").is_dir()


def test_a_first_put_beside_another_first_writers_marker_in_flight_succeeds(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Two first writers into a new store: the other has made the directory and is writing its
    marker (a temporary, then a rename). This one used to see a non-empty directory without a
    marker, open it as an existing store and fail 'not a canonmerge store'; it creates it too."""
    from realstate.exchange.fragment_file import save_fragment

    store = tmp_path / "new"
    store.mkdir()
    (store / ".tmp-4242-0123456789abcdef").write_text(MARKER_TEXT[:3])  # the other writer, mid-write
    save_fragment(FRAGMENTS[0], tmp_path / "f.cmfrag")
    result = run_cli(capsys, ["store", "put", str(store), str(tmp_path / "f.cmfrag")])
    assert result.code == 0, result.err
    assert DirectoryStore(store).ids() == [FRAGMENTS[0].content_id]
