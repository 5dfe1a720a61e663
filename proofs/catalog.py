"""Every obligation the runner knows, in claim order, and selection by name or claim id."""

from __future__ import annotations

from proofs import bag, fragment_set, ordering, render
from proofs.obligation import Obligation
from spec import CLAIMS, InputError

OBLIGATIONS: list[Obligation] = sorted(
    [*fragment_set.OBLIGATIONS, *ordering.OBLIGATIONS, *render.OBLIGATIONS, *bag.OBLIGATIONS],
    key=lambda ob: list(CLAIMS).index(ob.claim),
)

_duplicates = {ob.name for ob in OBLIGATIONS if [o.name for o in OBLIGATIONS].count(ob.name) > 1}
if _duplicates:
    raise ValueError(f"obligation names must be unique: {sorted(_duplicates)}")


def names() -> list[str]:
    return [ob.name for ob in OBLIGATIONS]


def select(only: str | None, obligations: list[Obligation] | None = None) -> list[Obligation]:
    """All obligations, one by name, or every obligation of a claim id (``C5``)."""
    pool = OBLIGATIONS if obligations is None else obligations
    if only is None:
        return list(pool)
    chosen = [ob for ob in pool if only in (ob.name, ob.claim)]
    if not chosen:
        known = ", ".join(ob.name for ob in pool)
        claims = ", ".join(sorted({ob.claim for ob in pool}))
        raise InputError(f"unknown obligation {only!r}; known obligations: {known}; or a claim id: {claims}")
    return chosen
