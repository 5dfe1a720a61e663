"""Mutants judged equivalent: no valid input makes the product give another verdict (any row's
outcome, or an exit code).

Each entry is a mutant id (``audit.mutants.make_id``: file, line, operator, patch hash) and one
line saying why, judged by reading the code (docs/AUDIT.md: how).  The kill ratio excludes them.
An entry that the current source no longer generates is reported as stale; an entry that the
parts *do* detect is reported as a wrong judgement — neither is silently ignored."""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {
    "spec/ordering.py:66:curated:stable-argsort-replaced-by-an-unstable-one:f41a2b7b":
        "keys of distinct fragments are distinct (the id tie-break) and a set holds each id once, so no "
        "two items a render sorts ever tie: any correct sort, stable or not, gives the same order",
}

# Survivors that are NOT equivalent: gaps left open, each with why (docs/RESULTS.md lists them).
GAPS: dict[str, str] = {}
