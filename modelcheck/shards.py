"""The exhaustive enumeration split into shards, and the verdict as a union of shard results.

A shard is (universe, kind, N, leaf-order prefix): kind ``c3`` runs the C3 schedules of arity N
whose first arrivals are the prefix (and compares each render with the oracle); ``bag`` runs
C4 at arity N; ``universe`` runs the checks over a whole universe (the engine's sort, C6, the
laws, the refinement).  The plan depends only on the settings — never on the engine or the
number of workers — and every engine (in process, a process pool, Ray) runs the same shards
through ``perform``.  Results are merged in plan order, whatever order they completed in, so
the verdict, the counts, the figures and the traces (the first one per check and universe, in
plan order) are the same on every engine.

Renders are never shared between shards or orderings; each shard builds its own fragments
from the universe's bit patterns.  Results travel between our own processes by pickle (the
standard library's process pool, Ray's object store); nothing from a peer's file is unpickled."""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import importlib
import importlib.util
import math
import os
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelcheck import canary as canaries
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.backend import Backend
from modelcheck.checks import Row, Tallies, Tally, UniverseCheck
from modelcheck.coverage import COPIES, ScheduleWatcher, Seen, copies_as_scheduled
from modelcheck.gossip import GossipConfig, GossipResult, explore
from modelcheck.universes import universe as universe_named
from spec import Check, InputError
from spec.fragment_set import iteration_order

# prefix length per arity: shards of at most a few tens of thousands of orderings at R = 1 up to
# N = 8, and 176,400 at N = 9 (6,048 shards: a cluster's tasks of seconds each)
PREFIX_LENGTH = {1: 0, 2: 0, 3: 0, 4: 0, 5: 1, 6: 2, 7: 2, 8: 3, 9: 4}
LAW_RENDERS = 2_200          # the laws render about this many state objects per universe


@dataclass(frozen=True)
class BackendRecipe:
    """How a worker process builds the backend under check: ``"module:function"`` and its
    arguments (plain, picklable data), plus a digest of the code it must run.

    ``packages`` are the top-level packages whose source the verdict is about; a worker
    refuses to run if its copy of them differs from the driver's (a cluster that has another
    version installed would otherwise check other code)."""

    factory: str
    args: tuple[Any, ...] = ()
    name: str = ""                    # the backend's name and planted bug, as traces record them
    mutant: str | None = None
    packages: tuple[str, ...] = ()
    code: str = ""

    @property
    def module(self) -> str:
        return self.factory.split(":", 1)[0]

    def make(self) -> Backend:
        module, _, name = self.factory.partition(":")
        return getattr(importlib.import_module(module), name)(*self.args)

    def pinned(self) -> BackendRecipe:
        """This recipe with the digest of the driver's copy of ``packages``."""
        return dataclasses.replace(self, code=code_digest(self.packages))


