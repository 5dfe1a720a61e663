"""The gossip model (claim C7): replicas exchanging state over an unreliable network.

R replicas; F fragments, each published once at its home replica.  Messages are state-based (a
message carries the sender's state snapshot).  The network may deliver any in-flight message
next (reorder), deliver it and keep it in flight (duplicate), or drop it; a dropped message may be
re-sent.  Messages in flight plus dropped-awaiting-resend are bounded by ``in_flight``.

With ``fold_drops`` the network has no drop and no resend moves, and a message the network
would have dropped is one it has not delivered yet.  That is exact for what the search checks: a
dropped message can only be re-sent (back into flight) or wait, and the in-flight bound counts it
either way, so the states reached without those moves are exactly the states of the full model
with every dropped message moved back into flight (the same replica states, the same multiset of
messages); every state of the full model is one of those with some of its messages set aside,
so the full model's state count is the sum, over the folded states, of the ways to split each
one's messages into flight and dropped (``splits``).  The checks read the replica states and the
messages, whichever pool they wait in.

This module is the transition relation only: global states (``Node``), the moves out of each,
and the fair exchange a check runs from a state.  What is checked at a state lives in
``gossip_verdict``, the replica relabellings in ``gossip_symmetry``, the search in ``gossip``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from modelcheck.backend import Backend, Universe
from spec import ArgumentError
from spec.arguments import integer

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
    symmetry: bool = False  # explore one state per orbit of replica relabellings (gossip_symmetry)
    fold_drops: bool = False  # no drop/resend moves: a dropped message is one not delivered yet (below)

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


def plain_key(n: Node) -> Hashable:
    """The node itself as the visited set keeps it: replica marks, the publications, and the
    message pools as multisets (the order messages wait in is no part of the state)."""
    return (n.marks, n.published, frozenset(Counter(k for k, _ in n.flight).items()),
            frozenset(Counter(k for k, _ in n.dropped).items()))


def splits(flight: frozenset) -> int:
    """In how many ways a message multiset (``plain_key``'s ``(key, count)`` pairs) can be split
    into in flight and dropped: the number of the full model's states one folded state stands for."""
    total = 1
    for _, count in flight:
        total *= count + 1
    return total


def folded(key: Hashable) -> Hashable:
    """A ``plain_key`` with its dropped messages moved back into flight (the folded state it is)."""
    marks, published, flight, dropped = key  # type: ignore[misc]
    both = Counter(dict(flight))
    both.update(dict(dropped))
    return (marks, published, frozenset(both.items()), frozenset())


class GossipModel:
    """The transition relation over ``Node``s for one backend and one set of fragments."""

    def __init__(self, backend: Backend, universe: Universe, config: GossipConfig) -> None:
        self.backend, self.config = backend, config
        self.objects = [backend.build(universe.geometry, d) for d in universe.fragments[:config.fragments]]
        self.base = universe.base
        self._numbers: dict[Hashable, int] = {}           # state key -> its mark

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

    def join(self, a: Any, b: Any) -> Any:
        return b if a is None else self.backend.merge(a, b)

    def initial(self) -> Node:
        return Node((None,) * self.config.replicas, (self.mark(None),) * self.config.replicas, frozenset(), (), ())

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
        moves = ("deliver", "duplicate") if self.config.fold_drops else ("deliver", "duplicate", "drop")
        for key in dict.fromkeys(k for k, _ in n.flight):
            out += [(verb, key) for verb in moves]
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

    def union(self) -> Any:
        """One replica's state holding every fragment, joined in fragment order."""
        state = None
        for obj in self.objects:
            state = self.join(state, self.backend.singleton(obj))
        return state

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
