"""Replicas exchanging state over an unreliable network, explored exhaustively (claim C7).

R replicas; F fragments, each published once at its home replica.  Messages are state-based (a
message carries the sender's state snapshot).  The network may deliver any in-flight message
next (reorder), deliver it and keep it in flight (duplicate), or drop it; a dropped message may be
re-sent.  Messages in flight plus dropped-awaiting-resend are bounded by ``in_flight``.

Breadth-first search over canonical states (``backend.state_key`` of every replica, the
publications, and the multisets of messages) checks, at every reachable state, that replicas
holding equal sets render byte-identically, and that a fair exchange from that state (finish
publishing, flush every message, then everyone sends to everyone and all of it is delivered)
brings every replica to one render, equal to the render of the union.  BFS parent pointers give
the shortest trace to the first violation.

Renders are never memoized by set: two replicas holding equal sets are compared through two
render calls on their own state objects (a memo keyed by the set would compare an entry with
itself, and a render whose bytes depend on how a state was built, or on the call, would pass).
The only memo is by state *object* (a record shared by the nodes holding that object), so one
object is not rendered twice.

What the search keeps per state reached is its key (bytes) and its parent; the nodes themselves,
with their state objects, are held only while they wait to be expanded.  Nodes are checked
``CHECK_BATCH`` at a time in the order reached, their renders in one backend call, and a
violation is reported with the counts of the moment its node was reached: the same result as
checking each node at once (tested)."""

from __future__ import annotations

import gc
import itertools
import time
from array import array
from collections import Counter, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from modelcheck.backend import Backend, Universe, render_digests
from modelcheck.trace import make_trace
from spec import ArgumentError, Progress, no_progress
from spec.arguments import integer
from spec.fragment_set import current_iteration_order

Action = tuple  # ("publish", f) | ("send", s, d) | (verb, message key), verb in deliver/duplicate/drop/resend

MAX_STATES, MAX_DEPTH = 10**9, 10**6  # states are kept in memory: a billion is past any machine's

@dataclass(frozen=True)
class GossipConfig:
    replicas: int = 3
    fragments: int = 3
    in_flight: int = 2
    homes: tuple[int, ...] | None = None  # home replica of each fragment; default round-robin
    max_depth: int | None = None
    max_states: int = 200_000
    symmetry: bool = False  # explore one state per orbit of replica relabellings (see module doc)

    def home(self, f: int) -> int:
        return self.homes[f] if self.homes is not None else f % self.replicas

    def validate(self, universe: Universe) -> None:
        integer("replicas", self.replicas, 2, 8)
        integer("fragments", self.fragments, 1, len(universe.fragments), f" for universe {universe.name!r}")
        integer("in_flight", self.in_flight, 1, 6)
        if self.homes is not None and (len(self.homes) != self.fragments
                                       or any(not 0 <= h < self.replicas for h in self.homes)):
            raise ArgumentError("homes", self.homes, "must name one replica per fragment")
        integer("max_states", self.max_states, 1, MAX_STATES)
        if self.max_depth is not None:
            integer("max_depth", self.max_depth, 0, MAX_DEPTH)


Message = tuple[int, int, int]  # (src, dst, mark of the snapshot sent)
# nodes checked together: their renders go to the backend in one call (modelcheck.checks
# batches its renders the same way)
CHECK_BATCH = 32
Facts = tuple[Any, ...]  # per replica: [set number, render digest or None], or None (holds nothing)


class Node(NamedTuple):
    """A global state.  ``marks`` numbers each replica's state by its ``backend.state_key`` (-1:
    holds nothing), kept beside the states so a move computes the key of the one state it makes
    and nothing keeps a discarded child's states alive; a message is keyed by its endpoints and
    the mark of its snapshot.  (A named tuple: the search holds one per state, hundreds of
    thousands of them.)"""

    states: tuple[Any, ...]        # per replica: a backend state, or None before it holds anything
    marks: tuple[int, ...]
    published: frozenset[int]
    flight: tuple[tuple[Message, Any], ...]   # (message key, snapshot)
    dropped: tuple[tuple[Message, Any], ...]


