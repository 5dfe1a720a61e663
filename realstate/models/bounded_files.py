"""Reading the files of an untrusted checkpoint with the project's one bounded reader
(``spec.bounded``: regular files only, opened without blocking and checked on that descriptor,
size-bounded before a byte is read, strict JSON), every refusal re-worded as an ``ArgumentError``
naming the checkpoint (or named model) and the file.  Symbolic links are followed: the Hugging
Face cache stores checkpoints as links to blobs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from spec import ArgumentError, FormatError, bounded

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
    """``(file, size)`` of a regular file of at most ``limit`` bytes (``spec.bounded``), else a
    refusal naming the checkpoint and the file."""
    try:
        with bounded.open_regular(path, limit, source=path.name) as opened:
            yield opened
    except FormatError as exc:
        raise source.refuse(f"{path.name}: {exc.field}: {exc.problem}") from None


def read_bytes(path: Path, limit: int, source: Source) -> bytes:
    try:
        return bounded.read_regular(path, limit, source=path.name)
    except FormatError as exc:
        raise source.refuse(f"{path.name}: {exc.field}: {exc.problem}") from None


def parse_json(text: bytes, what: str, source: Source) -> Any:
    """Strict, bounded JSON (``spec.bounded.parse_json``) from bytes already bounded in size."""
    try:
        return bounded.parse_json(text, what)
    except FormatError as exc:
        raise source.refuse(f"{what}: {exc.problem}") from None


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
