"""The gossip search sharded over worker processes (claim C7): the breadth-first search of
``gossip_search`` with its visited set split by key over several processes, one level at a
time, so that a configuration past one core's reach can be searched on many.

Each worker owns the states whose key hashes to it (``owner``): it keeps their parent pointers
and merge proofs, checks them (``gossip_verdict``, in batches) and expands them.  A level is two
rounds: every worker expands its frontier and sends each child, with its key, merge proof and
the move that made it, to the child's owner (one pickled bucket per owner, relayed by this
process as bytes); then every owner takes its buckets in worker order, merges the children
already reached (the proof compared with the representative's, as ``gossip_search`` does) and
checks the new ones.

What differs from ``gossip_search``, and why:

- a replica state's mark is a digest of its ``backend.state_key`` (``GlobalMarks``), not a
  number in order of first sight: every worker must write one key for one state;
- a node's state objects travel to their owner: a state is rendered by the process that checks
  it (the render memo is per process, by object, never by set);
- a violation is the first one found in the shallowest level that has one (the depth
  ``gossip_search`` reports; the state may be another of that depth), reported with the counts
  when that level was done;
- ``max_states`` is shared out between the owners level by level, so a bounded run may stop a
  little before the bound, never past it.

The counts of an exhaustive run are those of ``gossip_search`` (tested on every configuration
both fit), and ``gossip.explore`` holds them to the census of the abstract model as it does the
single-process search's."""

from __future__ import annotations

import gc
import hashlib
import io
import pickle
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from modelcheck.backend import Backend, Universe
from modelcheck.gossip_model import GossipConfig, GossipModel, Node, splits
from modelcheck.gossip_search import CHECK_BATCH, GossipResult
from modelcheck.gossip_symmetry import Symmetry
from modelcheck.gossip_trace import gossip_trace
from modelcheck.gossip_verdict import Facts, Verdict
from modelcheck.gossip_workers import ShardError, Workers
from spec import Progress, no_progress
from spec.arguments import integer
from spec.interrupts import ignore_interrupts

MAX_WORKERS = 256


class Recipe(Protocol):
    """How a worker builds the backend (``shards.BackendRecipe`` is one; named here by what the
    search uses, since the shards module runs the explorer and so imports this one)."""

    @property
    def module(self) -> str: ...

    def make(self) -> Backend: ...


def stable_encoding(value: Any) -> bytes:
    """``value`` (a ``backend.state_key``: nested tuples, sets, bytes, text, numbers) written out
    the same in every process: sets sorted by their members' encodings, every part tagged and
    its length given, so two different values never write the same bytes."""
    if value is None:
        return b"N"
    if isinstance(value, bool):
        return b"T" if value else b"F"
    if isinstance(value, int):
        return b"i%d;" % value
    if isinstance(value, float):
        return b"f" + value.hex().encode() + b";"
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return b"b%d:" % len(raw) + raw
    if isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        return b"s%d:" % len(raw) + raw
    if isinstance(value, (tuple, list)):
        return b"t%d:" % len(value) + b"".join(stable_encoding(v) for v in value)
    if isinstance(value, (frozenset, set)):
        return b"S%d:" % len(value) + b"".join(sorted(stable_encoding(v) for v in value))
    raise TypeError(f"a state key holds a {type(value).__name__}, which has no stable encoding")


def stable_mark(state_key: Hashable) -> int:
    """A 63-bit digest of a state key (BLAKE2b): the same number for one state in every worker."""
    return int.from_bytes(hashlib.blake2b(stable_encoding(state_key), digest_size=8).digest(), "big") >> 1


class GlobalMarks(GossipModel):
    """The gossip model with marks every process agrees on (``stable_mark``), memoized by key."""

    def __init__(self, backend: Backend, universe: Universe, config: GossipConfig) -> None:
        super().__init__(backend, universe, config)
        self._marks: dict[Hashable, int] = {}

    def mark(self, state: Any) -> int:
        if state is None:
            return -1
        key = self.backend.state_key(state)
        got = self._marks.get(key)
        if got is None:
            got = self._marks[key] = stable_mark(key)
        return got


class GlobalSetNumbers(Verdict):
    """The verdict with set numbers every process agrees on (``stable_mark`` of the content ids):
    a node's facts records may come from two processes (inherited from the parent's, and new)."""

    def set_number(self, state: Any) -> int:
        return stable_mark(self.model.backend.abstract(state).ids())


def key_bytes(key: Hashable) -> bytes:
    """A visited-set key as bytes: the orbit key is bytes already; a plain key is encoded."""
    return key if isinstance(key, bytes) else stable_encoding(key)


