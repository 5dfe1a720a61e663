"""The gossip explorer (claim C7): the search over the gossip model (``gossip_search``), with the
controls that prove, in the same run, that it could see (``gossip_controls``).

Every exploration runs its canary (an order-by-arrival render the explorer must report, through
the same search, with a copy of its trace that must not replay), its moves check (the search's
state and transition counts on small configurations against an enumeration of the model written
apart from it), counts every comparison due that it could not make (a state without its render
digest; a control feeds the verdict such comparisons and requires them counted), checks the
symmetry key on messages the replicas' signatures cannot tell apart, and cross-checks both
reductions (symmetry alone, and with drop folding) against the plain search on a small
configuration, whichever the run uses; every merge the reduction makes during the search is
proved to be a replica relabelling.  A control that fails names its instrument in
``GossipResult.blind``, and the run's verdict is then unknown, never a pass."""

from __future__ import annotations

import time
from pathlib import Path

from modelcheck.backend import Backend, Universe
from modelcheck.gossip_census_checks import census_check, census_control
from modelcheck.gossip_controls import (Searcher, canary, cross_check, in_process, key_control, moves_check,
                                        moves_differences, unrendered_control)
from modelcheck.gossip_census import fits
from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_search import CHECK_BATCH, GossipResult, search
from modelcheck.gossip_sharded import MAX_WORKERS, Recipe, sharded_search
from spec import ArgumentError, Progress, no_progress
from spec.arguments import integer

__all__ = ["CHECK_BATCH", "GossipConfig", "GossipResult", "explore"]


