"""Range checks for the numbers a library call takes, raising ``ArgumentError`` under the library
argument's name (the command line re-spells it as the flag the user typed).

Why every count has an upper bound and every float must be finite: a value the parser accepts
reaches numpy, torch or the operating system, which overflow (a seed of 2**64), allocate without
end (a bootstrap of 10**14 resamples) or loop for ever (NaN compares false with every bound);
each command refuses such values before any work starts.  Seeds are 0..2**32 - 1 everywhere:
every random generator the project seeds (``random``, numpy, torch) takes them, also after the
small arithmetic some derive per-agent seeds with."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from spec.errors import ArgumentError

SEED_MAX = 2**32 - 1


def integer(argument: str, value: Any, lo: int, hi: int, what: str = "") -> int:
    """``value`` if it is an integer in ``lo..hi`` (bool is not an integer here)."""
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ArgumentError(argument, value, f"must be an integer in {lo}..{hi:,}{what}")
    return value


def number(argument: str, value: Any, lo: float, hi: float, what: str = "") -> float:
    """``value`` if it is a finite number in ``[lo, hi]`` (NaN and the infinities are refused)."""
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or not lo <= value <= hi):
        raise ArgumentError(argument, value, f"must be a finite number in [{lo:g}, {hi:g}]{what}")
    return float(value)


def seed(argument: str, value: Any) -> int:
    """A seed: an integer in ``0..SEED_MAX``."""
    return integer(argument, value, 0, SEED_MAX)


def integers(argument: str, values: Sequence[Any], lo: int, hi: int, what: str = "") -> tuple[int, ...]:
    """Every element of ``values`` an integer in ``lo..hi`` (the message names the whole list)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi for v in values):
        raise ArgumentError(argument, tuple(values), f"must be integers in {lo}..{hi:,}{what}")
    return tuple(values)


def within_positions(limit: int, terms: Sequence[tuple[str | None, Any, int]], what: str) -> None:
    """Refuse a position budget that runs past the model's ``limit`` positions.  ``terms`` are
    (library argument or ``None`` for what no argument sets, the value to show, positions it
    takes; where no argument sets a term, the value is its label, such as "prompt"); the error
    names the argument whose term is largest, since that is what to lower."""
    total = sum(n for _, _, n in terms)
    if total <= limit:
        return
    named = [t for t in terms if t[0] is not None]
    argument, value, _ = max(named, key=lambda t: t[2])
    parts = " + ".join(f"{n:,} ({arg.replace('_', ' ') if arg else label})" for arg, label, n in terms if n)
    raise ArgumentError(argument or "", value, f"{what} needs positions up to {total:,} = {parts}, past the "
                                               f"model's {limit:,} positions")
