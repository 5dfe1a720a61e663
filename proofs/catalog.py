"""Every row the runner knows (Z3 obligations, code checks, Coq theorems), in claim order, and
selection by name or claim id."""

from __future__ import annotations

from proofs import bag, fragment_set, links, mechanised, ordering, render
from proofs.obligation import Result, Row
from spec import CLAIMS, Check, Expect, InputError, register

OBLIGATIONS: list[Row] = sorted(
    [*fragment_set.OBLIGATIONS, *ordering.OBLIGATIONS, *render.OBLIGATIONS, *bag.OBLIGATIONS, *links.CHECKS,
     *mechanised.THEOREMS],
    key=lambda ob: list(CLAIMS).index(ob.claim),
)

_duplicates = {ob.name for ob in OBLIGATIONS if [o.name for o in OBLIGATIONS].count(ob.name) > 1}
if _duplicates:
    raise ValueError(f"obligation names must be unique: {sorted(_duplicates)}")


def check_of(ob: Row) -> Check:
    """The row as a check of part "proofs": a law expected proved is ALWAYS (it must hold for
    every model or case), a negative fact expected refuted is REFUTED."""
    expect = Expect.ALWAYS if ob.expected is Result.PROVED else Expect.REFUTED
    return Check(ob.claim, "proofs", ob.name, expect, ob.statement)


CHECKS = [register(c.claim, c.part, c.name, c.expect, c.statement) for c in map(check_of, OBLIGATIONS)]


def names() -> list[str]:
    return [ob.name for ob in OBLIGATIONS]


def select(only: str | None, obligations: list[Row] | None = None) -> list[Row]:
    """All rows; or those named by ``only``: a name, a claim id (``C5``: all of that claim), or
    several of either separated by commas.  Catalog order is kept."""
    pool = OBLIGATIONS if obligations is None else obligations
    if only is None:
        return list(pool)
    wanted = [w.strip() for w in only.split(",")]
    unknown = [w for w in wanted if not any(w in (ob.name, ob.claim) for ob in pool)]
    if unknown or not wanted:
        known = ", ".join(ob.name for ob in pool)
        claims = ", ".join(sorted({ob.claim for ob in pool}))
        raise InputError(f"unknown obligation {', '.join(map(repr, unknown)) or repr(only)}; known obligations: "
                         f"{known}; or a claim id: {claims}")
    return [ob for ob in pool if ob.name in wanted or ob.claim in wanted]