def code_digest(packages: Sequence[str]) -> str:
    """SHA-256 over the relative paths and bytes of every ``.py`` file of ``packages`` (found
    without importing them)."""
    h = hashlib.sha256()
    for name in sorted(packages):
        found = importlib.util.find_spec(name)
        if found is None or not found.submodule_search_locations:
            raise InputError(f"package {name!r} is not importable here")
        root = Path(next(iter(found.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            h.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Settings:
    """What every shard of one run shares."""

    max_arity: int
    redeliveries: int
    iteration: str
    checks: tuple[str, ...]
    backend_name: str
    mutant: str | None

    def selected(self) -> list[Check]:
        by_name = {c.name: c for c in P.ALL}
        return [by_name[name] for name in self.checks]


@dataclass(frozen=True)
class Shard:
    index: int                   # position in the plan: results merge in this order
    universe: str
    kind: str                    # "c3" | "bag" | "universe"
    n: int                       # the arity (for "universe": the top arity)
    prefix: tuple[int, ...] = ()
    orderings: int = 0           # C3 schedules it checks (closed forms)
    weight: float = 0.0          # expected cost, in renders (progress, scheduling)
    canary: str = ""             # a negative control (``modelcheck.canary``), "" for the real check

    def describe(self) -> str:
        if self.canary:
            return f"canary {self.canary}: {self.universe} N={self.n} prefix {list(self.prefix)}"
        if self.kind == "c3":
            return f"{self.universe} N={self.n} prefix {list(self.prefix)}"
        return f"{self.universe} {self.kind}" + (f" N={self.n}" if self.kind == "bag" else "")


def prefixes(n: int, length: int, max_extra: int) -> list[tuple[int, ...]]:
    """Every prefix of ``length`` arrivals that starts at least one C3 schedule of arity n."""
    out: list[tuple[int, ...]] = []

    def grow(p: tuple[int, ...]) -> None:
        if len(p) == length:
            out.append(p)
            return
        for i in range(n):
            q = p + (i,)
            if len(q) - len(set(q)) <= max_extra:
                grow(q)

    grow(())
    return out


@functools.lru_cache(maxsize=1 << 16)
def c3_counts(n: int, max_extra: int, prefix: tuple[int, ...] = ()) -> tuple[int, int, int]:
    """The permutations, merge trees and re-deliveries of arity n that start with ``prefix``
    (kept per process: the plan-coverage row of every run counts the 6,561 prefixes of N = 9 at
    each R, which is cheap only once)."""
    return (en.permutation_count(n, prefix), en.tree_count(n, prefix),
            en.redelivery_count(n, max_extra, prefix))


def c3_orderings(n: int, max_extra: int, prefix: tuple[int, ...] = ()) -> int:
    """The C3 schedules of arity n that start with ``prefix``, every family."""
    return sum(c3_counts(n, max_extra, prefix))


def c3_shards(n: int, max_extra: int) -> list[tuple[tuple[int, ...], int]]:
    """The C3 shards of arity n, as (prefix, orderings): every prefix of ``PREFIX_LENGTH[n]``
    arrivals that starts at least one schedule (``plan`` and the plan's own coverage check,
    ``modelcheck.plan_coverage``, both read it)."""
    return [(p, count) for p in prefixes(n, PREFIX_LENGTH[n], max_extra)
            if (count := c3_orderings(n, max_extra, p))]


def plan(universes: Sequence[str], settings: Settings) -> list[Shard]:
    """The shards of one run, in the order a single process runs them."""
    shards: list[Shard] = []

    def add(**kw: Any) -> None:
        shards.append(Shard(index=len(shards), **kw))

    for name in universes:
        u = universe_named(name)
        top = min(settings.max_arity, len(u.fragments))
        for n in range(1, top + 1):
            for p, count in c3_shards(n, settings.redeliveries):
                add(universe=name, kind="c3", n=n, prefix=p, orderings=count, weight=float(count))
            if n >= 2:
                add(universe=name, kind="bag", n=n, weight=float(math.factorial(n) + 2 * n))
        refinement = 4.0 * (math.factorial(top) + 110)
        add(universe=name, kind="universe", n=top,
            weight=LAW_RENDERS + refinement + math.factorial(top + 1) / 20)
    return shards


def plan_canaries(settings: Settings, start: int) -> list[Shard]:
    """The canary shards of a run whose C3 families run (numbered from ``start``, after the
    plan's): every C3 canary on the canary universe at its arity, split by its prefix length,
    and the BagMerge canary's one bag shard at that arity (whatever checks were selected: the
    count it controls is judged in every such run)."""
    if not set(settings.checks) & {c.name for c in P.C3_FAMILIES}:
        return []
    out: list[Shard] = []
    n = canaries.ARITY
    for name in canaries.NAMES:
        for p in prefixes(n, canaries.PREFIX_LENGTH[name], settings.redeliveries):
            count = c3_orderings(n, settings.redeliveries, p)
            out.append(Shard(start + len(out), canaries.UNIVERSE, "c3", n, p, count, float(count), name))
    out.append(Shard(start + len(out), canaries.UNIVERSE, "bag", n, weight=float(math.factorial(n)),
                     canary=canaries.BAG))
    return out


@dataclass
class ShardResult:
    shard: Shard
    tallies: dict[Check, Tally]
    digests: dict[Check | None, set[str]]   # C3 digests of this shard's set (None: all families)
    row: Row | None
    renders: int
    seconds: float
    cpu_seconds: float
    worker: str
    coverage: dict[str, Seen] = field(default_factory=dict)   # per C3 family (``modelcheck.coverage``)
    expected: dict[str, int] = field(default_factory=dict)    # the arrival canary's violations, counted apart


@dataclass(frozen=True)
class ShardTask:
    settings: Settings
    shard: Shard


@dataclass(frozen=True)
class GossipTask:
    settings: Settings
    universe: str
    config: GossipConfig
    weight: float = 0.0


Task = ShardTask | GossipTask


_heap_frozen = False


def _freeze_heap() -> None:
    """Once per process, before its first task: set what the process already holds (torch and
    the other modules, some 170k objects) aside from the cyclic collector.  A full collection
    walks every tracked object (about 0.13 s here), and a task allocates enough to set one off
    every few thousand renders: a third of a small shard's time.  Frozen objects are still freed
    by reference counting; only cycles among them would stay, and a checker makes none."""
    global _heap_frozen
    if not _heap_frozen:
        gc.freeze()
        _heap_frozen = True


def perform(backend: Backend, task: Task) -> ShardResult | GossipResult:
    """Run one task on ``backend`` in this process (every engine ends here)."""
    _freeze_heap()
    s = task.settings
    if isinstance(task, GossipTask):
        with iteration_order(s.iteration):
            return explore(backend, universe_named(task.universe), task.config,
                           backend_name=s.backend_name, mutant=s.mutant)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _perform_shard(backend, task)
    finally:
        if collecting:
            gc.enable()


def _perform_shard(backend: Backend, task: ShardTask) -> ShardResult:
    """One shard, with the cyclic collector off (``perform``): a C3 shard allocates tens of
    objects per ordering, most freed by reference counting at once, and every collection they
    set off walks the young ones and the shard's growing tables again, a third of a shard's
    time; the few cycles a shard leaves (a few thousand objects) are collected once it is back on."""
    s = task.settings
    shard = task.shard
    started, cpu = time.perf_counter(), time.process_time()
    tallies = Tallies()
    selected = s.selected()
    under_check = backend
    if shard.canary:   # the bag canary runs the BagMerge orders whatever the run selected
        backend = canaries.canary_backend(shard.canary, backend, shard.describe())
        selected = [P.BAG_ORDER] if shard.kind == "bag" else [c for c in selected if c in P.C3_FAMILIES]
    with iteration_order(s.iteration):
        uc = UniverseCheck(backend, universe_named(shard.universe), tallies, backend_name=s.backend_name,
                           mutant=s.mutant, redeliveries=s.redeliveries, selected=selected)
        row: Row | None = None
        expected: dict[str, int] = {}
        if shard.kind == "c3":
            uc.watcher = ScheduleWatcher(uc.backend, uc.leaves, shard.describe(), probe=bool(shard.canary))
            row = uc.run_c3(shard.n, shard.prefix)
            if shard.canary == canaries.ARRIVAL:
                expected = canaries.arrival_violations(under_check, uc.objects, shard.n, shard.prefix,
                                                       s.redeliveries, uc.base)
        elif shard.kind == "bag":
            row = uc.run_bag(shard.n)
        else:
            uc.run_universe(shard.n)
    coverage = uc.watcher.report() if uc.watcher is not None else {}
    if shard.canary and shard.kind == "c3":   # copies numbered by the shared unions, re-delivered twice
        coverage = coverage | {COPIES: copies_as_scheduled(under_check, uc.objects)}
    return ShardResult(shard, dict(tallies), uc.digests, row, uc.renders, time.perf_counter() - started,
                       time.process_time() - cpu, f"{socket.gethostname()}:{os.getpid()}", coverage, expected)


_BACKENDS: dict[BackendRecipe, Backend] = {}


def perform_remote(recipe: BackendRecipe, task: Task) -> ShardResult | GossipResult:
    """``perform`` in a worker process: the backend is built once per process from its recipe,
    after checking that this process runs the driver's code."""
    backend = _BACKENDS.get(recipe)
    if backend is None:
        if recipe.code and code_digest(recipe.packages) != recipe.code:
            raise InputError(f"worker {socket.gethostname()}:{os.getpid()} runs other code than the driver "
                             f"(packages {', '.join(recipe.packages)} differ); install the same canonmerge "
                             "on every node")
        backend = _BACKENDS[recipe] = recipe.make()
    return perform(backend, task)


# --- the union of shard results --------------------------------------------------------------

@dataclass
class Merged:
    """The union of shard results: the real check's, and apart from it each canary's."""

    tallies: Tallies
    rows: dict[str, list[Row]]
    renders: int = 0
    cpu_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    shard_costs: list[dict[str, Any]] = field(default_factory=list)
    canaries: dict[str, Tallies] = field(default_factory=dict)
    canary_rows: dict[str, list[Row]] = field(default_factory=dict)
    # (canary, check name, universe, N) of every set whose shards rendered it differently
    split: set[tuple[str, str, str, int]] = field(default_factory=set)
    # (canary, universe, N, C3 family) -> what the shards fed to their renders
    coverage: dict[tuple[str, str, int, str], Seen] = field(default_factory=dict)
    unsampled: list[str] = field(default_factory=list)   # C3 shards of which nothing was rebuilt


def _add_tally(into: Tallies, t: Tally) -> Tally:
    m = into.of(t.check, t.unit, t.describe)
    m.checked += t.checked
    m.found += t.found
    m.seconds += t.seconds
    for trace in t.traces:
        if trace["universe"] not in m._traced:
            m._traced.add(trace["universe"])
            m.traces.append(trace)
    for key, value in t.details.items():
        if key != "max digests per set":
            m.details.setdefault(key, value)
    return m


def _add_row(into: Row, row: Row) -> None:
    into.permutations += row.permutations
    into.trees += row.trees
    into.redeliveries += row.redeliveries
    into.violations += row.violations
    into.bag_digests = max(into.bag_digests, row.bag_digests)


def merge(results: Iterable[ShardResult], universes: Sequence[str]) -> Merged:
    """The verdict of a run: shard results combined in plan order (completion order is
    irrelevant).  Digests are united per set across shards, so two shards that rendered one set
    differently (a render that differs between processes) count as a violation.  Canary shards
    go through the same union, into their own tallies."""
    ordered = sorted(results, key=lambda r: r.shard.index)
    merged = Merged(Tallies(), {u: [] for u in universes})
    rows: dict[tuple[str, str, int], Row] = {}
    sets: dict[tuple[str, Check | None, str, int], set[str]] = {}
    found: dict[tuple[str, Check, str, int], int] = {}
    for r in ordered:
        s = r.shard
        tallies = merged.canaries.setdefault(s.canary, Tallies()) if s.canary else merged.tallies
        merged.renders += r.renders
        merged.cpu_seconds += r.cpu_seconds
        merged.shard_costs.append({"shard": s.describe(), "kind": s.kind, "n": s.n, "orderings": s.orderings,
                                   "renders": r.renders, "cpu_seconds": round(r.cpu_seconds, 4),
                                   "seconds": round(r.seconds, 4), "worker": r.worker, "canary": s.canary,
                                   # each check's violations as this shard counted them, apart from the union
                                   "found": {t.check.name: t.found for t in r.tallies.values()},
                                   "expected": r.expected})
        for t in r.tallies.values():
            _add_tally(tallies, t)
            found[(s.canary, t.check, s.universe, s.n)] = found.get((s.canary, t.check, s.universe, s.n), 0) + t.found
        for check, digests in r.digests.items():
            sets.setdefault((s.canary, check, s.universe, s.n), set()).update(digests)
        for family, seen in r.coverage.items():
            merged.coverage.setdefault((s.canary, s.universe, s.n, family), Seen()).add(seen)
        if s.kind == "c3" and r.coverage and not any(seen.sampled for family, seen in r.coverage.items()
                                                     if family != COPIES):
            merged.unsampled.append(s.describe())
        if r.row is not None:
            row = rows.get((s.canary, s.universe, s.n))
            if row is None:
                row = rows[(s.canary, s.universe, s.n)] = Row(s.n)
                (merged.canary_rows.setdefault(s.canary, []) if s.canary else merged.rows[s.universe]).append(row)
            _add_row(row, r.row)
    for (canary, check, name, n), digests in sets.items():
        if check is None:
            rows[(canary, name, n)].canonical_digests = len(digests)
            continue
        t = (merged.canaries[canary] if canary else merged.tallies)[check]
        t.details["max digests per set"] = max(t.details.get("max digests per set", 0), len(digests))
        if split_unseen(digests, found.get((canary, check, name, n), 0)):
            t.found += 1
            merged.split.add((canary, check.name, name, n))
            if not canary:
                merged.notes.append(f"{check.claim} {check.name}: shards rendered the set of universe {name!r} "
                                    f"at N = {n} to {len(digests)} different digests, though each shard saw one: "
                                    "the render differs between processes (no single-process trace exists)")
    return merged


def split_unseen(digests: set[str], found: int) -> bool:
    """Whether one set's digests, united over its shards, show a render that differs between
    processes which no shard counted: two digests or more, and no violation counted by its shards
    (the instruments hold this judgement to a control of two digests, the fewest a split has)."""
    return len(digests) > 1 and not found


def weight_of(task: Task) -> float:
    return task.weight if isinstance(task, GossipTask) else task.shard.weight


def largest_first(tasks: Sequence[Task]) -> list[Task]:
    """Scheduling order for parallel engines (longest first balances the tail)."""
    return sorted(tasks, key=lambda t: -weight_of(t))


Done = Callable[[Task, Any], None]
