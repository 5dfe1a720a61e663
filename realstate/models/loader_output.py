"""What transformers, torch, accelerate and gguf print while a checkpoint loads, captured and kept
as escaped, summarised lines instead of reaching the terminal: a tensor name in a hostile
checkpoint can hold ``ESC [ 2 J``, and transformers' load report prints tensor names verbatim.

Inside ``captured_output()``: ``sys.stdout`` and ``sys.stderr`` written from the loading thread
(``print``, tqdm bars, Python's last-resort log handler) go to a buffer — other threads (a live
progress display) still reach the real streams; every plain ``logging.StreamHandler`` and every
handler writing to a standard stream (transformers' own handler holds the stream it was created
with) writes to the buffer; warnings are recorded, not shown; ``sys.stdin`` reads as empty, so
nothing can wait for an answer; transformers' progress bars are off (canonmerge reports its own
progress).  Native code writing straight to file descriptors 1 and 2 is not captured (torch,
transformers, safetensors and gguf write through Python)."""

from __future__ import annotations

import io
import logging
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

MAX_LINES = 10  # distinct lines kept in the summary
MAX_CHARS = 300  # of one line


@dataclass
class Captured:
    text: list[str] = field(default_factory=list)

    def summary(self) -> tuple[str, ...]:
        """Distinct lines (a progress bar's last state only), escaped, counted, at most ``MAX_LINES``."""
        lines = [segments[-1].strip() for raw in "".join(self.text).split("\n")
                 if (segments := [s for s in raw.split("\r") if s.strip()])]
        counts = Counter(lines)
        distinct = list(dict.fromkeys(lines))
        shown = [escaped(line)[:MAX_CHARS] + (f" (x{counts[line]})" if counts[line] > 1 else "")
                 for line in distinct[:MAX_LINES]]
        if len(distinct) > MAX_LINES:
            shown.append(f"... and {len(distinct) - MAX_LINES} more distinct lines")
        return tuple(shown)


def escaped(line: str) -> str:
    """``line`` with every non-printable character written as its Python escape (``\\x1b``)."""
    return line if line.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)


class _ThreadStream(io.TextIOBase):
    """Writes from ``owner`` go to ``captured``; writes from other threads go to ``real``."""

    def __init__(self, captured: Captured, real: TextIO, owner: int) -> None:
        self.captured, self.real, self.owner = captured, real, owner

    def write(self, text: str) -> int:
        if threading.get_ident() == self.owner:
            self.captured.text.append(text)
        else:
            self.real.write(text)
        return len(text)

    def flush(self) -> None:
        if threading.get_ident() != self.owner:
            self.real.flush()

    def isatty(self) -> bool:
        return False


def _stream_handlers(streams: tuple[Any, ...]) -> list[logging.StreamHandler[Any]]:
    loggers = [logging.getLogger()] + [lg for lg in list(logging.Logger.manager.loggerDict.values())
                                       if isinstance(lg, logging.Logger)]
    return [h for lg in loggers for h in lg.handlers if isinstance(h, logging.StreamHandler)
            and (type(h) is logging.StreamHandler or any(h.stream is s for s in streams))]


@contextmanager
def captured_output() -> Iterator[Captured]:
    """Capture third-party output of the block (module doc); everything is restored on exit."""
    from transformers.utils import logging as transformers_logging

    captured = Captured()
    real_out, real_err, real_in = sys.stdout, sys.stderr, sys.stdin
    for stream in (real_out, real_err):
        stream.flush()
    owner = threading.get_ident()
    out, err = _ThreadStream(captured, real_out, owner), _ThreadStream(captured, real_err, owner)
    handlers = [(h, h.stream) for h in _stream_handlers((real_out, real_err, sys.__stdout__, sys.__stderr__))]
    bars = transformers_logging.is_progress_bar_enabled()
    try:
        for handler, _ in handlers:
            handler.setStream(err)  # type: ignore[arg-type]
        sys.stdout, sys.stderr, sys.stdin = out, err, io.StringIO("")  # type: ignore[assignment]
        transformers_logging.disable_progress_bar()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield captured
            finally:
                captured.text += [f"{w.category.__name__}: {w.message}\n" for w in caught]
    finally:
        sys.stdout, sys.stderr, sys.stdin = real_out, real_err, real_in
        if bars:
            transformers_logging.enable_progress_bar()
        for handler, stream in handlers:
            handler.setStream(stream)