@dataclass
class GossipResult:
    config: GossipConfig
    universe: str
    states: int = 0
    transitions: int = 0
    depth: int = 0
    renders: int = 0
    fair_exchanges: int = 0
    exhaustive: bool = True
    seconds: float = 0.0
    violation: dict[str, Any] | None = None    # a trace
    violation_depth: int = 0
    kind: str = ""                              # which check failed: "same-set" or "fair-exchange"
    details: dict[str, Any] = field(default_factory=dict)


class _World:
    """The transition relation over ``Node``s for one backend and one set of fragments."""

    def __init__(self, backend: Backend, universe: Universe, config: GossipConfig) -> None:
        self.backend, self.config = backend, config
        self.objects = [backend.build(universe.geometry, d) for d in universe.fragments[:config.fragments]]
        self.base = universe.base
        self._renders: dict[int, tuple[Any, str]] = {}   # id(state) -> (state kept alive, digest)
        self._numbers: dict[Hashable, int] = {}           # state key -> its mark
        self._set_numbers: dict[Any, int] = {}            # abstract set -> a small number
        self._published: dict[frozenset[int], tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {}
        self.render_calls = 0

    def mark(self, state: Any) -> int:
        """A small number per distinct ``backend.state_key`` (-1: holds nothing), fixed for the
        whole run: what a node and a message record of a state."""
        if state is None:
            return -1
        key = self.backend.state_key(state)
        got = self._numbers.get(key)
        if got is None:
            got = self._numbers[key] = len(self._numbers)
        return got

    def set_number(self, state: Any) -> int:
        """A small number per distinct abstract set (``backend.abstract``)."""
        return self._set_numbers.setdefault(self.backend.abstract(state), len(self._set_numbers))

    def render(self, state: Any) -> str:
        """Render digest of this state object (one call per object, never shared by set)."""
        hit = self._renders.get(id(state))
        if hit is None or hit[0] is not state:
            self.render_calls += 1
            hit = self._renders[id(state)] = (state, self.backend.render_digest(state, self.base))
        return hit[1]

    def render_fresh(self, states: list[Any]) -> list[str]:
        """One render per state, none remembered (states made for one check and dropped); a
        backend with ``render_digests`` may share the fixed cost of its torch calls between them."""
        self.render_calls += len(states)
        return render_digests(self.backend, states, self.base)

    @property
    def renders(self) -> int:
        return self.render_calls

    def join(self, a: Any, b: Any) -> Any:
        return b if a is None else self.backend.merge(a, b)

    def canonical(self, n: Node) -> Hashable:
        """The visited-set key: the node itself (message pools as multisets), or with symmetry
        its orbit under the replica relabellings that keep every unpublished fragment's home."""
        if self.config.symmetry:
            return self.orbit_key(n)
        return (n.marks, n.published, frozenset(Counter(k for k, _ in n.flight).items()),
                frozenset(Counter(k for k, _ in n.dropped).items()))

    def published_fields(self, published: frozenset[int]) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """The published fragments as the key writes them (count, then each), and per replica
        the fragments homed there and not yet published (count, then each)."""
        got = self._published.get(published)
        if got is None:
            lists: list[list[int]] = [[] for _ in range(self.config.replicas)]
            for f in range(self.config.fragments):
                if f not in published:
                    lists[self.config.home(f)].append(f)
            got = self._published[published] = ((len(published), *sorted(published)),
                                                tuple((len(x), *x) for x in lists))
        return got

    def orbit_key(self, n: Node) -> bytes:
        """A key equal for two nodes iff a relabelling π of the replicas maps one onto the other
        with π(home(f)) = home(f) for every fragment f not yet published.

        Each replica gets a signature that no relabelling changes (its state, the unpublished
        fragments homed there, the messages it sent and is sent, by kind and snapshot); the
        replicas are listed in signature order, and only the orders among replicas with equal
        signatures are tried, keeping the least encoding of the messages' endpoints.  The key is
        those fields written out as integers, every list after its length (so two different
        keys never write the same integers), packed into bytes: a tenth of the memory of the
        nested tuples, and the search keeps one per state."""
        r_count = self.config.replicas
        marks = n.marks
        published, homes = self.published_fields(n.published)
        if not n.flight and not n.dropped:  # no endpoints to relabel: the signatures are the key
            return array("q", [*published, 0, *itertools.chain.from_iterable(
                sorted([(marks[r], *homes[r], 0, 0) for r in range(r_count)]))]).tobytes()
        sent: list[list[tuple[int, int]]] = [[] for _ in range(r_count)]
        got: list[list[tuple[int, int]]] = [[] for _ in range(r_count)]
        messages = []
        for kind, pool in ((0, n.flight), (1, n.dropped)):
            for (src, dst, mark), _ in pool:
                sent[src].append((kind, mark))
                got[dst].append((kind, mark))
                messages.append((kind, src, dst, mark))
        sig = []
        for r in range(r_count):
            out_r, in_r = sorted(sent[r]), sorted(got[r])
            sig.append((marks[r], *homes[r], len(out_r), *itertools.chain.from_iterable(out_r),
                        len(in_r), *itertools.chain.from_iterable(in_r)))
        order = sorted(range(r_count), key=sig.__getitem__)
        groups: list[list[int]] = []
        for r in order:
            if groups and sig[groups[-1][0]] == sig[r]:
                groups[-1].append(r)
            else:
                groups.append([r])
        best: list[tuple[int, int, int, int]] | None = None
        if len(groups) == r_count:  # every signature differs: one order to try
            label = [0] * r_count
            for new, old in enumerate(order):
                label[old] = new
            best = sorted([(kind, label[src], label[dst], mark) for kind, src, dst, mark in messages])
        else:
            for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
                label = [0] * r_count
                for new, old in enumerate(r for g in choice for r in g):
                    label[old] = new
                encoded = sorted([(kind, label[src], label[dst], mark) for kind, src, dst, mark in messages])
                if best is None or encoded < best:
                    best = encoded
        return array("q", [*published, len(messages), *itertools.chain.from_iterable(best or ()),
                           *itertools.chain.from_iterable(sig[r] for r in order)]).tobytes()

    def initial(self) -> Node:
        return Node((None,) * self.config.replicas, (-1,) * self.config.replicas, frozenset(), (), ())

    def apply(self, n: Node, action: Action) -> Node:
        verb = action[0]
        if verb == "publish":
            f = action[1]
            home = self.config.home(f)
            return self._joined(n, home, self.backend.singleton(self.objects[f]), n.published | {f},
                                n.flight, n.dropped)
        if verb == "send":
            _, s, d = action
            return n._replace(flight=n.flight + (((s, d, n.marks[s]), n.states[s]),))
        key = action[1]
        pool = n.dropped if verb == "resend" else n.flight
        i = next(i for i, (k, _) in enumerate(pool) if k == key)
        msg, rest = pool[i], pool[:i] + pool[i + 1:]
        if verb == "resend":
            return n._replace(flight=n.flight + (msg,), dropped=rest)
        if verb == "drop":
            return n._replace(flight=rest, dropped=n.dropped + (msg,))
        return self._joined(n, key[1], msg[1], n.published, n.flight if verb == "duplicate" else rest,
                            n.dropped)

    def _joined(self, n: Node, replica: int, incoming: Any, published: frozenset[int],
                flight: tuple[tuple[Message, Any], ...], dropped: tuple[tuple[Message, Any], ...]) -> Node:
        """``n`` with ``incoming`` joined into ``replica``'s state (a new state object)."""
        states, marks = list(n.states), list(n.marks)
        states[replica] = self.join(states[replica], incoming)
        marks[replica] = self.mark(states[replica])
        return Node(tuple(states), tuple(marks), published, flight, dropped)

    def successors(self, n: Node) -> list[Action]:
        out: list[Action] = [("publish", f) for f in range(self.config.fragments) if f not in n.published]
        if len(n.flight) + len(n.dropped) < self.config.in_flight:
            out += [("send", s, d) for s in range(self.config.replicas) if n.states[s] is not None
                    for d in range(self.config.replicas) if d != s]
        for key in dict.fromkeys(k for k, _ in n.flight):
            out += [("deliver", key), ("duplicate", key), ("drop", key)]
        out += [("resend", key) for key in dict.fromkeys(k for k, _ in n.dropped)]
        return out

    def flush(self, n: Node) -> list[Action]:
        """Finish publishing and deliver every message (re-sending the dropped ones)."""
        actions: list[Action] = [("publish", f) for f in range(self.config.fragments) if f not in n.published]
        actions += [("deliver", k) for k, _ in n.flight]
        for k, _ in n.dropped:
            actions += [("resend", k), ("deliver", k)]
        return actions

    def all_to_all(self, n: Node) -> list[Action]:
        """Every replica that holds something sends to every other, then all of it is delivered."""
        pairs = [(s, d) for s in range(self.config.replicas) if n.states[s] is not None
                 for d in range(self.config.replicas) if s != d]
        return [("send", s, d) for s, d in pairs] + [("exchange", s, d) for s, d in pairs]

    def fair_exchange(self, n: Node) -> list[Action]:
        """Flush, then all-to-all (no in-flight bound: fairness is what is assumed)."""
        flushed, _ = self.run_actions(n, self.flush(n))
        return self.flush(n) + self.all_to_all(flushed)

    def run_actions(self, n: Node, actions: Sequence[Action]) -> tuple[Node, list[Action]]:
        """Apply actions; ``("exchange", s, d)`` delivers the send from s to d made in this batch."""
        concrete: list[Action] = []
        sent: dict[tuple[int, int], Hashable] = {}
        for a in actions:
            if a[0] == "exchange":
                a = ("deliver", sent[(a[1], a[2])])
            elif a[0] == "send":
                sent[(a[1], a[2])] = (a[1], a[2], n.marks[a[1]])
            n = self.apply(n, a)
            concrete.append(a)
        return n, concrete

    def union_render(self) -> str:
        state = None
        for obj in self.objects:
            state = self.join(state, self.backend.singleton(obj))
        return self.render(state)

    def facts(self, n: Node, parent: Node | None = None, inherited: Facts = ()) -> Facts:
        """Per replica, a ``[set number, render digest or None]`` record of its state object (None:
        holds nothing).  A state object the parent node holds too shares the parent's record, so
        an object is rendered once while some node in the search still holds it, and a record
        goes when the last node holding its object does (nothing is keyed by set)."""
        out: list[list[Any] | None] = []
        for state in n.states:
            record = None
            if state is not None:
                if parent is not None:
                    record = next((f for p, f in zip(parent.states, inherited) if p is state), None)
                if record is None:
                    record = [self.set_number(state), None]
            out.append(record)
        return tuple(out)

    def first_violation(self, batch: Sequence[tuple[Node, Facts]], union: str, fair_exchange: bool
                        ) -> tuple[int, str, tuple[int, int] | None] | None:
        """The first node of ``batch`` (in order) that breaks a check, as (index, kind, pair):

        - "same-set": two replicas hold equal sets (``backend.abstract``) but their renders
          differ (``pair``, the first such pair);
        - "fair-exchange" (when ``fair_exchange``): after ``exchanged(n)`` a replica holds
          nothing, or one's render is not ``union``.

        Every state these compare is rendered by its own call: a replica's state once per object
        (its facts record), each exchanged state afresh; all of the batch's renders go to the
        backend together, so they may share the fixed cost of its torch calls, never bytes."""
        jobs: list[tuple[Any, list[Any] | None]] = []  # (state, the record its digest fills)
        queued: set[int] = set()                          # ids of the records already in jobs
        plans = []
        for n, facts in batch:
            live = [(i, n.states[i], f) for i, f in enumerate(facts) if f is not None]
            pairs = [(a, b) for x, a in enumerate(live) for b in live[x + 1:] if a[2][0] == b[2][0]]
            for _, state, record in itertools.chain.from_iterable(pairs):
                if record[1] is None and id(record) not in queued:
                    queued.add(id(record))
                    jobs.append((state, record))
            exchanged, first = None, 0
            if fair_exchange:
                exchanged = self.exchanged(n)
                if all(s is not None for s in exchanged):
                    first = len(jobs)
                    jobs += [(s, None) for s in exchanged]
                else:
                    exchanged = None  # a replica holds nothing: fails without a render
            plans.append((pairs, first, exchanged))
        digests = self.render_fresh([state for state, _ in jobs])
        for (_, record), digest in zip(jobs, digests):
            if record is not None:
                record[1] = digest
        for index, (pairs, first, exchanged) in enumerate(plans):
            for (i, _, a), (j, _, b) in pairs:
                if a[1] != b[1]:
                    return index, "same-set", (i, j)
            if fair_exchange and (exchanged is None
                                  or any(d != union for d in digests[first:first + len(exchanged)])):
                return index, "fair-exchange", None
        return None

    def exchanged(self, n: Node) -> list[Any]:
        """The replicas' states after ``fair_exchange(n)``, by the same merges in the same order
        as running its actions (``run_actions``), without building the intermediate nodes: a
        flush (publish the rest at home, deliver the flight in order, re-send and deliver the
        dropped in order), then every replica sends its snapshot to every other and each
        replica joins the snapshots in sender order."""
        states = list(n.states)
        for f in range(self.config.fragments):
            if f not in n.published:
                home = self.config.home(f)
                states[home] = self.join(states[home], self.backend.singleton(self.objects[f]))
        for (_, dst, _), snapshot in (*n.flight, *n.dropped):
            states[dst] = self.join(states[dst], snapshot)
        snapshots = list(states)
        for src, snapshot in enumerate(snapshots):
            if snapshot is None:
                continue
            for dst in range(self.config.replicas):
                if dst != src:
                    states[dst] = self.join(states[dst], snapshot)
        return states


def explore(backend: Backend, universe: Universe, config: GossipConfig = GossipConfig(), *,
            backend_name: str | None = None, mutant: str | None = None, fair_exchange: bool = True,
            progress: Progress = no_progress) -> GossipResult:
    """Breadth-first exploration; stops at the first violation (the shallowest one).

    ``fair_exchange=False`` checks only the safety property (equal sets render equal).  The cyclic
    collector is off while it runs: the seen-set only grows, so every full collection would walk
    all of it again (a tenth of the time at 100,000 states, more as it grows); what the search
    drops is freed by reference counting, and the collector is back on when it returns."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(backend, universe, config, backend_name, mutant, fair_exchange, progress)
    finally:
        if collecting:
            gc.enable()


def _explore(backend: Backend, universe: Universe, config: GossipConfig, backend_name: str | None,
             mutant: str | None, fair_exchange: bool, progress: Progress) -> GossipResult:
    config.validate(universe)
    started = time.perf_counter()
    world = _World(backend, universe, config)
    result = GossipResult(config, universe.name)
    union = world.union_render()
    root = world.initial()
    root_key = world.canonical(root)
    # every state reached: its parent and the move from it (the trace); only the frontier's
    # nodes are held, so a state object is freed once no node waiting to be expanded holds it
    parent: dict[Hashable, tuple[Hashable, Action] | None] = {root_key: None}
    # reached but not yet checked: checked CHECK_BATCH at a time, in the order reached, so their
    # renders go to the backend together; with each node, the counts when it was reached, to
    # report a violation exactly as if every node had been checked the moment it was reached
    pending: list[tuple[Hashable, Node, int, Facts, tuple[int, int, int, bool]]] = []

    def check_pending() -> bool:
        found = world.first_violation([(n, facts) for _, n, _, facts, _ in pending], union, fair_exchange)
        checked = len(pending) if found is None else found[0]
        result.fair_exchanges += checked if fair_exchange else 0
        if found is None:
            pending.clear()
            return True
        index, result.kind, pair = found
        key, n, depth, _, (result.states, result.transitions, result.depth, result.exhaustive) = pending[index]
        result.violation_depth = depth
        if result.kind == "fair-exchange":
            result.fair_exchanges += 1
        tail = world.fair_exchange(n) if result.kind == "fair-exchange" else []
        result.violation = _trace(world, universe, parent, key, tail, pair, backend_name, mutant)
        return False

    root_facts = world.facts(root)
    pending.append((root_key, root, 0, root_facts, (1, 0, 0, True)))
    queue = deque([(root_key, root, 0, root_facts)])
    popped = 0
    ok = True
    while ok and queue:
        key, n, depth, facts = queue.popleft()
        popped += 1
        if popped % 2000 == 0:
            progress(f"gossip {universe.name}: states", len(parent), 0)
        if config.max_depth is not None and depth >= config.max_depth:
            result.exhaustive = bool(result.exhaustive and not world.successors(n))
            continue
        for action in world.successors(n):
            child = world.apply(n, action)
            result.transitions += 1
            ck = world.canonical(child)
            if ck in parent:
                continue
            if len(parent) >= config.max_states:
                result.exhaustive = False
                queue.clear()
                break
            parent[ck] = (key, action)
            result.depth = max(result.depth, depth + 1)
            child_facts = world.facts(child, n, facts)
            queue.append((ck, child, depth + 1, child_facts))
            pending.append((ck, child, depth + 1, child_facts,
                            (len(parent), result.transitions, result.depth, result.exhaustive)))
        if len(pending) >= CHECK_BATCH or not queue:
            ok = check_pending()
    if ok and pending:
        ok = check_pending()
    if ok:
        result.states = len(parent)
    result.renders = world.renders
    result.seconds = time.perf_counter() - started
    progress(f"gossip {universe.name}: states", result.states, result.states)
    return result


def _path(parent: dict, key: Hashable) -> list[Action]:
    actions: list[Action] = []
    while parent[key] is not None:
        key, action = parent[key]
        actions.append(action)
    return actions[::-1]


def _trace(world: _World, universe: Universe, parent: dict, key: Hashable,
           tail: list[Action], pair: tuple[int, int] | None, backend_name: str | None,
           mutant: str | None) -> dict[str, Any]:
    """The shortest path to ``key`` (plus the fair exchange, if that is what failed) as a trace
    whose messages are named by the op number of their send."""
    _, concrete = world.run_actions(world.initial(), _path(parent, key) + tail)
    ops: list[dict[str, Any]] = []
    flight: list[tuple[int, Hashable]] = []    # (op number of the send, message key), pool order
    dropped: list[tuple[int, Hashable]] = []
    node = world.initial()
    for a in concrete:
        verb = a[0]
        if verb == "publish":
            ops.append({"op": "publish", "replica": world.config.home(a[1]), "fragment": a[1]})
        elif verb == "send":
            flight.append((len(ops), (a[1], a[2], node.marks[a[1]])))
            ops.append({"op": "send", "src": a[1], "dst": a[2]})
        else:
            pool = dropped if verb == "resend" else flight
            i = next(i for i, (_, k) in enumerate(pool) if k == a[1])  # the explorer's choice
            msg = pool[i]
            if verb != "duplicate":
                pool.pop(i)
            if verb == "drop":
                dropped.append(msg)
            elif verb == "resend":
                flight.append(msg)
            ops.append({"op": verb, "msg": msg[0]})
        node = world.apply(node, a)
    from modelcheck.trace_replay import replay_gossip_ops  # late: replay imports this module

    states = replay_gossip_ops(world.backend, world.objects, ops, world.config.replicas)
    if pair is not None:
        expect: list[dict[str, Any]] = [{"kind": "same_set_same_render", "replicas": list(pair)}]
        expected, observed = world.render(states[pair[0]]), world.render(states[pair[1]])
        check = "gossip: equal sets render equal"
    else:
        expect = [{"kind": "converged"}]
        expected = world.union_render()
        observed = next((("(holds nothing)" if s is None else world.render(s)) for s in states
                         if s is None or world.render(s) != expected), expected)
        check = "gossip: fair exchange converges"
    c = world.config
    note = (f"{c.replicas} replicas, {c.fragments} fragments, in-flight bound {c.in_flight}; "
            f"{len(_path(parent, key))} step(s) to the violating state"
            + (", then a fair exchange" if tail else ""))
    return make_trace(kind="gossip", check=check, claim="C7", backend=backend_name or world.backend.name,
                      mutant=mutant, universe=universe.name, geometry=universe.geometry,
                      fragments={i: universe.fragments[i] for i in range(c.fragments)}, ops=ops,
                      expect=expect, expected=expected, observed=observed, note=note,
                      gossip={"replicas": c.replicas}, base=world.base,
                      iteration=current_iteration_order())
