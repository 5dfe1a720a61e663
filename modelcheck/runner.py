"""``modelcheck.run``: the selected checks on every selected universe, plus gossip and the
randomized mode, gathered into one ``PartReport`` — one row per registered check
(``modelcheck.properties``) that ran, decided by its expectation (always / sometimes)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck import trace as trace_io
from modelcheck.backend import Backend, Universe
from modelcheck.checks import Row, Tallies, Tally
from modelcheck.executors import InProcess, make_executor
from modelcheck.gossip import GossipConfig, GossipResult, explore
from modelcheck.gossip_sharded import MAX_WORKERS
from modelcheck.instruments import judge
from modelcheck.plan_coverage import judge_plan
from modelcheck.shards import (
    BackendRecipe,
    GossipTask,
    Settings,
    ShardResult,
    ShardTask,
    Task,
    merge,
    plan,
    plan_canaries,
)
from modelcheck.selection_check import judge_selection
from modelcheck.universes import OPT_IN, UNIVERSES, select
from spec import ArgumentError, Check, ClaimResult, Expect, Outcome, PartReport, Progress, Table, no_progress
from spec.arguments import integer
from spec.fragment_set import ITERATION_ORDERS, iteration_order
from spec.store_marker import refuse_inside_store

PART = P.PART
MAX_EXHAUSTIVE_ARITY = 9          # the cap: N = 9 is 535.6M orderings per universe, a cluster's job
                                  # (docs/MODELCHECK.md); only the opt-in 'specials9' reaches it
DEFAULT_ARITY = 5
MAX_REDELIVERIES = 3
DEFAULT_IN_FLIGHT = 2
DEFAULT_MAX_STATES = 200_000
DEFAULT_ITERATION = "arrival"


def _validate(max_arity: int, redeliveries: int, randomized: int, iteration: str) -> None:
    _validate_arity(max_arity)
    integer("redeliveries", redeliveries, 0, MAX_REDELIVERIES)
    integer("randomized", randomized, 0, 100_000, " examples")
    if iteration not in ITERATION_ORDERS:
        raise ArgumentError("iteration", iteration, f"must be one of {', '.join(ITERATION_ORDERS)}")


def _gossip_universe(universes: list[Universe], name: str | None) -> Universe:
    """The universe gossip publishes from: the named one, else 'ties' if selected, else the first."""
    if name is not None:
        return select([name])[0]
    return next((u for u in universes if u.name == "ties"), universes[0])


def _record(traces: list[dict[str, Any]], trace_dir: Path | None, notes: list[str]) -> list[Any]:
    """Save traces under ``trace_dir`` (their paths go in the report), or keep them inline."""
    if trace_dir is None:
        return traces
    paths = []
    for t in traces:
        path = trace_io.save(t, trace_dir)
        notes.append(f"counterexample ({t['claim']}, {t['check']}, universe {t['universe']}): {path} "
                     f"— replay with: canonmerge check --replay {path}")
        paths.append(str(path))
    return paths


def _tally_result(t: Tally, trace_dir: Path | None, notes: list[str]) -> ClaimResult:
    details: dict[str, Any] = dict(t.details)
    if t.traces:
        details["traces"] = _record(t.traces, trace_dir, notes)
    return t.check.tally(t.checked, t.found, t.unit, t.seconds, figure=t.figure(), **details)


def _universe_table(u: Universe, rows: list[Row]) -> Table:
    table = Table(f"modelcheck universe '{u.name}': {u.description}",
                  ["universe", "N", "permutations", "trees", "re-deliveries", "canonical digests",
                   "BagMerge digests", "violations"])
    for r in rows:
        table.rows.append([u.name, str(r.n), f"{r.permutations:,}", f"{r.trees:,}", f"{r.redeliveries:,}",
                           str(r.canonical_digests), str(r.bag_digests) if r.n >= 2 else "-",
                           str(r.violations)])
    return table


def _gossip_results(g: GossipResult, chosen: frozenset[Check], trace_dir: Path | None,
                    notes: list[str]) -> list[ClaimResult]:
    c = g.config
    bound = "" if g.exhaustive else " (bounded)"
    details = {"universe": g.universe, "replicas": c.replicas, "fragments": c.fragments,
               "in_flight": c.in_flight, "states": g.states, "transitions": g.transitions,
               "depth": g.depth, "renders": g.renders, "fair_exchanges": g.fair_exchanges,
               "exhaustive": g.exhaustive, "max_states": c.max_states, "max_depth": c.max_depth,
               "merges": g.merges, **g.details, "blind": g.blind}
    notes += [f"instrument blind: {b}" for b in g.blind] or [_controls_note(g)]
    if not g.exhaustive:
        notes.append(f"gossip exploration hit its bound ({c.max_states:,} states"
                     + (f", depth {c.max_depth}" if c.max_depth is not None else "") + "): not exhaustive")
    results = []
    for kind, check in (("same-set", P.GOSSIP_SAME_SET), ("fair-exchange", P.GOSSIP_FAIR)):
        if check not in chosen:
            continue
        d = dict(details)
        if g.violation is not None and g.kind == kind:
            d["traces"] = _record([g.violation], trace_dir, notes)
            results.append(check.result(Outcome.FAILS, f"violation at depth {g.violation_depth} "
                                        f"({g.states:,} states seen)", g.seconds, **d))
        elif g.blind:
            results.append(check.result(Outcome.UNKNOWN, "not decided: instrument blind (" + "; ".join(g.blind) + ")",
                                        g.seconds, **d))
        elif g.violation is not None:
            results.append(check.result(Outcome.UNKNOWN, "not finished: exploration stopped at a violation",
                                        g.seconds, **d))
        else:
            results.append(check.tally(g.states, 0, "states", g.seconds,
                                       figure=f"0 violations / {g.states:,} states{bound}", **d))
    return results


def _controls_note(g: GossipResult) -> str:
    """What the gossip explorer's controls saw, in one line (gossip_controls)."""
    canary = g.details["canary"]["checks"]
    text = ("gossip canary (order-by-arrival render) reported: "
            + ", ".join(f"{kind} at depth {c['depth']}" for kind, c in canary.items()))
    if g.config.symmetry:
        text += f"; symmetry: {g.details['proved_merges']:,} merges proved replica relabellings"
    if g.config.fold_drops:
        stand = "the full model has" if g.exhaustive else "the states reached stand for"
        text += (f"; drop folding: {g.folded_moves:,} drop moves not taken, {stand} "
                 + ("at most " if g.config.symmetry else "") + f"{g.unfolded_states:,} "
                 + ("orbits" if g.config.symmetry else "states"))
    moves = g.details.get("moves_check")
    if moves is not None and moves.get("configurations"):
        text += ("; moves check: search = independent enumeration on "
                 + ", ".join(f"{e['replicas']} x {e['fragments']} <= {e['in_flight']}"
                             + (" folded" if e["fold_drops"] else "")
                             + f" ({e['search']['states']:,} states, {e['search']['transitions']:,} transitions)"
                             for e in moves["configurations"]))
    sym = g.details.get("reduction_check")
    if sym is not None:
        text += (f"; cross-check ({sym['replicas']} x {sym['fragments']}, in-flight <= {sym['in_flight']}): "
                 f"{sym['reduced_states']:,} reduced states = {sym['orbits_by_brute_force']} orbits of "
                 f"{sym.get('folded_states', sym['plain_states']):,} "
                 + ("folded" if sym["fold_drops"] else "plain") + " states"
                 + (f" ({sym['plain_states']:,} plain = the sum of their splits)" if sym["fold_drops"] else ""))
    counted = g.details.get("census") or {}
    text += ("; census: " + (f"{counted['census']['states']:,} states, {counted['census']['transitions']:,} "
                             "transitions = the search's" if counted.get("compared") else
                             f"not compared ({counted.get('why', 'not run')})"))
    held = g.details.get("census_control")
    if held is not None:
        text += f" (the census = the enumeration or the brute-force orbits on {held['compared']} configurations)"
    return text


