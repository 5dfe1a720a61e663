"""What the gossip search checks at every state it reaches (claim C7), with the renders it needs.

At every reachable state: replicas holding equal sets render byte-identically, and a fair
exchange from that state (finish publishing, flush every message, then everyone sends to
everyone and all of it is delivered) brings every replica to one render, equal to the render of
the union.

Renders are never memoized by set: two replicas holding equal sets are compared through two
render calls on their own state objects (a memo keyed by the set would compare an entry with
itself, and a render whose bytes depend on how a state was built, or on the call, would pass).
The only memo is by state *object* (a record shared by the nodes holding that object), so one
object is not rendered twice."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from modelcheck.backend import render_digests
from modelcheck.gossip_model import GossipModel, Node

Facts = tuple[Any, ...]  # per replica: [set number, render digest or None], or None (holds nothing)


class Verdict:
    """The checks of one search, and the render calls they make."""

    def __init__(self, model: GossipModel) -> None:
        self.model = model
        self._renders: dict[int, tuple[Any, str]] = {}   # id(state) -> (state kept alive, digest)
        self._set_numbers: dict[Any, int] = {}            # abstract set -> a small number
        self.render_calls = 0
        # comparisons due but not made: a state without its render digest (never a pass; the
        # explorer reports itself blind when this is not zero)
        self.unrendered = 0

    def set_number(self, state: Any) -> int:
        """A small number per distinct abstract set (``backend.abstract``)."""
        return self._set_numbers.setdefault(self.model.backend.abstract(state), len(self._set_numbers))

    def render(self, state: Any) -> str:
        """Render digest of this state object (one call per object, never shared by set)."""
        hit = self._renders.get(id(state))
        if hit is None or hit[0] is not state:
            self.render_calls += 1
            hit = self._renders[id(state)] = (state, self.model.backend.render_digest(state, self.model.base))
        return hit[1]

    def render_fresh(self, states: list[Any]) -> list[str]:
        """One render per state, none remembered (states made for one check and dropped); a
        backend with ``render_digests`` may share the fixed cost of its torch calls between them."""
        self.render_calls += len(states)
        return render_digests(self.model.backend, states, self.model.base)

    def union_render(self) -> str:
        return self.render(self.model.union())

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
        backend together, so they may share the fixed cost of its torch calls, never bytes.  A
        comparison due whose state has no digest (its render never filled in) is not made and
        is counted in ``unrendered``: it must not pass as equal renders."""
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
                exchanged = self.model.exchanged(n)
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
                if a[1] is None or b[1] is None:
                    self.unrendered += 1  # no digest to compare: counted, not passed
                elif a[1] != b[1]:
                    return index, "same-set", (i, j)
            if not fair_exchange:
                continue
            rendered = [] if exchanged is None else digests[first:first + len(exchanged)]
            self.unrendered += 0 if exchanged is None else len(exchanged) - len(rendered)
            if exchanged is None or any(d != union for d in rendered):
                return index, "fair-exchange", None
        return None
