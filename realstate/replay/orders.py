"""The replay's checks on arrival orders: permutations, merge trees and re-deliveries of the
agents' fragments (C2, C3), BagMerge's order dependence (C4) and the pair (C6).

Each is modelcheck's own search (``realstate.replay.held_universe``) on the universe of the first
n fragments, for every n; this module turns its counts into the replay's per-arity rows."""

from __future__ import annotations

import itertools
import math
import time

from modelcheck import properties as MC
from modelcheck.checks import INTERLEAVED, Row
from realstate.replay import properties as P
from realstate.replay.context import Replay
from realstate.replay.held_universe import search
from spec import (
    ClaimResult,
)


ONE_ORDER = "one fragment has one arrival order (needs at least 2 agents)"


def c3_permutations(r: Replay) -> ClaimResult:
    """Every delivery order of the first n fragments, for every n, renders one digest (not
    applicable to one fragment: a single order cannot disagree with itself)."""
    started = time.perf_counter()
    violated = 0
    for n in r.arities:
        uc = search(r, n, MC.PERMUTATIONS)
        found = uc.run_c3(n)
        row = r.row(n)
        row.canonical_digests |= uc.digests.get(MC.PERMUTATIONS, set())
        row.permutations = found.permutations
        violated += found.violations > 0
        r.progress("realstate: permutations", n, len(r.fragments))
    rows = [r.rows[n] for n in r.arities]
    total = sum(x.permutations for x in rows)
    if len(r.fragments) < 2:
        return P.PERMUTATIONS.not_applicable(ONE_ORDER, time.perf_counter() - started, permutations=total)
    bad = sum(len(x.canonical_digests) - 1 for x in rows)
    figure = (f"1 digest for each n <= {len(rows)} ({total} permutations)" if not bad
              else f"digests per n: {[len(x.canonical_digests) for x in rows]}")
    return P.PERMUTATIONS.tally(len(rows), violated, "arities", time.perf_counter() - started, figure=figure,
                                permutations=total,
                                per_arity=[{"n": x.n, "canonical_digests": sorted(x.canonical_digests)}
                                           for x in rows])


def c3_trees(r: Replay) -> ClaimResult:
    """Every merge tree over every leaf order renders the digest of the index-order fold."""
    started = time.perf_counter()
    for n in r.arities:
        uc = search(r, n, MC.MERGE_TREES)
        found = uc.run_c3(n)
        row = r.row(n)
        row.tree_digests |= uc.digests.get(MC.MERGE_TREES, set())
        row.tree_violations += found.violations
        row.trees += found.trees
        r.progress("realstate: merge trees", n, len(r.fragments))
    rows = [r.rows[n] for n in r.arities]
    if len(r.fragments) < 2:
        return P.TREES.not_applicable("one fragment has one merge tree (needs at least 2 agents)",
                                      time.perf_counter() - started)
    return P.TREES.tally(sum(x.trees for x in rows), sum(x.tree_violations for x in rows), "trees",
                         time.perf_counter() - started,
                         figure=f"{sum(x.trees for x in rows)} trees x leaf orders, digests per n: "
                                f"{[len(x.tree_digests) for x in rows]}")


def c2_redelivery(r: Replay) -> ClaimResult:
    """One re-delivered copy, in every interleaving, leaves the canonical render unchanged."""
    started = time.perf_counter()
    for n in r.arities:
        found = search(r, n, MC.REDELIVERIES).run_c3(n)
        row = r.row(n)
        row.redeliveries += found.redeliveries
        row.redelivery_canonical_changed += found.violations
        r.progress("realstate: re-deliveries", n, len(r.fragments))
    rows = [r.rows[n] for n in r.arities]
    checked, changed = sum(x.redeliveries for x in rows), sum(x.redelivery_canonical_changed for x in rows)
    # a re-delivered copy is the same fragment to a library user too (==, hash); distinct ones differ
    copies = [(f, f.copy()) for f in r.fragments]
    unequal_copies = sum(c != f or hash(c) != hash(f) for f, c in copies)
    equal_distinct = sum(f == g for f, g in itertools.combinations(r.fragments, 2))
    return P.REDELIVERY.tally(checked + len(r.fragments), changed + unequal_copies + equal_distinct,
                              "re-deliveries and copies", time.perf_counter() - started,
                              figure=f"{changed} of {checked} re-deliveries changed it; "
                                     f"{unequal_copies} copies unequal, {equal_distinct} distinct pairs equal")


def c4_bag_order(r: Replay) -> ClaimResult:
    """BagMerge in every delivery order: some arity must give more than one digest."""
    started = time.perf_counter()
    witnesses = 0
    for n in r.arities:
        uc = search(r, n, MC.BAG_ORDER)
        found = Row(n)
        uc.c4(n, found)
        r.row(n).bag_digests = found.bag_digests
        witnesses += uc.tallies[MC.BAG_ORDER].found
    rows = [r.rows[n] for n in r.arities if n >= 2]
    per_n = [r.rows[n].bag_digests for n in r.arities]
    if not rows:
        return P.BAG_ORDER.not_applicable(f"BagMerge of {ONE_ORDER}", time.perf_counter() - started,
                                          bag_digests_per_n=per_n)
    return P.BAG_ORDER.tally(len(rows), witnesses, "arities >= 2", time.perf_counter() - started,
                             figure=f"BagMerge digests per n: {per_n} (n! = "
                                    f"{[math.factorial(n) for n in r.arities]})",
                             bag_digests_per_n=per_n)


def c4_bag_redelivery(r: Replay) -> ClaimResult:
    """BagMerge of every schedule with one re-delivered copy vs. BagMerge of the first arrivals."""
    started = time.perf_counter()
    for n in r.arities:
        uc = search(r, n, MC.BAG_REDELIVERY, bag_copies=INTERLEAVED)
        uc.c4(n, Row(n))
        tally, row = uc.tallies[MC.BAG_REDELIVERY], r.row(n)
        row.bag_redeliveries += tally.checked
        row.redelivery_bag_changed += tally.found
    rows = [r.rows[n] for n in r.arities]
    checked, changed = sum(x.bag_redeliveries for x in rows), sum(x.redelivery_bag_changed for x in rows)
    return P.BAG_REDELIVERY.tally(checked, changed, "re-deliveries", time.perf_counter() - started,
                                  figure=f"re-delivery changed BagMerge in {changed} of {checked}")


def c6_pair(r: Replay) -> ClaimResult:
    """The canonical render of the first two fragments equals BagMerge in one of its orders."""
    started = time.perf_counter()
    if len(r.fragments) < 2:
        return P.PAIR.not_applicable("the pair needs two agents")
    uc = search(r, 2, MC.PAIRS)
    uc.c6()
    tally = uc.tallies[MC.PAIRS]
    match = tally.checked == 1 and not tally.found
    r.row(2).c6_match = match
    return P.PAIR.tally(tally.checked, tally.found, "pairs", time.perf_counter() - started,
                        figure="equal to one of the 2 orders" if match else "equal to neither order")