def _validate_arity(max_arity: int) -> None:
    integer("max_arity", max_arity, 1, MAX_EXHAUSTIVE_ARITY,
            f" (exhaustive; the cap: N = 10 would be {en.tree_count(10):,} merge trees per universe; for larger N "
            "use randomized, Hypothesis, N up to 64)")


def _validate_reach(max_arity: int, picked: list[Universe]) -> None:
    """Refuse an arity that no selected universe has fragments for: N runs only on universes of
    at least N fragments, so such a run would check nothing at N while seeming to."""
    largest = max(picked, key=lambda u: len(u.fragments))
    if max_arity > len(largest.fragments):
        reach = [u.name for u in (*UNIVERSES.values(), *OPT_IN.values()) if len(u.fragments) >= max_arity]
        raise ArgumentError("max_arity", max_arity,
                            f"no selected universe has {max_arity} fragments (the most: {largest.name}, "
                            f"{len(largest.fragments)}); N = {max_arity} runs on --universe {' / '.join(reach)}")


def run(backend: Backend | None, *, max_arity: int = DEFAULT_ARITY, universes: list[str] | None = None,
        replicas: int = 3, fragments: int = 3, in_flight: int = DEFAULT_IN_FLIGHT,
        randomized: int = 0, redeliveries: int = 1, gossip: bool = True,
        gossip_universe: str | None = None, max_states: int = DEFAULT_MAX_STATES,
        max_depth: int | None = None, trace_dir: Path | None = None,
        checks: Iterable[Check] | None = None, iteration: str = DEFAULT_ITERATION,
        progress: Progress = no_progress, engine: str = "local", workers: int = 1,
        recipe: BackendRecipe | None = None, ray_address: str | None = None,
        symmetry: bool = True, fail_fast: bool = False, fold_drops: bool = False,
        gossip_workers: int = 1, gossip_checkpoint: Path | None = None,
        gossip_resume: Path | None = None) -> PartReport:
    """Check C1–C4, C6 and C7 on ``backend`` and return the report.

    ``gossip_checkpoint`` / ``gossip_resume``: a directory the one-process gossip search writes a
    checkpoint to after every level / goes on from (``gossip_checkpoint``); the search then runs
    in this process after the shards, on any engine.

    With ``gossip_workers`` > 1 the gossip search is sharded over that many worker processes
    (``gossip_sharded``), each building the backend from ``recipe``; it runs in this process
    after the shards, not as one task beside them.

    ``checks`` selects registered checks (default: all of ``modelcheck.properties``);
    ``iteration`` is the FragmentSet iteration order the states use while checking (``arrival``
    by default, so that a render which forgets to sort cannot hide behind id-ordered iteration).
    ``backend`` may carry a planted bug (its ``mutant`` attribute names it; traces record it).
    Traces are saved under ``trace_dir`` when given, else carried inline in the details.
    With ``fail_fast``, no universe, gossip or randomized run starts after a universe in which a
    law (ALWAYS check) was violated.

    The work is split into shards (``modelcheck.shards``) run by ``engine`` — ``local`` with
    ``workers`` = 1 in this process, more on a process pool; ``ray`` as Ray tasks — which then
    build the backend from ``recipe`` in each worker.  The verdict is the same on every engine.

    Whenever the C3 families run, the run also proves its instruments could see
    (``modelcheck.instruments``): canary shards go through the same engine and merge, and the
    schedules each shard rendered are held to closed forms and sampled from scratch."""
    _validate(max_arity, redeliveries, randomized, iteration)
    integer("gossip_workers", gossip_workers, 1, MAX_WORKERS)
    if gossip_workers > 1 and recipe is None:
        raise ValueError("a sharded gossip search builds the backend in its workers: give a BackendRecipe")
    for name, given in (("checkpoint", gossip_checkpoint), ("resume", gossip_resume)):
        if given is not None:
            refuse_inside_store(given, f"--{name}")  # before any work: nothing is written into a store
            if gossip_workers > 1:
                raise ArgumentError(name, str(given), "is for the one-process gossip search (--gossip-workers 1)")
    if gossip_checkpoint is not None and gossip_resume is not None:
        raise ArgumentError("resume", str(gossip_resume), "continues the checkpoint it names and writes there: "
                                                          "give it without --checkpoint")
    checkpointed = gossip_checkpoint is not None or gossip_resume is not None
    if trace_dir is not None:
        refuse_inside_store(trace_dir, "trace_dir")  # before any work: traces never go into a store
    chosen = frozenset((*P.ALL, *P.INSTRUMENTS) if checks is None else checks)
    if chosen & set(P.INSTRUMENTS) and not chosen & set(P.C3_FAMILIES):
        chosen |= set(P.C3_FAMILIES)      # an instrument alone runs the search it watches
    picked = select(universes)
    _validate_reach(max_arity, picked)
    gossip_u = _gossip_universe(picked, gossip_universe)
    config = GossipConfig(replicas=replicas, fragments=fragments, in_flight=in_flight,
                          max_states=max_states, max_depth=max_depth, symmetry=symmetry, fold_drops=fold_drops)
    run_gossip = gossip and bool(chosen & set(P.GOSSIP))
    config.validate(gossip_u)  # also when gossip does not run: no value given is silently ignored
    executor = make_executor(engine, workers, backend, recipe, ray_address)
    if isinstance(executor, InProcess):
        backend = executor.backend
    if backend is not None:
        name, mutant = backend.name, getattr(backend, "mutant", None) or None
    else:
        name, mutant = recipe.name, recipe.mutant  # type: ignore[union-attr]
    settings = Settings(max_arity, redeliveries, iteration, tuple(c.name for c in P.ALL if c in chosen), name, mutant)
    started = time.perf_counter()
    report = PartReport(part=PART)
    shard_plan = plan([u.name for u in picked], settings) if chosen & set(P.EXHAUSTIVE) else []
    canary_plan = plan_canaries(settings, len(shard_plan)) if shard_plan else []
    tasks: list[Task] = [ShardTask(settings, s) for s in shard_plan + canary_plan]
    gossip_task = GossipTask(settings, gossip_u.name, config, weight=float("inf")) if run_gossip else None
    if gossip_task is not None and not isinstance(executor, InProcess) and gossip_workers == 1 and not checkpointed:
        tasks.append(gossip_task)           # on a pool, gossip runs beside the shards
    total = sum(s.weight for s in shard_plan + canary_plan)
    state = {"done": 0.0, "shards": 0}
    results: list[ShardResult] = []
    gossip_result: list[GossipResult] = []

    def done(task: Task, result: Any) -> None:
        if isinstance(task, GossipTask):
            gossip_result.append(result)
            return
        results.append(result)
        state["done"] += task.shard.weight
        state["shards"] += 1
        progress(f"modelcheck: {len(shard_plan)} shards on {executor.name} ({executor.workers} worker(s)); "
                 "work in renders", int(state["done"]), int(total))

    with iteration_order(iteration):
        progress(f"modelcheck: {len(shard_plan)} shards on {executor.name} ({executor.workers} worker(s)); "
                 "work in renders", 0, int(total))
        executor.run(tasks, done)
        merged = merge(results, [u.name for u in picked])
        report.notes += merged.notes
        for u in picked:
            if shard_plan:
                report.tables.append(_universe_table(u, merged.rows[u.name]))
        for check in P.EXHAUSTIVE:
            if check in merged.tallies:
                report.results.append(_tally_result(merged.tallies[check], trace_dir, report.notes))
        # the families that ran, not those a canary was planned for: a run whose C3 families ran
        # without canary shards is judged blind rather than left without instrument rows
        instruments = judge(merged, picked, max_arity, redeliveries,
                            [c for c in P.C3_FAMILIES if c in chosen] if shard_plan else [], P.BAG_ORDER in chosen)
        report.results += instruments.results
        if instruments.results:   # the C3 families ran: the plan of every arity, each shard's selection
            report.results += [judge_plan(MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES),
                               judge_selection(merged.shard_costs, settings.checks)]
        report.tables += instruments.tables
        report.notes += instruments.notes
        stopped = fail_fast and _violated(merged.tallies)
        if stopped:
            report.notes.append("--fail-fast: a law was violated in the exhaustive shards; gossip (when it "
                                "runs after them, in process) and randomized runs not started")
        if max_arity < 2 and P.BAG_ORDER in chosen and shard_plan:
            report.results.append(P.BAG_ORDER.not_applicable("BagMerge of one fragment has one order; C4 needs "
                                                             "N >= 2 (max_arity 1)"))
        orderings = sum(merged.tallies[c].checked for c in (P.PERMUTATIONS, P.MERGE_TREES, P.REDELIVERIES)
                        if c in merged.tallies)
        data: dict[str, Any] = {
            "backend": name, "mutant": mutant, "max_arity": max_arity, "redeliveries": redeliveries,
            "universes": [u.name for u in picked], "renders": merged.renders, "iteration": iteration,
            "checks": sorted(c.name for c in chosen), "engine": executor.name, "workers": executor.workers,
            "shards": len(shard_plan), "cpu_seconds": round(merged.cpu_seconds, 3),
            "counts_per_n": {n: {"permutations": en.permutation_count(n), "trees": en.tree_count(n),
                                 "re-deliveries": en.redelivery_count(n, redeliveries)}
                             for n in range(1, max_arity + 1)},
            "shard_costs": merged.shard_costs,
        } | instruments.data
        if gossip_task is not None and (gossip_result or not stopped):
            if not gossip_result:           # in process (or sharded): after the shards, with its own progress
                if backend is None:
                    backend = recipe.make()  # type: ignore[union-attr]
                gossip_result.append(explore(backend, gossip_u, config, backend_name=name, mutant=mutant,
                                             progress=progress, shards=gossip_workers, recipe=recipe,
                                             checkpoint=gossip_checkpoint, resume=gossip_resume,
                                             engine=engine, ray_address=ray_address))
            g = gossip_result[0]
            report.results += _gossip_results(g, chosen, trace_dir, report.notes)
            report.tables.append(_gossip_table(g, config))
            data["gossip"] = report.results[-1].details | {"seconds": round(g.seconds, 3)}
        if randomized and P.RANDOMIZED in chosen and not stopped:
            if backend is None:
                backend = recipe.make()  # type: ignore[union-attr]
            report.results.append(_randomized(backend, randomized, mutant, trace_dir, report.notes, progress))
            orderings += report.results[-1].details["orderings"]
    data["orderings_checked"] = orderings
    report.data = data
    report.seconds = time.perf_counter() - started
    data["seconds"] = round(report.seconds, 3)
    return report


