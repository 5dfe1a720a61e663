"""A gossip counterexample as a replayable trace: the shortest path the search found to the
violating state (plus the fair exchange, when that is what failed), with its messages named by
the op number of their send, re-run on the backend to record what it observes."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from modelcheck.backend import Universe
from modelcheck.gossip_model import Action, GossipModel
from modelcheck.gossip_verdict import Verdict
from modelcheck.gossip_visited import Visited
from modelcheck.trace import make_trace
from modelcheck.trace_replay import replay_gossip_ops
from spec.fragment_set import current_iteration_order

Parents = dict[Hashable, Any]  # state key -> (parent key, action, ...) or None at the root


def path(parent: Parents, key: Hashable) -> list[Action]:
    """The moves from the root to ``key``, by the parent pointers the search kept."""
    actions: list[Action] = []
    while parent[key] is not None:
        key, action = parent[key][:2]
        actions.append(action)
    return actions[::-1]


def gossip_trace(model: GossipModel, verdict: Verdict, universe: Universe, parent: Parents | Visited, key: Hashable,
                 tail: list[Action], pair: tuple[int, int] | None, backend_name: str | None,
                 mutant: str | None) -> dict[str, Any]:
    """The shortest path to ``key`` (plus the fair exchange, if that is what failed) as a trace
    whose messages are named by the op number of their send.  ``parent``: the parent pointers by
    key (the sharded search), or the visited table (``key`` a row)."""
    steps = parent.path(key) if isinstance(parent, Visited) else path(parent, key)  # type: ignore[arg-type]
    _, concrete = model.run_actions(model.initial(), steps + tail)
    ops: list[dict[str, Any]] = []
    flight: list[tuple[int, Hashable]] = []    # (op number of the send, message key), pool order
    dropped: list[tuple[int, Hashable]] = []
    node = model.initial()
    for a in concrete:
        verb = a[0]
        if verb == "publish":
            ops.append({"op": "publish", "replica": model.config.home(a[1]), "fragment": a[1]})
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
        node = model.apply(node, a)
    states = replay_gossip_ops(model.backend, model.objects, ops, model.config.replicas)
    if pair is not None:
        expect: list[dict[str, Any]] = [{"kind": "same_set_same_render", "replicas": list(pair)}]
        expected, observed = verdict.render(states[pair[0]]), verdict.render(states[pair[1]])
        check = "gossip: equal sets render equal"
    else:
        expect = [{"kind": "converged"}]
        expected = verdict.union_render()
        observed = next((("(holds nothing)" if s is None else verdict.render(s)) for s in states
                         if s is None or verdict.render(s) != expected), expected)
        check = "gossip: fair exchange converges"
    c = model.config
    note = (f"{c.replicas} replicas, {c.fragments} fragments, in-flight bound {c.in_flight}; "
            f"{len(steps)} step(s) to the violating state" + (", then a fair exchange" if tail else ""))
    return make_trace(kind="gossip", check=check, claim="C7", backend=backend_name or model.backend.name,
                      mutant=mutant, universe=universe.name, geometry=universe.geometry,
                      fragments={i: universe.fragments[i] for i in range(c.fragments)}, ops=ops,
                      expect=expect, expected=expected, observed=observed, note=note,
                      gossip={"replicas": c.replicas}, base=model.base,
                      iteration=current_iteration_order())
