"""No error loses data or escapes as a traceback.  For every failure class: exit 2, a message
naming the path and the cause, no "Traceback", and the store's bytes unchanged (or, for a
partial merge, only whole valid fragments).  OS errors are real where this machine allows it as
root (an immutable directory via ``chattr +i``, FIFOs, devices, missing paths); permission
denied, read-only file system and disk full are injected into the very system call that fails
(``os.open``, ``os.scandir``, ``os.fsync``), because chmod does not stop root and mounting a
tiny tmpfs needs privileges the tests should not use."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from canonmerge.cli import main
from realstate.exchange.fragment_file import fragment_to_bytes, save_fragment
from realstate.exchange.stores import DirectoryStore
from realstate.exchange.stores.anti_entropy import merge_stores
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, content_id_of, tensor_bytes
from spec import FormatError
from tests.realstate_helpers import random_fragment, tiny_fingerprint

FP = tiny_fingerprint()
FRAGMENTS = [random_fragment(FP, n, seed=90 + n, start=n) for n in (1, 2, 3, 4, 5)]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "\x1b" not in out + err
    return code, out, err


@pytest.fixture
def store(tmp_path: Path) -> DirectoryStore:
    s = DirectoryStore(tmp_path / "store", create=True)
    for f in FRAGMENTS[:2]:
        s.put(f)
    return s


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = []
    for i, f in enumerate(FRAGMENTS):
        paths.append(str(tmp_path / f"in{i}.cmfrag"))
        save_fragment(f, paths[-1])
    return paths


# ------------------------------------------------------------------------------------------------
# OS errors while writing or reading a store

@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``chattr +i``: even root cannot create, rename or delete inside (a real EPERM)."""
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not available here ({done.stderr.decode().strip()}); the injected "
                    f"permission tests below cover the class")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_immutable_store_refuses_writes_with_exit_2(store: DirectoryStore, files: list[str], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    stale = store.path / ".tmp-7-0123456789abcdef"
    stale.write_bytes(b"half")
    os.utime(stale, (time.time() - 7200,) * 2)
    other = DirectoryStore(tmp_path / "other", create=True)
    other.put(FRAGMENTS[3])
    before = snapshot(store.path)
    with immutable(store.path):
        for argv, says in [(("store", "put", str(store.path), files[2]), "Operation not permitted"),
                           (("store", "merge", str(store.path), str(other.path)), "Operation not permitted"),
                           (("store", "clean", str(store.path), "--older-than", "0"), "cannot remove")]:
            code, _, err = cli(capsys, *argv)
            assert code == 2 and says in err and str(store.path) in err, err
        assert snapshot(store.path) == before
        code, out, _ = cli(capsys, "store", "list", str(store.path), "--json")  # reading still works
        assert code == 0 and len(json.loads(out)["fragments"]) == 2


def _inject(monkeypatch: pytest.MonkeyPatch, name: str, under: Path, error: int,
            when: Callable[[tuple], bool] = lambda args: True) -> None:
    """Make ``os.<name>`` fail with ``error`` for paths under ``under`` (fds resolved via /proc)."""
    real = getattr(os, name)

    def failing(*args, **kwargs):
        target = args[0]
        where = os.readlink(f"/proc/self/fd/{target}") if isinstance(target, int) else os.fspath(target)
        if Path(where).resolve().is_relative_to(under.resolve()) and when(args):
            raise OSError(error, os.strerror(error), where)
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, failing)