def owner(key: Hashable, workers: int) -> int:
    """The worker that keeps ``key``: a hash of its bytes (BLAKE2b) modulo the worker count."""
    return int.from_bytes(hashlib.blake2b(key_bytes(key), digest_size=8).digest(), "big") % workers


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker builds its search from (plain, picklable data)."""

    recipe: Recipe
    arrival_order: bool            # wrap the backend in the order-by-arrival canary render
    universe: Universe
    config: GossipConfig
    fair_exchange: bool
    index: int
    workers: int
    backend_name: str | None
    mutant: str | None


class ShardWorker:
    """One worker's part of the search: the states it owns, its frontier, its checks."""

    def __init__(self, spec: WorkerSpec) -> None:
        backend = spec.recipe.make()
        if spec.arrival_order:
            from modelcheck.gossip_controls import ArrivalOrder  # the canary's render, only when asked
            backend = ArrivalOrder(backend)
        self.spec = spec
        self.backend = backend
        self.mutant = getattr(backend, "mutant", None) if spec.mutant is None else spec.mutant
        self.model = GlobalMarks(backend, spec.universe, spec.config)
        self.verdict = GlobalSetNumbers(self.model)
        self.symmetry = Symmetry(spec.config)
        self.union = self.verdict.union_render()
        self.root_proof = self.symmetry.key_and_proof(self.model.initial())[1]
        self.numbers = {id(obj): i for i, obj in enumerate(self.model.objects)}
        self.parent: dict[Hashable, tuple[Hashable, Any, bytes] | None] = {}
        self.frontier: list[tuple[Hashable, Node, Facts]] = []
        self.outgoing: list[list[tuple[Node, Node, Facts]]] = []   # per owner: (child, parent, parent's facts)
        self.incoming: list[Hashable] = []                         # keys of the new children, in order kept
        self.held: dict[Hashable, Node] = {}   # the violating node, kept for its trace
        self.fair_exchanges = 0

    def root(self) -> dict[str, Any]:
        n = self.model.initial()
        k, _ = self.symmetry.key_and_proof(n)
        if owner(k, self.spec.workers) != self.spec.index:
            return self._absorbed(0, 0, None)
        self.parent[k] = None
        facts = self.verdict.facts(n)
        self.frontier = [(k, n, facts)]
        found = self._check(self.frontier, 0)
        return self._absorbed(1, 1 if self.spec.config.fold_drops else 0, found)

    def expand(self, depth: int) -> dict[str, Any]:
        """Every child of this worker's frontier: its key, proof, parent and move, bucketed by
        owner (pickled); the children themselves wait here until their owners pick the new ones."""
        config, workers = self.spec.config, self.spec.workers
        self.outgoing = [[] for _ in range(workers)]
        buckets: list[list[tuple[Hashable, bytes, Hashable, Any]]] = [[] for _ in range(workers)]
        transitions = folded_moves = 0
        bounded_with_moves = False
        for k, n, facts in self.frontier:
            if config.max_depth is not None and depth >= config.max_depth:
                bounded_with_moves = bounded_with_moves or bool(self.model.successors(n))
                continue
            if config.fold_drops:
                folded_moves += len(set(m for m, _ in n.flight))
            for action in self.model.successors(n):
                child = self.model.apply(n, action)
                transitions += 1
                ck, proof = self.symmetry.key_and_proof(child)
                to = owner(ck, workers)
                buckets[to].append((ck, proof, k, action))
                self.outgoing[to].append((child, n, facts))
        self.frontier = []
        return {"buckets": [self.pickled(b) for b in buckets], "transitions": transitions,
                "folded_moves": folded_moves, "bounded_with_moves": bounded_with_moves}

    def decide(self, blobs: list[bytes], room: int) -> dict[str, Any]:
        """The children sent here, in worker order: merge the known ones (their proofs compared
        with the representative's), keep up to ``room`` new ones; which ones each sender must ship."""
        picks: list[list[int]] = []
        self.incoming = []
        merges = unproved = 0
        full = False
        for blob in blobs:
            mine: list[int] = []
            for index, (ck, proof, pk, action) in enumerate(self.unpickled(blob)):
                seen = self.parent.get(ck, _NEW)
                if seen is not _NEW:
                    merges += 1
                    if self.spec.config.symmetry and proof != (self.root_proof if seen is None else seen[2]):
                        unproved += 1
                    continue
                if len(self.incoming) >= room:
                    full = True
                    continue
                self.parent[ck] = (pk, action, proof)
                self.incoming.append(ck)
                mine.append(index)
            picks.append(mine)
        return {"picks": picks, "merges": merges, "unproved": unproved, "full": full}

    def ship(self, picks: list[list[int]]) -> list[bytes]:
        """The new children each owner picked (``picks[owner]``, positions in its bucket), with
        their facts records (``Verdict.facts``, shared with the parent's where the object is)."""
        blobs = []
        for to, positions in enumerate(picks):
            out = []
            for i in positions:
                child, n, facts = self.outgoing[to][i]
                out.append((child, self.verdict.facts(child, n, facts)))
            blobs.append(self.pickled(out))
        self.outgoing = []
        return blobs

    def take(self, blobs: list[bytes], depth: int) -> dict[str, Any]:
        """The new children, in the order ``decide`` kept them, become the frontier; checked."""
        nodes = [item for blob in blobs for item in self.unpickled(blob)]
        unfolded = 0
        if self.spec.config.fold_drops:
            unfolded = sum(splits(frozenset(Counter(m for m, _ in child.flight).items())) for child, _ in nodes)
        self.frontier = [(ck, child, facts) for ck, (child, facts) in zip(self.incoming, nodes, strict=True)]
        self.incoming = []
        found = self._check(self.frontier, depth)
        return self._absorbed(len(self.frontier), unfolded, found)

    def pickled(self, value: Any) -> bytes:
        out = io.BytesIO()
        _Pickler(out, self.numbers).dump(value)
        return out.getvalue()

    def unpickled(self, blob: bytes) -> Any:
        return _Unpickler(io.BytesIO(blob), self.model.objects).load()

    def _check(self, nodes: list[tuple[Hashable, Node, Facts]], depth: int) -> dict[str, Any] | None:
        """Check ``nodes`` in order, ``CHECK_BATCH`` at a time; the first violation, if any."""
        for start in range(0, len(nodes), CHECK_BATCH):
            batch = nodes[start:start + CHECK_BATCH]
            found = self.verdict.first_violation([(n, facts) for _, n, facts in batch], self.union,
                                                 self.spec.fair_exchange)
            checked = len(batch) if found is None else found[0] + 1
            self.fair_exchanges += checked if self.spec.fair_exchange else 0
            if found is not None:
                index, kind, pair = found
                key, n, _ = batch[index]
                self.held[key] = n
                return {"key": key, "kind": kind, "pair": pair, "depth": depth}
        return None

    @staticmethod
    def _absorbed(new: int, unfolded: int, found: dict[str, Any] | None) -> dict[str, Any]:
        return {"new": new, "unfolded": unfolded, "violation": found}

    def parent_of(self, key: Hashable) -> tuple[bool, tuple[Hashable, Any] | None]:
        """Whether this worker keeps ``key``, and its parent and move (None at the root)."""
        got = self.parent.get(key, _NEW)
        if got is _NEW:
            return False, None
        return True, None if got is None else (got[0], got[1])

    def trace(self, key: Hashable, chain: dict[Hashable, Any], kind: str, pair: tuple[int, int] | None) -> dict:
        n = self.held[key]
        tail = self.model.fair_exchange(n) if kind == "fair-exchange" else []
        return gossip_trace(self.model, self.verdict, self.spec.universe, chain, key, tail, pair,
                            self.spec.backend_name, self.mutant)

    def totals(self) -> dict[str, int]:
        return {"renders": self.verdict.render_calls, "unrendered": self.verdict.unrendered,
                "fair_exchanges": self.fair_exchanges, "states": len(self.parent),
                "cpu_seconds": round(time.process_time(), 3)}


