"""The command's output channel: a closed, full or failing stdout is an error naming stdout.

Why: a report that could not be written must not look like a run that succeeded (a closed
stdout makes Python drop every ``print`` silently; a full one fails only when the buffer is
flushed, often at interpreter exit, as a traceback and exit 120).  ``guarded`` wraps stdout so
that every failed write or flush is one ``OutputError``; ``silence`` then points the descriptor
at ``/dev/null`` so that nothing is retried at exit.  A reader that went away (``| head``) is a
``BrokenPipeError``, left as it is: the command stops quietly."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from spec import InputError


class OutputError(InputError):
    """stdout could not be written (closed, full, an I/O error)."""


def _cause(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


class _Guarded:
    """A text stream that turns an OS error on write or flush into ``OutputError``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"stdout: cannot write: {_cause(exc)}") from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"stdout: cannot write: {_cause(exc)}") from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def stdout_problem() -> str | None:
    """Why stdout cannot take the report (closed), or ``None``; asked before any work starts, so
    that no file opened later can take over descriptor 1 and receive the report."""
    if sys.stdout is None:
        return "stdout: is closed"
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return None  # not a descriptor (a test's capture): nothing to check
    try:
        os.fstat(fd)
    except OSError as exc:
        return f"stdout: is closed ({_cause(exc)})"
    return None


def ensure_stderr() -> None:
    """With stderr closed, messages go nowhere rather than fail (or land on stdout)."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (lives as long as the process)


@contextmanager
def guarded() -> Iterator[TextIO]:
    """``sys.stdout`` wrapped for the duration; yields the stream it wraps."""
    real = sys.stdout
    sys.stdout = _Guarded(real)  # type: ignore[assignment]
    try:
        yield real
    finally:
        sys.stdout = real


def silence(stream: TextIO) -> None:
    """After a failed write: point the descriptor at /dev/null and drop what is buffered, so the
    interpreter's own flush at exit neither fails nor writes half a report."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)
    try:
        stream.flush()
    except OSError:
        pass
