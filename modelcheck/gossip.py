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
The only memo is by state *object*, so one object is not rendered twice."""

from __future__ import annotations

import gc
import itertools
import time
from collections import Counter, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck.backend import Backend, Universe
from modelcheck.trace import make_trace
from spec import InputError, Progress, no_progress
from spec.fragment_set import current_iteration_order

Action = tuple  # ("publish", f) | ("send", s, d) | (verb, message key), verb in deliver/duplicate/drop/resend


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
        if not 2 <= self.replicas <= 8:
            raise InputError(f"--replicas must be 2..8, got {self.replicas}")
        if not 1 <= self.fragments <= len(universe.fragments):
            raise InputError(f"--fragments must be 1..{len(universe.fragments)} for universe "
                             f"{universe.name!r}, got {self.fragments}")
        if not 1 <= self.in_flight <= 6:
            raise InputError(f"--in-flight must be 1..6, got {self.in_flight}")
        if self.homes is not None and (len(self.homes) != self.fragments
                                       or any(not 0 <= h < self.replicas for h in self.homes)):
            raise InputError("homes must name one replica per fragment")
        if self.max_states < 1 or (self.max_depth is not None and self.max_depth < 0):
            raise InputError("the state and depth bounds must be positive")


@dataclass(frozen=True)
class Node:
    states: tuple[Any, ...]        # per replica: a backend state, or None before it holds anything
    published: frozenset[int]
    flight: tuple[tuple[Hashable, Any], ...]   # (message key, snapshot); key = (src, dst, state key)
    dropped: tuple[tuple[Hashable, Any], ...]


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
        self._keys: dict[int, tuple[Any, Hashable]] = {}  # id(state) -> (state kept alive, state key)
        self._numbers: dict[Hashable, int] = {}           # state key -> a small number (orbit keys)
        self.render_calls = 0

    def key_of(self, state: Any) -> Hashable:
        """``backend.state_key``, computed once per state object (a pure description of it)."""
        if state is None:
            return None
        hit = self._keys.get(id(state))
        if hit is None or hit[0] is not state:
            hit = self._keys[id(state)] = (state, self.backend.state_key(state))
        return hit[1]

    def number(self, key: Hashable) -> int:
        """A small number per distinct state key (-1: holds nothing), fixed for the whole run."""
        if key is None:
            return -1
        got = self._numbers.get(key)
        if got is None:
            got = self._numbers[key] = len(self._numbers)
        return got

    def render(self, state: Any) -> str:
        """Render digest of this state object (one call per object, never shared by set)."""
        hit = self._renders.get(id(state))
        if hit is None or hit[0] is not state:
            self.render_calls += 1
            hit = self._renders[id(state)] = (state, self.backend.render_digest(state, self.base))
        return hit[1]

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
        return (tuple(self.key_of(s) for s in n.states), n.published,
                frozenset(Counter(k for k, _ in n.flight).items()),
                frozenset(Counter(k for k, _ in n.dropped).items()))

    def orbit_key(self, n: Node) -> Hashable:
        """A key equal for two nodes iff a relabelling π of the replicas maps one onto the other
        with π(home(f)) = home(f) for every fragment f not yet published.

        Each replica gets a signature that no relabelling changes (its state, the unpublished
        fragments homed there, the messages it sent and is sent, by kind and snapshot); the
        replicas are listed in signature order, and only the orders among replicas with equal
        signatures are tried, keeping the least encoding of the messages' endpoints."""
        r_count = self.config.replicas
        keys = [self.number(self.key_of(s)) for s in n.states]
        homes: list[list[int]] = [[] for _ in range(r_count)]
        for f in range(self.config.fragments):
            if f not in n.published:
                homes[self.config.home(f)].append(f)
        sent: list[list[tuple[int, int]]] = [[] for _ in range(r_count)]
        got: list[list[tuple[int, int]]] = [[] for _ in range(r_count)]
        messages = []
        for kind, pool in ((0, n.flight), (1, n.dropped)):
            for (src, dst, key), _ in pool:
                number = self.number(key)
                sent[src].append((kind, number))
                got[dst].append((kind, number))
                messages.append((kind, src, dst, number))
        sig = [(keys[r], tuple(homes[r]), tuple(sorted(sent[r])), tuple(sorted(got[r]))) for r in range(r_count)]
        order = sorted(range(r_count), key=sig.__getitem__)
        groups: list[list[int]] = []
        for r in order:
            if groups and sig[groups[-1][0]] == sig[r]:
                groups[-1].append(r)
            else:
                groups.append([r])
        best: tuple | None = None
        for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
            label = [0] * r_count
            for new, old in enumerate(r for g in choice for r in g):
                label[old] = new
            encoded = tuple(sorted((kind, label[src], label[dst], number) for kind, src, dst, number in messages))
            if best is None or encoded < best:
                best = encoded
        return (tuple(sig[r] for r in order), n.published, best)

    def initial(self) -> Node:
        return Node((None,) * self.config.replicas, frozenset(), (), ())

    def apply(self, n: Node, action: Action) -> Node:
        verb = action[0]
        states = list(n.states)
        if verb == "publish":
            f = action[1]
            home = self.config.home(f)
            states[home] = self.join(states[home], self.backend.singleton(self.objects[f]))
            return Node(tuple(states), n.published | {f}, n.flight, n.dropped)
        if verb == "send":
            _, s, d = action
            return Node(n.states, n.published, n.flight + (((s, d, self.key_of(states[s])), states[s]),), n.dropped)
        key = action[1]
        pool = n.dropped if verb == "resend" else n.flight
        i = next(i for i, (k, _) in enumerate(pool) if k == key)
        msg, rest = pool[i], pool[:i] + pool[i + 1:]
        if verb == "resend":
            return Node(n.states, n.published, n.flight + (msg,), rest)
        if verb == "drop":
            return Node(n.states, n.published, rest, n.dropped + (msg,))
        dst = key[1]
        states[dst] = self.join(states[dst], msg[1])
        return Node(tuple(states), n.published, n.flight if verb == "duplicate" else rest, n.dropped)

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
                sent[(a[1], a[2])] = (a[1], a[2], self.key_of(n.states[a[1]]))
            n = self.apply(n, a)
            concrete.append(a)
        return n, concrete

    def union_render(self) -> str:
        state = None
        for obj in self.objects:
            state = self.join(state, self.backend.singleton(obj))
        return self.render(state)

    def same_set_violation(self, n: Node) -> tuple[int, int] | None:
        live = [(i, s) for i, s in enumerate(n.states) if s is not None]
        for x, (i, a) in enumerate(live):
            for j, b in live[x + 1:]:
                if self.backend.abstract(a) == self.backend.abstract(b) and self.render(a) != self.render(b):
                    return i, j
        return None

    def converged(self, n: Node, union: str) -> bool:
        return self.converged_states(n.states, union)

    def converged_states(self, states: Sequence[Any], union: str) -> bool:
        return all(s is not None and self.render(s) == union for s in states)

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
    nodes: dict[Hashable, Node] = {root_key: root}
    parent: dict[Hashable, tuple[Hashable, Action] | None] = {root_key: None}
    depth = {root_key: 0}
    queue = deque([root_key])

    def check(key: Hashable) -> bool:
        n = nodes[key]
        result.violation_depth = depth[key]
        pair = world.same_set_violation(n)
        if pair is not None:
            result.kind = "same-set"
            result.violation = _trace(world, universe, nodes, parent, key, [], pair, backend_name, mutant)
            return False
        if not fair_exchange:
            return True
        result.fair_exchanges += 1
        if not world.converged_states(world.exchanged(n), union):
            result.kind = "fair-exchange"
            result.violation = _trace(world, universe, nodes, parent, key, world.fair_exchange(n), None,
                                      backend_name, mutant)
            return False
        return True

    ok = check(root_key)
    popped = 0
    while ok and queue:
        key = queue.popleft()
        popped += 1
        if popped % 2000 == 0:
            progress(f"gossip {universe.name}: states", len(nodes), 0)
        n = nodes[key]
        if config.max_depth is not None and depth[key] >= config.max_depth:
            result.exhaustive = bool(result.exhaustive and not world.successors(n))
            continue
        for action in world.successors(n):
            child = world.apply(n, action)
            result.transitions += 1
            ck = world.canonical(child)
            if ck in nodes:
                continue
            if len(nodes) >= config.max_states:
                result.exhaustive = False
                queue.clear()
                break
            nodes[ck], parent[ck], depth[ck] = child, (key, action), depth[key] + 1
            result.depth = max(result.depth, depth[ck])
            queue.append(ck)
            if not check(ck):
                ok = False
                break
    result.states = len(nodes)
    result.renders = world.renders
    result.seconds = time.perf_counter() - started
    progress(f"gossip {universe.name}: states", len(nodes), len(nodes))
    return result


def _path(parent: dict, key: Hashable) -> list[Action]:
    actions: list[Action] = []
    while parent[key] is not None:
        key, action = parent[key]
        actions.append(action)
    return actions[::-1]


def _trace(world: _World, universe: Universe, nodes: dict, parent: dict, key: Hashable,
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
            flight.append((len(ops), (a[1], a[2], world.key_of(node.states[a[1]]))))
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
    from modelcheck.replay import replay_gossip_ops  # late: replay imports this module

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
