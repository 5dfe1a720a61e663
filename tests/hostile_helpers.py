"""The hostile suite's harness: a small world of a user's own material (a replica store, fragment
files, a FIFO, a symbolic link to the store), a table row per hostile input, and one check of
the promise for every row: the exit code, no traceback (nor a raw escape character), a message
naming the input and the cause, the same with ``--json``, and a SHA-256 snapshot of every entry
of the store (recursively, links and FIFOs included) unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from canonmerge.cli import main
from realstate.exchange.fragment_file import save_fragment
from realstate.exchange.stores import DirectoryStore
from tests.realstate_helpers import random_fragment, tiny_fingerprint

ROOT = Path(__file__).resolve().parents[1]
FP = tiny_fingerprint()
FRAGMENTS = [random_fragment(FP, n, seed=700 + n, start=n) for n in (1, 2, 3)]


@dataclass
class World:
    """A user's material under ``root``: ``store`` holds two fragments, ``files`` are fragment
    files outside it (the third is not in the store), ``link`` points at the store."""

    root: Path
    store: Path
    files: list[str]
    fifo: Path
    link: Path

    def at(self, *parts: str) -> str:
        return str(self.root.joinpath(*parts))


def make_world(root: Path) -> World:
    store = DirectoryStore(root / "store", create=True)
    for f in FRAGMENTS[:2]:
        store.put(f)
    files = []
    for i, f in enumerate(FRAGMENTS):
        files.append(str(root / f"in{i}.cmfrag"))
        save_fragment(f, files[-1])
    fifo = root / "fifo"
    os.mkfifo(fifo)
    link = root / "link"
    link.symlink_to(store.path, target_is_directory=True)
    return World(root, store.path, files, fifo, link)


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (recursively, links not followed): a file by its SHA-256, a
    link by its target, a directory or FIFO by its kind."""
    entries: dict[str, str] = {}
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(directory, name)
            mode = os.lstat(path).st_mode
            key = str(path.relative_to(root))
            if stat.S_ISLNK(mode):
                entries[key] = "-> " + os.readlink(path)
            elif stat.S_ISREG(mode):
                entries[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                entries[key] = "dir" if stat.S_ISDIR(mode) else f"special {stat.S_IFMT(mode):o}"
    return entries


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], argv: Sequence[str]) -> Result:
    """The command in this process; no traceback and no raw escape character anywhere."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    assert "\x1b" not in out + err, repr(err)
    return Result(code, out, err)


Text = Callable[[World], str]


@dataclass(frozen=True)
class Case:
    """One hostile input: ``argv`` built from the world, the ``code`` it must give, words of the
    cause (``says``) and of the input (``names``) its message must hold."""

    id: str
    argv: Callable[[World], list[str]]
    says: str
    names: Text
    code: int = 2
    prepare: Callable[[World], None] = field(default=lambda world: None)
    json: bool = True  # also with --json: one document, exit code and message in it
    absent: Callable[[World], list[str]] = field(default=lambda world: [])  # paths that must not appear


def check_case(case: Case, world: World, capsys: pytest.CaptureFixture[str]) -> Result:
    case.prepare(world)
    before = tree_digest(world.store)
    argv = case.argv(world)
    result = run_cli(capsys, argv)
    name = case.names(world)
    assert result.code == case.code, (argv, result.code, result.err)
    assert case.says in result.err and name in result.err, (argv, case.says, name, result.err)
    if case.code == 2:
        errors = [line for line in result.err.splitlines() if ": error: " in line]
        assert len(errors) == 1, result.err  # one line, naming the input and the cause
    if case.json:
        document = run_cli(capsys, [*argv, "--json"])
        assert document.code == case.code, document.err
        parsed = json.loads(document.out)
        assert parsed["exit_code"] == case.code
        if case.code == 2:
            assert name in json.dumps(parsed, ensure_ascii=False), parsed
    assert tree_digest(world.store) == before, "the store changed"
    for path in case.absent(world):
        assert not os.path.lexists(path), f"{path} was written"
    return result


def run_process(command: str, *, timeout: float = 60, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m canonmerge`` + ``command`` through bash (so ``>&-``, ``>/dev/full`` and pipes
    are real), with a timeout: a command that blocks fails the test instead of hanging it."""
    full = f"{sys.executable} -m canonmerge {command}"
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(["bash", "-c", full], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=cwd)


def quote(path: str | Path) -> str:
    import shlex

    return shlex.quote(str(path))
