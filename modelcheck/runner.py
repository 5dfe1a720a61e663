"""``modelcheck.run``: every check on every selected universe, plus gossip and the randomized mode,
gathered into one ``PartReport`` (one ``ClaimResult`` per claim and check)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from modelcheck import enumerate as en
from modelcheck import trace as trace_io
from modelcheck.backend import Backend, Universe
from modelcheck.checks import Row, Tallies, Tally, UniverseCheck
from modelcheck.gossip import GossipConfig, GossipResult, explore
from modelcheck.mutants import base_backend
from modelcheck.universes import select
from spec import ClaimResult, InputError, Outcome, PartReport, Progress, Table, no_progress

PART = "modelcheck"
MAX_EXHAUSTIVE_ARITY = 5
MAX_REDELIVERIES = 3
DEFAULT_IN_FLIGHT = 2
DEFAULT_MAX_STATES = 200_000


def _validate(max_arity: int, redeliveries: int, randomized: int) -> None:
    if not isinstance(max_arity, int) or not 1 <= max_arity <= MAX_EXHAUSTIVE_ARITY:
        raise InputError(f"--max-arity must be 1..{MAX_EXHAUSTIVE_ARITY} (exhaustive); got {max_arity}. "
                         "For larger N use --randomized K (Hypothesis, N up to 64)")
    if not isinstance(redeliveries, int) or not 0 <= redeliveries <= MAX_REDELIVERIES:
        raise InputError(f"--redeliveries must be 0..{MAX_REDELIVERIES}; got {redeliveries}")
    if not isinstance(randomized, int) or not 0 <= randomized <= 100_000:
        raise InputError(f"--randomized must be 0..100000 examples; got {randomized}")


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
    if t.claim == "C4":   # existential: holds when a witness exists
        witnesses = t.extra.get("witnesses", 0)
        outcome = Outcome.HOLDS if witnesses else Outcome.FAILS
        figure = (f"{witnesses:,} witness set(s) / {t.checked:,} {t.unit}" if witnesses
                  else f"no witness in {t.checked:,} {t.unit}")
        return ClaimResult(t.claim, PART, t.check, outcome, figure, t.seconds,
                           {"checked": t.checked, "unit": t.unit, **t.extra})
    outcome = Outcome.FAILS if t.violations else Outcome.HOLDS
    if "max digests per set" in t.extra:
        digests = t.extra["max digests per set"]
        figure = f"{digests} digest{'s' if digests != 1 else ''} per set / {t.checked:,} {t.unit}"
    else:
        figure = f"{t.violations:,} violation(s) / {t.checked:,} {t.unit}"
    details: dict[str, Any] = {"checked": t.checked, "unit": t.unit, "violations": t.violations, **t.extra}
    if t.traces:
        details["traces"] = _record(t.traces, trace_dir, notes)
    return ClaimResult(t.claim, PART, t.check, outcome, figure, t.seconds, details)


def _universe_table(u: Universe, rows: list[Row]) -> Table:
    table = Table(f"modelcheck universe '{u.name}': {u.description}",
                  ["universe", "N", "permutations", "trees", "re-deliveries", "canonical digests",
                   "BagMerge digests", "violations"])
    for r in rows:
        table.rows.append([u.name, str(r.n), f"{r.permutations:,}", f"{r.trees:,}", f"{r.redeliveries:,}",
                           str(r.canonical_digests), str(r.bag_digests) if r.n >= 2 else "-",
                           str(r.violations)])
    return table


def _gossip_results(g: GossipResult, trace_dir: Path | None, notes: list[str]) -> list[ClaimResult]:
    c = g.config
    bound = "" if g.exhaustive else " (bounded)"
    details = {"universe": g.universe, "replicas": c.replicas, "fragments": c.fragments,
               "in_flight": c.in_flight, "states": g.states, "transitions": g.transitions,
               "depth": g.depth, "renders": g.renders, "fair_exchanges": g.fair_exchanges,
               "exhaustive": g.exhaustive, "max_states": c.max_states, "max_depth": c.max_depth}
    if not g.exhaustive:
        notes.append(f"gossip exploration hit its bound ({c.max_states:,} states"
                     + (f", depth {c.max_depth}" if c.max_depth is not None else "") + "): not exhaustive")
    results = []
    for kind, check in (("same-set", "gossip: equal sets render equal"),
                        ("fair-exchange", "gossip: fair exchange converges")):
        d = dict(details)
        if g.violation is not None and g.kind == kind:
            d["traces"] = _record([g.violation], trace_dir, notes)
            outcome, figure = Outcome.FAILS, f"violation at depth {g.violation_depth} ({g.states:,} states seen)"
        elif g.violation is not None:
            outcome, figure = Outcome.UNKNOWN, "not finished: exploration stopped at a violation"
        else:
            outcome, figure = Outcome.HOLDS, f"0 violations / {g.states:,} states{bound}"
        results.append(ClaimResult("C7", PART, check, outcome, figure, g.seconds, d))
    return results


def run(backend: Backend, *, max_arity: int = MAX_EXHAUSTIVE_ARITY, universes: list[str] | None = None,
        replicas: int = 3, fragments: int = 3, in_flight: int = DEFAULT_IN_FLIGHT,
        randomized: int = 0, redeliveries: int = 1, gossip: bool = True,
        gossip_universe: str | None = None, max_states: int = DEFAULT_MAX_STATES,
        max_depth: int | None = None, trace_dir: Path | None = None,
        progress: Progress = no_progress) -> PartReport:
    """Check C1–C4, C6 and C7 on ``backend`` and return the report.

    ``backend`` may be a mutant (``modelcheck.mutants.plant``); traces then record its name.
    Traces are saved under ``trace_dir`` when given, else carried inline in the details."""
    _validate(max_arity, redeliveries, randomized)
    chosen = select(universes)
    gossip_u = _gossip_universe(chosen, gossip_universe)
    config = GossipConfig(replicas=replicas, fragments=fragments, in_flight=in_flight,
                          max_states=max_states, max_depth=max_depth)
    if gossip:
        config.validate(gossip_u)
    base, mutant = base_backend(backend)
    started = time.perf_counter()
    report = PartReport(part=PART)
    tallies = Tallies()
    renders = 0
    for k, u in enumerate(chosen):
        progress("modelcheck universes", k, len(chosen))
        uc = UniverseCheck(backend, u, tallies, backend_name=base.name, mutant=mutant,
                           redeliveries=redeliveries, progress=progress)
        report.tables.append(_universe_table(u, uc.run(max_arity)))
        renders += uc.renders
    progress("modelcheck universes", len(chosen), len(chosen))
    for t in tallies.values():
        if t.checked:
            report.results.append(_tally_result(t, trace_dir, report.notes))
    if max_arity < 2:
        report.notes.append("C4 needs N >= 2: BagMerge witnesses were not looked for at --max-arity 1")
    orderings = sum(tallies[("C3", check)].checked for check in ("permutations", "merge trees", "re-deliveries")
                    if ("C3", check) in tallies)
    data: dict[str, Any] = {
        "backend": base.name, "mutant": mutant, "max_arity": max_arity, "redeliveries": redeliveries,
        "universes": [u.name for u in chosen], "renders": renders,
        "counts_per_n": {n: {"permutations": en.permutation_count(n), "trees": en.tree_count(n),
                             "re-deliveries": en.redelivery_count(n, redeliveries)}
                         for n in range(1, max_arity + 1)},
    }
    if gossip:
        g = explore(backend, gossip_u, config, backend_name=base.name, mutant=mutant, progress=progress)
        report.results += _gossip_results(g, trace_dir, report.notes)
        report.tables.append(Table("modelcheck gossip (C7): replicas over an unreliable network",
                                   ["universe", "replicas", "fragments", "in-flight bound", "states",
                                    "transitions", "depth", "renders", "exhaustive", "violations",
                                    "seconds"],
                                   [[g.universe, str(config.replicas), str(config.fragments),
                                     str(config.in_flight), f"{g.states:,}", f"{g.transitions:,}",
                                     str(g.depth), str(g.renders), "yes" if g.exhaustive else "no",
                                     "1" if g.violation else "0", f"{g.seconds:.2f}"]]))
        data["gossip"] = report.results[-1].details | {"seconds": round(g.seconds, 3)}
    if randomized:
        from modelcheck.randomized import run_randomized

        geometry = select(["random"])[0].geometry
        r = run_randomized(backend, geometry, randomized, backend_name=base.name, mutant=mutant,
                           progress=progress)
        details: dict[str, Any] = {"examples": r.examples, "orderings": r.orderings, "largest_n": r.largest}
        if r.trace is not None:
            details["traces"] = _record([r.trace], trace_dir, report.notes)
        if r.trace is not None:
            figure = (f"violation at N = {r.failing_n} (minimized to {len(r.trace['fragments'])}) "
                      f"after {r.examples:,} passing examples")
        else:
            figure = f"1 digest per set / {r.examples:,} examples, N up to {r.largest}"
        report.results.append(ClaimResult("C3", PART, "randomized N <= 64 (Hypothesis)",
                                          Outcome.FAILS if r.trace else Outcome.HOLDS, figure,
                                          r.seconds, details))
        orderings += r.orderings
    data["orderings_checked"] = orderings
    report.data = data
    report.seconds = time.perf_counter() - started
    return report
