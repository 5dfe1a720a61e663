"""Exhaustive and randomized checking of the claims on a concrete render backend (C1–C4, C6, C7).

``modelcheck.run(backend, ...)`` is the entry point; the backend under check is passed in (the
CLI passes realstate's), so this package imports only ``spec``, the stdlib and, for the
randomized mode only, Hypothesis."""

from modelcheck.runner import run

__all__ = ["run"]
