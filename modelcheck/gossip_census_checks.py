"""The gossip explorer's counts held to the census (``gossip_census``), and the census held to what
is known apart from it, in every exploration.

- **The run's own comparison** (``census_check``): an exhaustive search that found nothing has the
  census's states, transitions and depth at its own configuration, where the census takes it (63
  bits; with symmetry at most five replicas); a copy one state off must disagree.  The explorer
  decides apart from this function when the comparison is due, so one skipped is seen.
- **The census's control** (``census_control``): plain and folded, the reference enumeration's counts
  on the moves check's configurations and on 3 replicas x 1 fragment with three in flight, field by
  field (the path past the relabelling table); with symmetry, the cross-check's brute-force orbits,
  with and without the table."""

from __future__ import annotations

from typing import Any

from modelcheck import gossip_reference
from modelcheck.gossip_census import census
from modelcheck.gossip_controls import CROSS_CHECK
from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_search import GossipResult
from spec import ArgumentError

CENSUS_FIELDS = ("states", "transitions", "depth")
CENSUS_DEEP = (3, 1, 3)  # replicas, fragments, in-flight: the census control's three-deep configuration


def census_check(result: GossipResult, config: GossipConfig) -> dict:
    """The search's counts against ``gossip_census`` on the run's own configuration: whenever the
    search was exhaustive and found no violation (a search stopped early counts less), and the
    configuration packs into the census's 63 bits.  They must be equal.  The census counts the
    abstract model, so a difference is the explorer's moves, keys or counting, or a backend whose
    states are not the sets they hold; either way the run is not a pass.  The comparison is shown
    to see in the same run: a copy of the search's counts with one state more must not agree."""
    if result.violation is not None or not result.exhaustive:
        return {"compared": False, "why": "the search " + ("found a violation" if result.violation else "hit its bound")}
    try:
        counted = census(config.replicas, config.fragments, config.in_flight, config.homes,
                         symmetry=config.symmetry, fold_drops=config.fold_drops)
    except ArgumentError as e:
        return {"compared": False, "why": str(e)}
    mine = {f: getattr(result, f) for f in CENSUS_FIELDS}
    theirs = {f: getattr(counted, f) for f in CENSUS_FIELDS}
    return {"compared": True, "agree": counts_agree(mine, theirs), "search": mine, "census": theirs,
            "control_seen": not counts_agree({**mine, "states": mine["states"] + 1}, theirs),
            "seconds": counted.seconds}


def census_control(moves: dict[str, Any], checks: dict[bool, dict[str, Any]]) -> dict[str, Any]:
    """The census held, in every run, to what is known apart from it and from the search under
    check: plain and folded, the independent enumeration's counts on each moves-check
    configuration (``moves_check``'s reference figures); with symmetry, plain and folded, the
    orbits counted by brute force in the cross-check.  A census that miscounts cannot vouch for
    the run's own counts, and one that is never run on a folding is not known to count it."""
    wrong: list[str] = []
    compared = 0
    for entry in moves.get("configurations", []):
        c = census(entry["replicas"], entry["fragments"], entry["in_flight"],
                   tuple(entry["homes"]) if entry["homes"] else None, symmetry=False, fold_drops=entry["fold_drops"])
        got = {f: getattr(c, f) for f in CENSUS_FIELDS}
        want = {f: entry["reference"][f] for f in CENSUS_FIELDS}
        compared += 1
        where = f"{entry['replicas']} x {entry['fragments']} <= {entry['in_flight']}{' folded' if entry['fold_drops'] else ''}"
        if not counts_agree(got, want):
            wrong.append(f"{where}: census {got}, enumeration {want}")
        if counts_agree({**got, "states": got["states"] + 1}, want):  # the comparison shown to see
            wrong.append(f"{where}: a census count one state more was not found to differ")
    # messages three deep (pools sorted over three slots), relabelled field by field (the path of
    # configurations too large for the relabelling table), both foldings: apart from the moves check
    for fold in (False, True):
        ref = gossip_reference.count(*CENSUS_DEEP, None, fold_drops=fold)
        c = census(*CENSUS_DEEP, symmetry=False, fold_drops=fold, tables=False)
        got, want = {f: getattr(c, f) for f in CENSUS_FIELDS}, {f: getattr(ref, f) for f in CENSUS_FIELDS}
        compared += 1
        if not counts_agree(got, want):
            wrong.append(f"{' x '.join(map(str, CENSUS_DEEP))} field by field{' folded' if fold else ''}: "
                         f"census {got}, enumeration {want}")
    for fold, checked in checks.items():
        orbits = checked.get("orbits_by_brute_force")
        if orbits is None:
            continue
        for tables in (True, False):
            c = census(CROSS_CHECK.replicas, CROSS_CHECK.fragments, CROSS_CHECK.in_flight, CROSS_CHECK.homes,
                       symmetry=True, fold_drops=fold, tables=tables)
            compared += 1
            if c.states != orbits:
                wrong.append(f"orbits{' folded' if fold else ''}{'' if tables else ' field by field'}: "
                             f"census {c.states:,}, brute force {orbits:,}")
    folds = {e["fold_drops"] for e in moves.get("configurations", [])}
    if folds != {False, True}:
        wrong.append("not compared on both foldings")
    return {"agree": not wrong, "compared": compared, "why": "; ".join(wrong)}


def counts_agree(search: dict, census_counts: dict) -> bool:
    return all(search[f] == census_counts[f] for f in CENSUS_FIELDS)
