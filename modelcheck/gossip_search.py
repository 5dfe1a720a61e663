"""The gossip search (claim C7): every reachable state of the gossip model, searched
breadth-first, each checked by ``gossip_verdict``.

The model (``gossip_model``) is replicas exchanging state snapshots over a network that
reorders, duplicates and drops; the visited set holds one key per state (``gossip_symmetry``:
the state itself, or its orbit under replica relabellings).  BFS parent pointers give the
shortest trace to the first violation (``gossip_trace``).

What the search keeps per state reached is its key (bytes) and its parent; the nodes themselves,
with their state objects, are held only while they wait to be expanded.  Nodes are checked
``CHECK_BATCH`` at a time in the order reached, their renders in one backend call, and a
violation is reported with the counts of the moment its node was reached: the same result as
checking each node at once (tested).

With the symmetry reduction, a node whose orbit key is already in the visited set is merged into
that orbit's representative only as far as it is proved to be a relabelling of it: the
relabelling the key was written under is applied to the node, and the result's digest
(``Symmetry.relabelled``) is compared with the representative's, kept beside its parent pointer.
A merge that fails the comparison is counted (the reduction is then unsound, and the run says
so); the node is not explored (the counts stay those of the reduction under test)."""

from __future__ import annotations

import gc
import time
from collections import Counter, deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from modelcheck.backend import Backend, Universe
from modelcheck.gossip_model import Action, GossipConfig, GossipModel, Node, splits
from modelcheck.gossip_symmetry import Symmetry
from modelcheck.gossip_trace import gossip_trace, path
from modelcheck.gossip_verdict import Facts, Verdict
from spec import Progress, no_progress

# nodes checked together: their renders go to the backend in one call (modelcheck.checks
# batches its renders the same way)
CHECK_BATCH = 32


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
    merges: int = 0                             # moves into a state already reached
    folded_moves: int = 0                       # drop moves not taken (``fold_drops``; so no resend)
    # with ``fold_drops``: the sum of the states' splits (``gossip_model.splits``): the full model's
    # state count without symmetry; with it, at least the full model's orbit count
    unfolded_states: int = 0
    unproved_merges: int = 0                    # of those, merged by the key but not relabellings
    unproved_example: list[Any] | None = None   # the first: the moves to the node, and to its representative
    unrendered_comparisons: int = 0             # comparisons the verdict could not make (``Verdict.unrendered``)
    reached: list[Hashable] | None = None       # every visited-set key (``keep_keys``)
    blind: list[str] = field(default_factory=list)  # instruments whose controls failed (gossip_controls)
    details: dict[str, Any] = field(default_factory=dict)


def search(backend: Backend, universe: Universe, config: GossipConfig = GossipConfig(), *,
           backend_name: str | None = None, mutant: str | None = None, fair_exchange: bool = True,
           progress: Progress = no_progress, keep_keys: bool = False) -> GossipResult:
    """Breadth-first exploration; stops at the first violation (the shallowest one).

    ``fair_exchange=False`` checks only the safety property (equal sets render equal).  The cyclic
    collector is off while it runs: the seen-set only grows, so every full collection would walk
    all of it again (a tenth of the time at 100,000 states, more as it grows); what the search
    drops is freed by reference counting, and the collector is back on when it returns."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _search(backend, universe, config, backend_name, mutant, fair_exchange, progress, keep_keys)
    finally:
        if collecting:
            gc.enable()


def _search(backend: Backend, universe: Universe, config: GossipConfig, backend_name: str | None,
            mutant: str | None, fair_exchange: bool, progress: Progress, keep_keys: bool) -> GossipResult:
    config.validate(universe)
    started = time.perf_counter()
    model = GossipModel(backend, universe, config)
    verdict = Verdict(model)
    symmetry = Symmetry(config)
    result = GossipResult(config, universe.name)
    union = verdict.union_render()
    root = model.initial()
    proving = config.symmetry
    root_key, root_proof = symmetry.key_and_proof(root)
    # every state reached: its parent and the move from it (the trace), and with symmetry the
    # digest of its relabelled image (the merge proofs); only the frontier's nodes are held, so a
    # state object is freed once no node waiting to be expanded holds it
    parent: dict[Hashable, tuple[Hashable, Action, bytes] | None] = {root_key: None}
    # reached but not yet checked: checked CHECK_BATCH at a time, in the order reached, so their
    # renders go to the backend together; with each node, the counts when it was reached, to
    # report a violation exactly as if every node had been checked the moment it was reached
    pending: list[tuple[Hashable, Node, int, Facts, tuple[int, int, int, bool]]] = []

    def check_pending() -> bool:
        found = verdict.first_violation([(n, facts) for _, n, _, facts, _ in pending], union, fair_exchange)
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
        tail = model.fair_exchange(n) if result.kind == "fair-exchange" else []
        result.violation = gossip_trace(model, verdict, universe, parent, key, tail, pair, backend_name, mutant)
        return False

    result.unfolded_states = 1 if config.fold_drops else 0
    root_facts = verdict.facts(root)
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
            result.exhaustive = bool(result.exhaustive and not model.successors(n))
            continue
        if config.fold_drops:
            result.folded_moves += len(set(k for k, _ in n.flight))  # a drop per distinct message
        for action in model.successors(n):
            child = model.apply(n, action)
            result.transitions += 1
            ck, proof = symmetry.key_and_proof(child)
            seen = parent.get(ck, _NEW)
            if seen is not _NEW:
                result.merges += 1
                if proving and proof != (root_proof if seen is None else seen[2]):
                    _unproved(result, parent, key, action, ck)
                continue
            if len(parent) >= config.max_states:
                result.exhaustive = False
                queue.clear()
                break
            parent[ck] = (key, action, proof)
            if config.fold_drops:
                result.unfolded_states += splits(frozenset(Counter(k for k, _ in child.flight).items()))
            result.depth = max(result.depth, depth + 1)
            child_facts = verdict.facts(child, n, facts)
            queue.append((ck, child, depth + 1, child_facts))
            pending.append((ck, child, depth + 1, child_facts,
                            (len(parent), result.transitions, result.depth, result.exhaustive)))
        if len(pending) >= CHECK_BATCH or not queue:
            ok = check_pending()
    if ok and pending:
        ok = check_pending()
    if ok:
        result.states = len(parent)
    if keep_keys:
        result.reached = list(parent)
    result.renders = verdict.render_calls
    result.unrendered_comparisons = verdict.unrendered
    result.seconds = time.perf_counter() - started
    progress(f"gossip {universe.name}: states", result.states, result.states)
    return result


_NEW = object()


def _unproved(result: GossipResult, parent: dict, key: Hashable, action: Action, ck: Hashable) -> None:
    """Count a merge whose node is not a relabelling of the representative; keep the first."""
    result.unproved_merges += 1
    if result.unproved_example is None:
        result.unproved_example = [[list(a) for a in path(parent, key) + [action]],
                                   [list(a) for a in path(parent, ck)]]