@pytest.mark.parametrize("call,error,argv_of,says", [
    ("fsync", errno.ENOSPC, lambda s, f: ("store", "put", s, f[2]), "No space left on device"),
    ("open", errno.EROFS, lambda s, f: ("store", "put", s, f[2]), "Read-only file system"),
    ("open", errno.EACCES, lambda s, f: ("store", "put", s, f[2]), "Permission denied"),
    ("scandir", errno.EACCES, lambda s, f: ("store", "list", s), "Permission denied"),
    ("scandir", errno.EIO, lambda s, f: ("store", "verify", s), "Input/output error"),
], ids=["disk full", "read-only", "permission denied on write", "permission denied on list", "I/O error"])
def test_injected_os_errors_are_exit_2_and_change_nothing(call: str, error: int, argv_of, says: str,
                                                          store: DirectoryStore, files: list[str],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store.path)
    with monkeypatch.context() as patch:
        _inject(patch, call, store.path, error, when=lambda args: call != "open" or bool(args[1] & os.O_CREAT))
        code, out, err = cli(capsys, *argv_of(str(store.path), files))
        assert code == 2 and says in err and str(store.path) in err, err
        code, out, _ = cli(capsys, *argv_of(str(store.path), files), "--json")
    document = json.loads(out)
    assert code == 2 and document["exit_code"] == 2 and says in document["error"]["message"]
    assert snapshot(store.path) == before  # no temporary left behind either