def explore(backend: Backend, universe: Universe, config: GossipConfig = GossipConfig(), *,
            backend_name: str | None = None, mutant: str | None = None, fair_exchange: bool = True,
            progress: Progress = no_progress, shards: int = 1, recipe: Recipe | None = None,
            checkpoint: Path | None = None, resume: Path | None = None, engine: str = "local",
            ray_address: str | None = None) -> GossipResult:
    """Breadth-first exploration, stopping at the first (shallowest) violation, then the controls;
    their findings are in ``details`` and ``blind``.  The search is ``gossip_search.search`` in
    this process, or with ``shards`` > 1 ``gossip_sharded.sharded_search`` over that many worker
    processes, each building the backend from ``recipe`` (the canary then goes through it too).
    ``checkpoint`` / ``resume``: the one-process search's checkpoint directory (``gossip_checkpoint``).
    ``engine`` "ray": the sharded search's workers are Ray actors (``gossip_ray``), on a local Ray
    or the cluster at ``ray_address``."""
    integer("shards", shards, 1, MAX_WORKERS)
    if shards > 1 and (checkpoint is not None or resume is not None):
        raise ArgumentError("checkpoint" if checkpoint is not None else "resume", str(checkpoint or resume),
                            "is for the one-process gossip search (--gossip-workers 1)")
    if shards == 1:
        result = search(backend, universe, config, backend_name=backend_name, mutant=mutant,
                        fair_exchange=fair_exchange, progress=progress, checkpoint=checkpoint, resume=resume)
        searcher: Searcher = in_process
    else:
        if recipe is None:
            raise ValueError("a sharded gossip search builds the backend in its workers: give a BackendRecipe")
        pool_of = None
        if engine == "ray":
            from modelcheck.gossip_ray import RayWorkers

            def pool_of(specs: list) -> RayWorkers:
                return RayWorkers(specs, ray_address)
        result = sharded_search(recipe, universe, config, shards, backend_name=backend_name, mutant=mutant,
                                fair_exchange=fair_exchange, progress=progress, pool_of=pool_of)

        def searcher(bad: Backend, u: Universe, c: GossipConfig, fair: bool) -> GossipResult:
            return sharded_search(recipe, u, c, shards, arrival_order=True, fair_exchange=fair, pool_of=pool_of)
    started = time.perf_counter()
    seen = canary(backend, universe, config.symmetry, config.fold_drops, searcher)
    result.details["canary"] = seen
    if not seen["seen"]:
        result.blind.append("gossip verdict: its canary (an order-by-arrival render) was not reported "
                            + (seen.get("why") or "as the shallowest violation of each check"))
    copy = seen.get("refused_copy")
    if copy is None:
        result.blind.append("gossip replay: no same-set canary trace to refuse a copy of")
    else:
        if copy["replays"]:
            result.blind.append("gossip replay: a copy of its canary's same-set trace one move short (no shallower "
                                "state violates) replayed as a violation: the judgement passes traces it does not replay")
        if copy["ops"] != copy["expected_ops"]:
            result.blind.append(f"gossip replay: the copy of its canary's same-set trace refused was {copy['ops']} "
                                f"moves, not {copy['expected_ops']} (one short)")
    if result.violation is None:  # every state reached was checked once: the figure is held to that count
        due = result.states if fair_exchange else 0
        if result.fair_exchanges != due:
            result.blind.append(f"gossip fair exchange: {result.fair_exchanges:,} exchange(s) counted, {due:,} due "
                                f"(one per state reached{'' if fair_exchange else '; the check is off'})")
    if result.unrendered_comparisons:
        result.blind.append(f"gossip verdict: {result.unrendered_comparisons:,} comparison(s) due with a state "
                            "that has no render digest (not made)")
    moves_started = time.perf_counter()
    moves = moves_check(universe, fair_exchange)
    moves["seconds"] = round(time.perf_counter() - moves_started, 3)
    result.details["moves_check"] = moves
    unseen = [f"{b['bound']} {b['value']}" for b in moves.get("bounded", []) if not b.get("control_seen", True)]
    if unseen:
        result.blind.append("gossip moves: the bounded check's comparison did not see a copy with one state more or "
                            "called exhaustive (" + ", ".join(unseen) + ")")
    if not moves["agree"]:
        result.blind.append("gossip moves: the search's counts differ from the independent enumeration of the "
                            f"model ({moves_differences(moves)})")
    if config.symmetry and result.unproved_merges:
        result.blind.append(f"gossip symmetry reduction: {result.unproved_merges:,} merge(s) of states "
                            "that are not replica relabellings of each other")
        moves, representative = result.unproved_example or ([], [])
        result.details["unproved_merge"] = {"moves": moves, "representative_moves": representative}
    result.details["unrendered_control"] = cases = unrendered_control(universe)
    for case in cases:
        if case["counted"] != case["due"]:
            result.blind.append(f"gossip verdict: comparisons fed without their renders ({case['case']}) were not all "
                                f"counted: {case['counted']} counted of {case['due']} due")
        if case["violation"] is not None:
            result.blind.append(f"gossip verdict: a comparison fed without its renders ({case['case']}) was reported "
                                f"as a {case['violation'][1]} violation")
    result.details["key_control"] = keyed = key_control()
    if not keyed["cycles_told_apart"]:
        result.blind.append("gossip symmetry reduction: its orbit key does not tell a four-cycle of messages from two "
                            "two-cycles (every replica's signature the same)")
    if not keyed["nodes_as_claimed"]:
        result.blind.append("gossip symmetry reduction: the orbit key's control nodes are not what they claim (every "
                            "replica sending one message and sent one; a relabelling; two two-cycles)")
    if not keyed["relabelling_merged"]:
        result.blind.append("gossip symmetry reduction: its orbit key tells a four-cycle of messages from its own "
                            "relabelling")
    # both reductions are cross-checked in every run, whichever the run uses (the report prints
    # the run's own); each is judged
    checks = {fold: cross_check(backend, universe, fair_exchange, fold) for fold in (False, True)}
    result.details["reduction_check"] = checks[config.fold_drops]
    result.details["reduction_checks"] = {_REDUCTIONS[fold]: checked for fold, checked in checks.items()}
    for fold, checked in checks.items():
        if not checked["agree"]:
            result.blind.append(f"gossip reductions ({_REDUCTIONS[fold]}): the reduced and plain searches disagree on "
                                f"{CROSS_CHECK_TEXT} ({checked.get('why') or _differences(checked)})")
        if checked.get("controls_unseen"):
            result.blind.append(f"gossip reductions ({_REDUCTIONS[fold]}): the comparison did not see a copy with one "
                                "state more in the " + " and ".join(checked["controls_unseen"]) + " search")
    result.details["census"] = counted = census_check(result, config)
    result.details["census_control"] = against = census_control(result.details["moves_check"], checks)
    if not against["agree"]:
        result.blind.append("gossip census: its counts differ from the independent enumeration's on the moves "
                            f"check's and the cross-check's configurations ({against['why']})")
    # due whenever the search was exhaustive, found nothing and the configuration packs (decided here,
    # apart from census_check): a comparison skipped then is a control that did not run
    due = result.violation is None and result.exhaustive and fits(config.replicas, config.fragments, config.in_flight,
                                                                  config.fold_drops, config.symmetry)
    if due and not counted["compared"]:
        result.blind.append("gossip census: the search was exhaustive and its configuration packs, but its counts "
                            f"were not compared with the census ({counted.get('why', 'no reason given')})")
    if counted["compared"] and not counted["agree"]:
        result.blind.append("gossip census: the search's counts differ from the census of the abstract model "
                            f"(search {counted['search']}, census {counted['census']})")
    if counted["compared"] and not counted["control_seen"]:
        result.blind.append("gossip census: the comparison did not see a copy of the search's counts with one state more")
    result.details["folded_moves"] = result.folded_moves if config.fold_drops else None
    result.details["unfolded_states"] = result.unfolded_states if config.fold_drops else None
    result.details["unfolded_states_exact"] = not config.symmetry if config.fold_drops else None
    result.details["unrendered_comparisons"] = result.unrendered_comparisons
    result.details["proved_merges"] = result.merges - result.unproved_merges if config.symmetry else None
    result.details["controls_seconds"] = round(time.perf_counter() - started, 3)
    return result


CROSS_CHECK_TEXT = "3 replicas × 2 fragments, in-flight ≤ 1"
_REDUCTIONS = {False: "symmetry", True: "symmetry and drop folding"}  # the cross-checks, by folding


def _differences(checked: dict) -> str:
    verdicts = " / ".join(repr(v) for k, v in checked.items() if k.endswith("_verdict"))
    states = ", ".join(f"{k[:-7]} {v:,}" for k, v in checked.items() if k.endswith("_states") and v is not None)
    return f"verdicts {verdicts}; states {states}; orbits by brute force {checked['orbits_by_brute_force']}"