_NEW = object()


class _Pickler(pickle.Pickler):
    """Writes the model's own fragment objects as their numbers: every worker built the same
    ones from the universe (``GossipModel.objects``), so a node travels without its tensors."""

    def __init__(self, file: io.BytesIO, objects: dict[int, int]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.objects = objects

    def persistent_id(self, obj: Any) -> int | None:
        return self.objects.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, objects: list[Any]) -> None:
        super().__init__(file)
        self.objects = objects

    def persistent_load(self, pid: Any) -> Any:
        return self.objects[pid]


def _serve(connection: Connection, spec: WorkerSpec) -> None:
    """A worker process: build the worker, then answer ``(method, args)`` until told to stop.
    An error is sent back as its text (the coordinator raises it), never printed here."""
    ignore_interrupts()
    gc.disable()  # as in gossip_search: the visited set only grows
    try:
        worker = ShardWorker(spec)
        connection.send(("ok", None))
    except Exception as exc:  # noqa: BLE001 - reported to the coordinator, which raises it
        connection.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, args = connection.recv()
        except EOFError:
            return
        if method == "stop":
            return
        try:
            connection.send(("ok", getattr(worker, method)(*args)))
        except Exception as exc:  # noqa: BLE001
            connection.send(("error", f"{type(exc).__name__}: {exc}"))