def _violated(tallies: Tallies) -> bool:
    """A law (ALWAYS) already has a violation: the part will fail whatever runs next."""
    return any(t.found and t.check.expect is Expect.ALWAYS for t in tallies.values())


def _gossip_table(g: GossipResult, config: GossipConfig) -> Table:
    return Table("modelcheck gossip (C7): replicas over an unreliable network",
                 ["universe", "replicas", "fragments", "in-flight bound", "symmetry", "states", "transitions",
                  "depth", "renders", "states/s", "exhaustive", "violations", "seconds", "search"],
                 [[g.universe, str(config.replicas), str(config.fragments), str(config.in_flight),
                   " + ".join(n for n, on in (("replica orbits", config.symmetry), ("drop folding", config.fold_drops))
                              if on) or "none", f"{g.states:,}", f"{g.transitions:,}",
                   str(g.depth), f"{g.renders:,}", f"{g.states / g.seconds:,.0f}" if g.seconds else "-",
                   "yes" if g.exhaustive else "no", "1" if g.violation else "0", f"{g.seconds:.2f}",
                   f"sharded over {g.details['shards']['workers']} processes" if "shards" in g.details
                   else "one process"]])


def _randomized(backend: Backend, examples: int, mutant: str | None, trace_dir: Path | None,
                notes: list[str], progress: Progress) -> ClaimResult:
    from modelcheck.randomized import run_randomized

    geometry = select(["random"])[0].geometry
    r = run_randomized(backend, geometry, examples, backend_name=backend.name, mutant=mutant,
                       progress=progress)
    details: dict[str, Any] = {"examples": r.examples, "orderings": r.orderings, "largest_n": r.largest}
    if r.trace is not None:
        details["traces"] = _record([r.trace], trace_dir, notes)
        figure = (f"violation in {r.failing_check} at N = {r.failing_n} (minimized to "
                  f"{len(r.trace['fragments'])}) after {r.examples:,} passing examples")
        return P.RANDOMIZED.result(Outcome.FAILS, figure, r.seconds, **details)
    return P.RANDOMIZED.tally(r.examples, 0, "examples", r.seconds,
                              figure=f"1 digest per set / {r.examples:,} examples, N up to {r.largest}",
                              **details)
