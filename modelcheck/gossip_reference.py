"""An independent count of the gossip model (claim C7): every reachable state of the abstract
model and the moves each offers, enumerated from the model's documented semantics.

Written apart from ``gossip_model`` and never calling it, so that a fault in the explorer's move
generation or counting shows as a difference in a count rather than being repeated here.  A
replica's state is the frozenset of the fragment indices it holds (empty: it holds nothing); a
message is ``(src, dst, snapshot)`` with the snapshot as a sorted tuple of indices; the flight and
dropped pools are multisets of messages (sorted tuples); the moves are the documented ones:

- publish fragment ``f`` at its home replica, once (``f`` not yet published);
- send from a replica that holds something to any other, while the messages in flight plus the
  dropped ones are fewer than the in-flight bound;
- per distinct message in flight: deliver it (its snapshot joins its destination, one copy
  leaves the flight), duplicate it (the snapshot joins, the copy stays), drop it (one copy moves
  to the dropped pool);
- per distinct dropped message: re-send it (one copy back into flight).

With drop folding there are no drop and no re-send moves.  For a backend whose states are one
to one with the sets they hold (a CvRDT), the explorer's plain search must reach exactly these
states by exactly these moves: its ``states``, ``transitions`` (moves taken from every state
reached, into new states or known ones) and ``depth`` are this module's, and with folding its
``folded_moves`` (a drop per distinct message in flight, per state) and ``unfolded_states`` (the
ways each state's messages split into in flight and dropped, summed) too."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

Snapshot = tuple[int, ...]
Msg = tuple[int, int, Snapshot]
State = tuple[tuple[frozenset[int], ...], frozenset[int], tuple[Msg, ...], tuple[Msg, ...]]


@dataclass(frozen=True)
class Counts:
    """What an exhaustive breadth-first enumeration of one configuration found."""

    states: int
    transitions: int
    depth: int
    folded_moves: int     # with folding: drops not offered (a distinct message in flight, per state); else 0
    unfolded_states: int  # with folding: the sum of each state's splits; else 0
    levels: tuple[int, ...] = ()  # states first reached at each depth 0, 1, ... (a depth-bounded search's count)


def count(replicas: int, fragments: int, in_flight: int, homes: tuple[int, ...] | None, *,
          fold_drops: bool) -> Counts:
    """Enumerate the abstract model breadth first from the state where nothing is published
    (``homes``: each fragment's home replica, None for round-robin)."""
    home = [homes[f] if homes is not None else f % replicas for f in range(fragments)]
    start: State = (tuple(frozenset() for _ in range(replicas)), frozenset(), (), ())
    depth_of = {start: 0}
    queue = deque([start])
    transitions = folded_moves = unfolded = 0
    while queue:
        state = queue.popleft()
        moves = _moves(state, home, replicas, in_flight, fold_drops)
        transitions += len(moves)
        if fold_drops:
            folded_moves += len(set(state[2]))
            unfolded += _splits(state[2])
        for child in moves:
            if child not in depth_of:
                depth_of[child] = depth_of[state] + 1
                queue.append(child)
    deepest = max(depth_of.values())
    levels = [0] * (deepest + 1)
    for d in depth_of.values():
        levels[d] += 1
    return Counts(len(depth_of), transitions, deepest, folded_moves, unfolded, tuple(levels))


def _moves(state: State, home: list[int], replicas: int, in_flight: int, fold_drops: bool) -> list[State]:
    """The state each offered move leads to, one entry per move (repeats kept)."""
    held, published, flight, dropped = state
    out: list[State] = []
    for f, at in enumerate(home):
        if f not in published:
            out.append((_joined(held, at, frozenset({f})), published | {f}, flight, dropped))
    if len(flight) + len(dropped) < in_flight:
        for src in range(replicas):
            if held[src]:
                snapshot = tuple(sorted(held[src]))
                for dst in range(replicas):
                    if dst != src:
                        out.append((held, published, _with(flight, (src, dst, snapshot)), dropped))
    for msg in sorted(set(flight)):
        joined = _joined(held, msg[1], frozenset(msg[2]))
        out.append((joined, published, _without(flight, msg), dropped))   # deliver
        out.append((joined, published, flight, dropped))                  # duplicate
        if not fold_drops:
            out.append((held, published, _without(flight, msg), _with(dropped, msg)))  # drop
    if not fold_drops:
        for msg in sorted(set(dropped)):
            out.append((held, published, _with(flight, msg), _without(dropped, msg)))  # re-send
    return out


def _joined(held: tuple[frozenset[int], ...], replica: int, incoming: frozenset[int]) -> tuple[frozenset[int], ...]:
    return tuple(s | incoming if r == replica else s for r, s in enumerate(held))


def _with(pool: tuple[Msg, ...], msg: Msg) -> tuple[Msg, ...]:
    return tuple(sorted((*pool, msg)))


def _without(pool: tuple[Msg, ...], msg: Msg) -> tuple[Msg, ...]:
    """One copy of ``msg`` out of the multiset."""
    i = pool.index(msg)
    return pool[:i] + pool[i + 1:]


def _splits(pool: tuple[Msg, ...]) -> int:
    """Ways to split a multiset into in flight and dropped: (copies + 1) per distinct message."""
    total = 1
    for msg in set(pool):
        total *= pool.count(msg) + 1
    return total
