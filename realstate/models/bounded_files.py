"""Reading the files of an untrusted checkpoint: regular files only, size-bounded before a byte is
read, JSON parsed only after that, and every refusal naming the checkpoint.

A FIFO, a device or a directory where a file belongs is refused instead of blocking or reading
forever: the file is opened with ``O_NONBLOCK`` (opening a FIFO for reading then returns at once)
and checked with ``fstat`` on that very descriptor, so a file swapped for a FIFO between a check
and the open cannot make a load hang.  Symbolic links are followed (the Hugging Face cache stores
checkpoints as links to blobs)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from spec import ArgumentError

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
MAX_ENTRIES = 100_000  # names in a checkpoint directory (a real one holds tens)


@dataclass(frozen=True)
class Source:
    """What a refusal names: the library argument (``checkpoint`` or ``model``) and its value."""

    argument: str
    shown: str

    def refuse(self, problem: str) -> ArgumentError:
        return ArgumentError(self.argument, self.shown, problem)


def shown_name(name: str) -> str:
    """A name taken from a file (a tensor, a key), quoted with every control character escaped."""
    return repr(name)


def printable(text: str) -> str:
    """``text`` as it is when every character prints, else quoted with the escapes shown."""
    return text if text.isprintable() else repr(text)


def listed(names: list[str], most: int = 5) -> str:
    """The first ``most`` names, shown, and how many more there are."""
    shown = ", ".join(shown_name(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


@contextmanager
def open_regular(path: Path, limit: int, source: Source) -> Iterator[tuple[IO[bytes], int]]:
    """``(file, size)`` of a regular file of at most ``limit`` bytes, else a refusal naming it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise source.refuse(f"{path.name}: cannot be opened ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise source.refuse(f"{path.name} is not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise source.refuse(f"{path.name} is {info.st_size} bytes, more than the {limit} bytes such a file "
                                f"may have")
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle, info.st_size


def read_bytes(path: Path, limit: int, source: Source) -> bytes:
    with open_regular(path, limit, source) as (handle, size):
        data = handle.read(limit + 1)
    if len(data) != size:
        raise source.refuse(f"{path.name} changed while it was read ({size} bytes, then {len(data)})")
    return data


def parse_json(text: bytes, what: str, source: Source) -> Any:
    """JSON from bytes already bounded in size; nesting is bounded by the parser's recursion limit."""
    try:
        return json.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise source.refuse(f"{what} is not UTF-8 text") from None
    except RecursionError:
        raise source.refuse(f"{what} nests deeper than the JSON reader allows") from None
    except json.JSONDecodeError as exc:
        raise source.refuse(f"{what} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def read_json_object(path: Path, limit: int, source: Source) -> dict[str, Any]:
    value = parse_json(read_bytes(path, limit, source), path.name, source)
    if not isinstance(value, dict):
        raise source.refuse(f"{path.name} is JSON but not an object (a {type(value).__name__})")
    return value


def directory_names(directory: Path, source: Source) -> list[str]:
    """The names in a checkpoint directory, at most ``MAX_ENTRIES`` of them."""
    names: list[str] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) > MAX_ENTRIES:
                    raise source.refuse(f"holds more than {MAX_ENTRIES} entries")
    except OSError as exc:
        raise source.refuse(f"cannot be listed ({exc.strerror or exc})") from None
    return sorted(names)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"
