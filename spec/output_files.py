"""Writing a user's output file (a rendered context, fragment files, traces, SMT-LIB files, a
report) safely.

Why each rule: the file appears only complete (temporary in the same directory, fsync, rename;
the temporary removed again whatever stops the write, Ctrl-C included), so a killed writer never
leaves half a file under the real name; it never lands inside a replica store, at any depth, as
written or as resolved (``spec.store_marker``: a store holds only its own fragments) nor over
something that is not a regular file (renaming over ``/dev/null`` or a FIFO would replace it, and
opening a FIFO would block); and every failure is an ``InputError`` naming the path and the
cause.  Stdlib only, in spec, so that proofs and the checker write their files the same way."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from spec.errors import InputError
from spec.store_marker import refuse_inside_store


def _cause(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def check_output_directory(directory: Path, what: str) -> None:
    """``directory`` must lie in no replica store, exist and be a directory."""
    refuse_inside_store(directory, what)
    if not directory.is_dir():
        problem = "is not a directory" if os.path.lexists(directory) else "does not exist"
        raise InputError(f"{directory}: {what}: output directory {problem}")


def check_output_tree(directory: str | os.PathLike[str], what: str) -> Path:
    """A directory a command creates (if needed) and writes into: it lies in no replica store
    and, if something is there already, it is a directory."""
    target = Path(directory)
    refuse_inside_store(target, what)
    if os.path.lexists(target) and not target.is_dir():
        raise InputError(f"{target}: {what}: exists and is not a directory")
    return target


def check_output_path(path: str | os.PathLike[str], what: str = "output") -> Path:
    """The checks ``write_output`` makes before writing, on their own (to refuse early)."""
    target = Path(path)
    refuse_inside_store(target, what)  # the target itself, a symbolic link into a store included
    check_output_directory(target.parent, what)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise InputError(f"{target}: {what}: cannot stat: {_cause(exc)}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a symbolic link" if stat.S_ISLNK(info.st_mode)
                else "not a regular file (a FIFO, socket or device)")
        raise InputError(f"{target}: {what}: exists and is {kind}; not overwritten")
    return target


def replace_atomically(temp: Path, target: Path, chunks: Iterable[bytes],
                       step: Callable[[str], None] | None = None) -> int:
    """Write ``chunks`` to the new file ``temp`` (``O_EXCL``, no symlink followed), flush,
    fsync, rename over ``target``; returns the bytes written.  On any error the temporary is
    removed and the error re-raised (callers name it in their own terms).  ``step`` is told of
    each point a crash could land between (after the open, each write, the flush, the fsync and
    the rename): crash-consistency tests stop the writer there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(temp, flags, 0o644)
    written = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            if step is not None:
                step("temporary opened")
            for chunk in chunks:
                handle.write(chunk)
                written += len(chunk)
                if step is not None:
                    step("block written")
            handle.flush()
            if step is not None:
                step("flushed")
            os.fsync(handle.fileno())
            if step is not None:
                step("fsynced")
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    if step is not None:
        step("renamed")
    return written


def write_output(path: str | os.PathLike[str], data: bytes | Iterable[bytes], what: str = "output") -> int:
    """Write ``data`` to ``path`` atomically (module doc); returns the number of bytes written."""
    target = check_output_path(path, what)
    temp = target.parent / f".cmout-{os.getpid()}-{secrets.token_hex(8)}.tmp"
    chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    try:
        return replace_atomically(temp, target, chunks)
    except OSError as exc:
        raise InputError(f"{target}: {what}: cannot write: {_cause(exc)}") from None