def test_disk_full_in_the_middle_of_a_merge_leaves_only_whole_fragments(store: DirectoryStore, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    src = DirectoryStore(tmp_path / "src", create=True)
    for f in FRAGMENTS:
        src.put(f)
    writes = []
    real_replace = os.replace

    def replace_then_fill_up(a, b, **kw):  # the third new fragment finds the disk full
        if Path(b).parent == store.path:
            writes.append(b)
            if len(writes) >= 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), a)
        return real_replace(a, b, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", replace_then_fill_up)
        with pytest.raises(FormatError, match="No space left on device"):
            merge_stores(store, src, batch_bytes=1, workers=1)  # one fragment per batch
    present = DirectoryStore(store.path)
    assert len(present.ids()) == 4 and present.verify().ok and present.temporaries() == []
    assert merge_stores(present, src).added == 1  # space freed: the merge resumes
    assert present.fragments() == src.fragments()


# ------------------------------------------------------------------------------------------------
# special, missing, oversized and malformed inputs

def test_special_and_missing_input_files_are_refused_without_blocking(store: DirectoryStore, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    before = snapshot(store.path)
    for argv, says in [
        (("fragment", "inspect", str(fifo)), "not a regular file"),
        (("fragment", "inspect", "/dev/null"), "not a regular file"),
        (("fragment", "inspect", str(tmp_path)), "not a regular file"),
        (("store", "put", str(store.path), str(fifo)), "not a regular file"),
        (("store", "put", str(store.path), str(tmp_path / "absent.cmfrag")), "No such file"),
        (("check", "--replay", str(fifo)), "not a regular file"),
        (("check", "--replay", "/dev/zero"), "not a regular file"),
        (("check", "--replay", str(tmp_path)), "is a directory"),
        (("check", "--replay", str(tmp_path / "absent.json")), "No such file"),
        (("store", "list", str(fifo)), "is not a directory"),
    ]:
        code, _, err = cli(capsys, *argv)
        assert code == 2 and says in err, (argv, err)
    assert snapshot(store.path) == before


def _trace(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_oversized_and_malformed_traces_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # sparse: 17 MiB over the 16 MiB limit, nothing allocated
        handle.truncate(17 << 20)
    cases = [(str(big), "over the limit of"),
             (_trace(tmp_path, "deep.json", b"[" * 200_000 + b"]" * 200_000), "nested more than 64 deep"),
             (_trace(tmp_path, "int.json", b'{"x": ' + b"9" * 5000 + b"}"), "over the limit of 64"),
             (_trace(tmp_path, "utf.json", b'{"x": "\xff"}'), "not UTF-8"),
             (_trace(tmp_path, "nan.json", b'{"x": NaN}'), "JSON constant NaN is not allowed"),
             (_trace(tmp_path, "list.json", b"[]"), "want an object")]
    for path, says in cases:
        code, _, err = cli(capsys, "check", "--replay", path)
        assert code == 2 and says in err and path in err, err
        code, out, _ = cli(capsys, "check", "--replay", path, "--json")
        document = json.loads(out)
        assert code == 2 and document["error"]["kind"] == "input" and path in document["error"]["message"]


def _file_with_fingerprint(**changes) -> bytes:
    """A fragment file whose fingerprint carries one hostile value (id consistent with it)."""
    values = {name: getattr(FP, name) for name in Fingerprint.__dataclass_fields__} | changes
    fp = Fingerprint(**values)
    frag = FRAGMENTS[0]
    meta = {"format": "canonmerge-fragment", "format_version": "1", "start": str(frag.start),
            "fingerprint": fp.canonical_bytes.decode("ascii"),
            "content_id": content_id_of(fp, frag.start, frag.keys, frag.values).hex()}
    span = len(bytes(tensor_bytes(frag.keys)))
    shape = list(frag.keys.shape)
    header = json.dumps({"__metadata__": meta,
                         "keys": {"dtype": "BF16", "shape": shape, "data_offsets": [0, span]},
                         "values": {"dtype": "BF16", "shape": shape, "data_offsets": [span, 2 * span]}},
                        separators=(",", ":")).encode()
    return struct.pack("<Q", len(header)) + header + bytes(tensor_bytes(frag.keys)) + bytes(tensor_bytes(frag.values))


@pytest.mark.parametrize("changes,says", [
    ({"architecture": "Qwen3\x1b[2J\x1b[31mForCausalLM"}, "control character"),
    ({"architecture": "Qwen3\rForCausalLM"}, "control character"),
    ({"weights": "sha256:\u202eevil"}, "format character"),
    ({"weights": "sha256:\ud800"}, "surrogate"),
    ({"architecture": "Q" * 300}, "over the limit of 256"),
    ({"rope_theta": float("inf")}, "rope_theta"),
    ({"rope_theta": float("nan")}, "rope_theta"),
    ({"rope_theta": -1.0}, "rope_theta"),
], ids=["ESC", "CR", "bidi override", "lone surrogate", "too long", "inf theta", "nan theta", "negative theta"])
def test_hostile_fingerprint_strings_and_numbers_are_refused(changes: dict, says: str, tmp_path: Path,
                                                             store: DirectoryStore,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hostile.cmfrag"
    path.write_bytes(_file_with_fingerprint(**changes))
    before = snapshot(store.path)
    for argv in (("fragment", "inspect", str(path)), ("store", "put", str(store.path), str(path))):
        code, out, err = cli(capsys, *argv)  # cli() also asserts no raw ESC reached the output
        assert code == 2 and "fingerprint" in err and says in err, err
    assert snapshot(store.path) == before
    hostile = {name: getattr(FP, name) for name in Fingerprint.__dataclass_fields__} | changes
    with pytest.raises(FormatError, match="fingerprint"):  # and writers refuse to make one
        fragment_to_bytes(Fragment(Fingerprint(**hostile), 0, FRAGMENTS[0].keys, FRAGMENTS[0].values))


# ------------------------------------------------------------------------------------------------
# outputs

def test_outputs_never_land_in_a_store_or_over_special_files(store: DirectoryStore, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store.path)
    render = ("store", "render", str(store.path), "--geometry", "qwen3-tiny", "--out")
    for out, says in [(str(store.path / "r.cmfrag"), "lies inside the replica store"),
                      (str(store.path / f"{FRAGMENTS[0].content_id.hex()}.cmfrag"), "lies inside the replica store"),
                      ("/dev/null", "not a regular file"),
                      (str(tmp_path / "missing" / "r.cmfrag"), "does not exist"),
                      (str(tmp_path), "is a directory")]:
        code, _, err = cli(capsys, *render, out)
        assert code == 2 and says in err, err
    code, _, err = cli(capsys, "fragment", "make", str(store.path))
    assert code == 2 and "is a replica store" in err
    assert snapshot(store.path) == before
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_failed_output_write_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with monkeypatch.context() as patch:
        _inject(patch, "fsync", out_dir, errno.ENOSPC)
        with pytest.raises(Exception, match="No space left on device"):
            save_fragment(FRAGMENTS[0], out_dir / "f.cmfrag")
    assert list(out_dir.iterdir()) == []
    save_fragment(FRAGMENTS[0], out_dir / "f.cmfrag")
    save_fragment(FRAGMENTS[1], out_dir / "f.cmfrag")  # replaced atomically
    assert [p.name for p in out_dir.iterdir()] == ["f.cmfrag"]


# ------------------------------------------------------------------------------------------------
# what reaches the terminal, JSON errors, leftovers and corruption

def test_paths_with_markup_and_control_characters_print_literally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # short relative names: tables do not wrap them
    odd = "f[bold]x[red]\x1b[31m\rn.cmfrag"
    save_fragment(FRAGMENTS[0], odd)
    shown = "f[bold]x[red]\\x1b[31m\\x0dn.cmfrag"
    code, out, _ = cli(capsys, "fragment", "inspect", odd)  # cli() asserts no raw ESC was printed
    assert code == 0 and shown in out
    code, _, err = cli(capsys, "fragment", "inspect", odd + "-missing")
    assert code == 2 and shown + "-missing" in err
    code, out, _ = cli(capsys, "store", "put", "st[red]ore", odd)
    assert code == 0 and "store st[red]ore: put" in out and shown in out
    code, out, _ = cli(capsys, "store", "list", "st[red]ore")
    assert code == 0 and "store st[red]ore: 1 fragments" in out


def test_json_errors_for_usage_and_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, kind in [(("store", "list", str(tmp_path / "none"), "--json"), "input"),
                       (("store", "put", "--json"), "usage"),
                       (("fragment", "inspect", "--json", str(tmp_path / "none.cmfrag")), None)]:
        code, out, _ = cli(capsys, *argv)
        document = json.loads(out)
        assert code == 2 and document["exit_code"] == 2
        if kind is not None:
            assert document["error"]["kind"] == kind and document["error"]["message"]


def test_clean_removes_only_stale_leftovers_and_verify_reports_every_corruption(
        store: DirectoryStore, capsys: pytest.CaptureFixture[str]) -> None:
    for f in FRAGMENTS[2:]:
        store.put(f)
    stale, fresh = store.path / ".tmp-11-00000000000000aa", store.path / ".tmp-12-00000000000000bb"
    stale.write_bytes(fragment_to_bytes(FRAGMENTS[0])[:40])
    fresh.write_bytes(b"in flight")
    os.utime(stale, (time.time() - 7200,) * 2)
    code, out, _ = cli(capsys, "store", "list", str(store.path))
    assert code == 0 and "2 leftovers" in out
    code, out, _ = cli(capsys, "store", "clean", str(store.path), "--json")
    assert code == 0 and json.loads(out)["removed"] == [stale.name] and json.loads(out)["left"] == [fresh.name]
    for f in FRAGMENTS[1:3]:  # two fragments rot on disk
        path = store.path_of(f.content_id)
        data = bytearray(path.read_bytes())
        data[-2] ^= 0x01
        path.write_bytes(bytes(data))
    before = snapshot(store.path)
    code, out, err = cli(capsys, "store", "verify", str(store.path))
    assert code == 2 and "2 CORRUPTED" in out and "5 fragments re-read" in out
    for f in FRAGMENTS[1:3]:
        assert f.content_id.hex() in err
    assert snapshot(store.path) == before  # reported, not repaired or deleted
    code, out, _ = cli(capsys, "store", "clean", str(store.path), "--older-than", "-1")
    assert code == 2


def test_traces_are_never_saved_into_a_store(store: DirectoryStore, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store.path)
    code, _, err = cli(capsys, "check", "--max-arity", "2", "--universe", "ties", "--no-gossip",
                       "--plant", "no-tie-break", "--trace-dir", str(store.path))
    assert code == 2 and "is a replica store" in err
    assert snapshot(store.path) == before
