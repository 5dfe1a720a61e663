"""Re-execute a saved counterexample trace on a backend and say whether the violation reproduces.

The caller passes the backend to replay on (the CLI rebuilds realstate's backend with the planted
engine the trace names).  Renders use the trace's base position and FragmentSet iteration order.
Digests are compared with the recorded ones too: a different backend (or a changed render) can
reproduce the violation with other bytes, and the report says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck.backend import Backend
from modelcheck.program import failed_expectations, run_program
from modelcheck.trace import fragments_of
from spec.fragment_set import iteration_order, reseed_shuffle


@dataclass
class ReplayResult:
    reproduced: bool
    expected: str
    observed: str
    same_bytes: bool          # observed digests equal the recorded ones
    notes: list[str] = field(default_factory=list)


def _join(backend: Backend, a: Any, b: Any) -> Any:
    return b if a is None else backend.merge(a, b)


def replay_gossip_ops(backend: Backend, objects: Mapping[int, Any] | Sequence[Any],
                      ops: Sequence[Mapping[str, Any]], replicas: int) -> list[Any]:
    """Run gossip ops (messages named by the op number of their send); the replicas' states."""
    states: list[Any] = [None] * replicas
    flight: dict[int, tuple[int, Any]] = {}     # send op number -> (dst, snapshot)
    dropped: dict[int, tuple[int, Any]] = {}
    for k, op in enumerate(ops):
        verb = op["op"]
        if verb == "publish":
            r = op["replica"]
            states[r] = _join(backend, states[r], backend.singleton(objects[op["fragment"]]))
        elif verb == "send":
            if states[op["src"]] is None:
                raise ValueError(f"op {k}: replica {op['src']} has nothing to send")
            flight[k] = (op["dst"], states[op["src"]])
        else:
            msg_id = op["msg"]
            pool = dropped if verb == "resend" else flight
            if msg_id not in pool:
                where = "dropped" if verb == "resend" else "in flight"
                raise ValueError(f"op {k}: message {msg_id} is not {where}")
            dst, snapshot = pool[msg_id] if verb == "duplicate" else pool.pop(msg_id)
            if verb == "drop":
                dropped[msg_id] = (dst, snapshot)
            elif verb == "resend":
                flight[msg_id] = (dst, snapshot)
            else:
                states[dst] = _join(backend, states[dst], snapshot)
    return states


class _Delivered:
    """The ops' own bookkeeping as a backend: a state is the set of fragment numbers delivered to
    it (published there, or carried by a snapshot it joined), whatever a real merge kept."""

    def singleton(self, fragment: int) -> frozenset[int]:
        return frozenset({fragment})

    def merge(self, a: frozenset[int], b: frozenset[int]) -> frozenset[int]:
        return a | b


def delivered_fragments(ops: Sequence[Mapping[str, Any]], fragments: Sequence[int], replicas: int
                        ) -> list[frozenset[int]]:
    """Per replica, the fragments the ops delivered to it (empty: nothing), by the same op
    semantics as ``replay_gossip_ops``: what a replica was sent, not what its backend state kept."""
    got = replay_gossip_ops(_Delivered(), {f: f for f in fragments}, ops, replicas)  # type: ignore[arg-type]
    return [frozenset() if s is None else s for s in got]


def _replay_gossip(backend: Backend, trace: dict[str, Any], objects: dict[int, Any]) -> tuple[bool, str, str]:
    replicas = trace["gossip"]["replicas"]
    states = replay_gossip_ops(backend, objects, trace["ops"], replicas)
    base = trace.get("base", 0)
    expect = trace["expect"][0]
    if expect["kind"] == "same_set_same_render":
        i, j = expect["replicas"]
        if states[i] is None or states[j] is None:
            return False, "", "a replica holds nothing"
        if backend.abstract(states[i]) != backend.abstract(states[j]):
            return False, "", "the replicas hold different sets"
        a, b = backend.render_digest(states[i], base), backend.render_digest(states[j], base)
        return a != b, a, b
    # a convergence violation is judged after a complete exchange: every replica delivered every
    # fragment (a trace cut short leaves a replica behind, which is no violation of C7)
    delivered = delivered_fragments(trace["ops"], sorted(objects), replicas)
    behind = next((r for r, got in enumerate(delivered) if got != set(objects)), None)
    if behind is not None:
        return False, "", f"replica {behind} was delivered fragments {sorted(delivered[behind])} of {sorted(objects)}"
    union = None
    for i in sorted(objects):
        union = _join(backend, union, backend.singleton(objects[i]))
    want = backend.render_digest(union, base)
    for s in states:
        got = "(holds nothing)" if s is None else backend.render_digest(s, base)
        if got != want:
            return True, want, got
    return False, want, want


def replay(trace: dict[str, Any], backend: Backend) -> ReplayResult:
    """Replay a validated trace on ``backend`` (built by the caller, with the trace's mutant)."""
    notes = []
    if backend.name != trace["backend"]:
        notes.append(f"trace was recorded on backend {trace['backend']!r}; replaying on {backend.name!r} "
                     "(the digests will differ; the violation may still reproduce)")
    geometry, descs = fragments_of(trace)
    try:
        with iteration_order(trace.get("iteration", "id")):
            if trace["kind"] == "gossip":
                objects = {i: backend.build(geometry, d) for i, d in descs.items()}
                reproduced, expected, observed = _replay_gossip(backend, trace, objects)
            else:
                reseed_shuffle("program")
                values = run_program(backend, geometry, descs, trace["ops"], trace.get("base", 0))
                failed = failed_expectations(trace["expect"], values)
                reproduced = bool(failed)
                expected, observed = (failed[0][1], failed[0][2]) if failed else ("", "")
    except ValueError as exc:
        from spec import InputError

        raise InputError(f"trace does not replay on this backend: {exc}") from None
    same = reproduced and expected == trace["expected"] and observed == trace["observed"]
    return ReplayResult(reproduced, expected, observed, same, notes)
