"""Every error the project raises on purpose, in one hierarchy.

``InputError`` and its kinds are what the tool refuses (exit 2): each names what it is about — the
library argument (``ArgumentError``, which the command line re-spells as the flag the user typed),
the file and field (``FormatError``) or the command line (``UsageError``).  ``InstrumentError`` is
the other kind: an instrument (a control, a canary, a judge) that could not have seen a failure, so
the run that relied on it proves nothing (exit 1).  Anything else escaping is a bug."""

from __future__ import annotations

from typing import Any

MAX_PROBLEM_CHARS = 400  # of a problem text taken from hostile input: it must not flood a terminal


class CanonmergeError(Exception):
    """The root: every error below is raised on purpose, with a message a user can act on."""


class InputError(CanonmergeError, ValueError):
    """Input that the tool refuses: a bad flag value, a malformed file, an unknown name (exit 2)."""


class ArgumentError(InputError):
    """A bad value for one named argument of a library call (``agents=7 must be 1..6``)."""

    def __init__(self, argument: str, value: Any, problem: str) -> None:
        self.argument, self.value, self.problem = argument, value, problem
        super().__init__(f"{argument}={value!r} {problem}")

    def as_flag(self, flag: str) -> str:
        """The same message with the command line's spelling: ``--agents 7: must be 1..6``."""
        value = ",".join(map(str, self.value)) if isinstance(self.value, tuple) else self.value
        return f"{flag} {value}: {self.problem}"


class FormatError(InputError):
    """A file, store entry or document that is refused; the message names the source and field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        if len(problem) > MAX_PROBLEM_CHARS:
            problem = problem[:MAX_PROBLEM_CHARS] + "..."
        self.source, self.field, self.problem = source, field, problem
        super().__init__(f"{source}: {field}: {problem}")


class UsageError(InputError):
    """A command line the parser refused; carries the usage text of the (sub)command."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class InstrumentError(CanonmergeError):
    """An instrument that is not what it claims to be (a control equal to what it controls, a canary
    that was not seen): whatever was measured with it is meaningless (exit 1)."""

    def __init__(self, instrument: str, problem: str) -> None:
        self.instrument, self.problem = instrument, problem
        super().__init__(f"{instrument}: {problem}")
