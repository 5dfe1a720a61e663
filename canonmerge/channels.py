"""The command's output channel: a closed, full or failing stdout is an error naming stdout.

Why: a report that could not be written must not look like a run that succeeded (a closed
stdout makes Python drop every ``print`` silently; a full one fails only when the buffer is
flushed, often at interpreter exit, as a traceback and exit 120).  ``guarded`` wraps stdout so
that every failed write or flush is one ``OutputError``; ``silence`` then points the descriptor
at ``/dev/null`` so that nothing is retried at exit.  A reader that went away (``| head``) is a
``BrokenPipeError``, left as it is: the command stops quietly.

Every character must survive the output encoding too: under ``LC_ALL=C`` (without UTF-8 mode)
stdout is ASCII and a table cut with ``…`` or a figure with ``×`` was a ``UnicodeEncodeError``.
While a command runs, stdout and stderr spell what they cannot encode in ASCII (``...`` for the
ellipsis, ``x`` for the times sign, ``\\u2192``-style escapes for the rest), never raising."""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from spec import InputError


ENCODE_ERRORS = "canonmerge-ascii"
# what the project's own text uses, spelled in ASCII; anything else becomes an escape
ASCII_SPELLING = {
    "\u2026": "...", "\u2014": "--", "\u2013": "-", "\u2212": "-", "\u00d7": "x", "\u2264": "<=",
    "\u2265": ">=", "\u2260": "!=", "\u2248": "~", "\u00b1": "+/-", "\u00b7": "*", "\u2192": "->",
    "\u2190": "<-", "\u03a3": "Sum", "\u03b4": "delta", "\u2018": "'", "\u2019": "'", "\u201c": '"',
    "\u201d": '"', "\u00a0": " ", "\u2502": "|", "\u2503": "|", "\u2500": "-", "\u2501": "-",
    "\u2713": "ok", "\u2717": "x", "\u00b2": "^2", "\u221e": "inf",
}


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def ascii_spelling(exc: UnicodeError) -> tuple[str, int]:
    """The codec error handler: the unencodable span in ASCII, as the table spells it."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    span = exc.object[exc.start:exc.end]
    return "".join(ASCII_SPELLING.get(ch) or _escape(ch) for ch in span), exc.end


codecs.register_error(ENCODE_ERRORS, ascii_spelling)


def _spell_unencodable(stream: TextIO | None) -> str | None:
    """Make ``stream`` spell what it cannot encode; its former ``errors`` (to restore), or ``None``."""
    reconfigure = getattr(stream, "reconfigure", None)
    errors = getattr(stream, "errors", None)
    if reconfigure is None or not isinstance(errors, str):
        return None
    try:
        reconfigure(errors=ENCODE_ERRORS)
    except (OSError, ValueError):
        return None  # closed or failing: the write that follows says so
    return errors


def _restore(stream: TextIO | None, errors: str | None) -> None:
    if errors is not None:
        try:
            stream.reconfigure(errors=errors)  # type: ignore[union-attr]
        except (OSError, ValueError):
            pass


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
    """``sys.stdout`` wrapped for the duration, stdout and stderr spelling what their encoding
    cannot hold; yields the stream it wraps."""
    real, err = sys.stdout, sys.stderr
    restore = [(real, _spell_unencodable(real)), (err, _spell_unencodable(err))]
    sys.stdout = _Guarded(real)  # type: ignore[assignment]
    try:
        yield real
    finally:
        sys.stdout = real
        for stream, errors in restore:
            _restore(stream, errors)


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