def sharded_search(recipe: Recipe, universe: Universe, config: GossipConfig, workers: int, *,
                   arrival_order: bool = False, backend_name: str | None = None, mutant: str | None = None,
                   fair_exchange: bool = True, progress: Progress = no_progress,
                   pool_of: Callable[[list[WorkerSpec]], Any] | None = None) -> GossipResult:
    """The search of ``gossip_search.search`` over ``workers`` processes (see the module's
    docstring for what differs); the backend is built in each worker from ``recipe``.
    ``pool_of`` builds the workers from their specs (default ``Workers``, a forkserver pool;
    ``gossip_ray.RayWorkers``, Ray actors)."""
    integer("workers", workers, 1, MAX_WORKERS)
    config.validate(universe)
    started = time.perf_counter()
    result = GossipResult(config, universe.name)
    specs = [WorkerSpec(recipe, arrival_order, universe, config, fair_exchange, i, workers, backend_name, mutant)
             for i in range(workers)]
    pool = pool_of(specs) if pool_of is not None else Workers(specs, _serve, recipe.module)
    try:
        _levels(pool, workers, config, result, progress, universe.name)
        totals = pool.all("totals")
    except BaseException:
        pool.stop(at_once=True)
        raise
    pool.stop()
    result.renders = sum(t["renders"] for t in totals)
    result.unrendered_comparisons = sum(t["unrendered"] for t in totals)
    result.fair_exchanges = sum(t["fair_exchanges"] for t in totals)
    result.details["shards"] = {"workers": workers, "states_per_worker": [t["states"] for t in totals],
                                "cpu_seconds_per_worker": [t["cpu_seconds"] for t in totals]}
    result.seconds = time.perf_counter() - started
    return result


def _levels(pool: Workers, workers: int, config: GossipConfig, result: GossipResult, progress: Progress,
            name: str) -> None:
    """Level by level until the frontier is empty, a violation is found or the bound is reached."""
    answers = pool.all("root")
    result.unfolded_states += sum(a["unfolded"] for a in answers)
    states = sum(a["new"] for a in answers)
    depth = 0
    while not _stop(answers, pool, result, states) and any(a["new"] for a in answers):
        expanded = pool.all("expand", [(depth,)] * workers)
        result.transitions += sum(e["transitions"] for e in expanded)
        result.folded_moves += sum(e["folded_moves"] for e in expanded)
        if any(e["bounded_with_moves"] for e in expanded):
            result.exhaustive = False
        room = config.max_states - states
        shares = [room // workers + (1 if i < room % workers else 0) for i in range(workers)]
        decided = pool.all("decide", [([e["buckets"][i] for e in expanded], shares[i]) for i in range(workers)])
        shipped = pool.all("ship", [([d["picks"][sender] for d in decided],) for sender in range(workers)])
        answers = pool.all("take", [([b[i] for b in shipped], depth + 1) for i in range(workers)])
        for d in decided:
            result.merges += d["merges"]
            result.unproved_merges += d["unproved"]
            result.exhaustive = result.exhaustive and not d["full"]
        result.unfolded_states += sum(a["unfolded"] for a in answers)
        new = sum(a["new"] for a in answers)
        states += new
        if new:
            depth += 1
            result.depth = depth
        progress(f"gossip {name}: states", states, 0)
    result.states = states
    progress(f"gossip {name}: states", states, states)


def _stop(answers: list[dict[str, Any]], pool: Workers, result: GossipResult, states: int) -> bool:
    """Whether the search ends here: a violation in this level (its trace fetched), or the bound."""
    found = next(((i, a["violation"]) for i, a in enumerate(answers) if a["violation"] is not None), None)
    if found is not None:
        i, v = found
        result.kind, result.violation_depth = v["kind"], v["depth"]
        chain: dict[Hashable, Any] = {}
        key = v["key"]
        while True:  # asked of every worker: the chain is read where it was kept, not where it should be
            found_at = [got for kept, got in pool.all("parent_of", [(key,)] * len(pool.connections)) if kept]
            if not found_at:
                raise ShardError("no gossip shard worker keeps a state on the violation's path")
            got = found_at[0]
            chain[key] = None if got is None else (got[0], got[1], b"")
            if got is None:
                break
            key = got[0]
        result.violation = pool.call(i, "trace", v["key"], chain, v["kind"], v["pair"])
        result.states = states
        return True
    return not result.exhaustive
