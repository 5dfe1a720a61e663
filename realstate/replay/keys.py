"""The replay's checks of the order key on real fragments (C5): exact against the Fraction
reference, and a tie on m broken by the content id."""

from __future__ import annotations

import itertools
import time

from realstate.kernel.order_value import reference_order_value
from realstate.replay import properties as P
from realstate.replay.context import Replay, f64_bits, tied_twin
from spec import (
    ClaimResult,
    order_key,
)


def c5_key_exact(r: Replay) -> ClaimResult:
    """The engine's key equals the key from the exact Fraction reference, for every fragment and
    for a tied twin."""
    started = time.perf_counter()
    twin = tied_twin(r.fragments[0])
    frags = [*r.fragments, *([twin] if twin is not None else [])]
    mismatches = [f.content_id.hex()[:12] for f in frags
                  if r.engine.key(f) != order_key(reference_order_value(f.middle_layer_keys()), f.content_id)]
    return P.KEY_EXACT.tally(len(frags), len(mismatches), "fragments", time.perf_counter() - started,
                             figure="all keys bit-exact" if not mismatches else f"mismatch: {mismatches}",
                             order_values=[{"id": f.content_id.hex(), "m": f.order_value.hex()}
                                           for f in r.fragments])


def c5_ties(r: Replay) -> ClaimResult:
    """A real fragment and its tied twin (``tied_twin``) tie on m; the key must still order them.

    The sort is driven directly with every input order (a set's own iteration order must not
    be what makes the render deterministic), and the render is checked over every arrival order."""
    started = time.perf_counter()
    base = r.fragments[0]
    twin = tied_twin(base)
    if twin is None:  # one head and one token, or identical rows: no twin to tie with
        return P.TIES.tally(0, 0, "tied pairs", time.perf_counter() - started,
                            figure="no fragment with the same m and other bytes can be built from the first agent's")
    tie = f64_bits(twin.order_value) == f64_bits(base.order_value)
    distinct = twin.content_id != base.content_id
    members = [base, twin, *r.fragments[1:3]]
    perms = list(itertools.permutations(members))
    orders = {tuple(f.content_id for f in r.engine.order(list(p))) for p in perms}
    digests = {r.digest(r.state_of(p)) for p in perms}
    ok = tie and distinct and len(orders) == 1 and len(digests) == 1
    figure = (f"m equal: {tie}, ids differ: {distinct}; over {len(perms)} input orders: "
              f"{len(orders)} sort result(s), {len(digests)} render digest(s)")
    return P.TIES.holds_if(ok, figure, time.perf_counter() - started, m_equal=tie, ids_differ=distinct,
                           sort_results=len(orders), digests=len(digests))
