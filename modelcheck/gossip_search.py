"""The gossip search (claim C7): every reachable state of the gossip model, searched
breadth-first, each checked by ``gossip_verdict``.

The model (``gossip_model``) is replicas exchanging state snapshots over a network that
reorders, duplicates and drops; the visited set holds one key per state (``gossip_symmetry``:
the state itself, or its orbit under replica relabellings).  BFS parent pointers give the
shortest trace to the first violation (``gossip_trace``).

What the search keeps per state reached is a fixed-width row of the visited table
(``gossip_visited``: its key's 16-byte digest, its parent's row and the move, the merge proof);
the nodes themselves, with their state objects, are held only while their level is the frontier
or the next.  The search goes level by level, and can write a checkpoint after each completed
level and go on from one (``gossip_checkpoint``).  Nodes are checked
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
from pathlib import Path
from typing import Any

from modelcheck.backend import Backend, Universe
from modelcheck.gossip_model import Action, GossipConfig, GossipModel, Node, splits
from modelcheck.gossip_checkpoint import Checkpoint, identity
from modelcheck.gossip_symmetry import Symmetry
from modelcheck.gossip_trace import gossip_trace
from modelcheck.gossip_verdict import Facts, Verdict
from modelcheck.gossip_visited import NO_PARENT, Visited, digest, encode_action
from spec import ArgumentError, Progress, no_progress

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
           progress: Progress = no_progress, keep_keys: bool = False, checkpoint: Path | None = None,
           resume: Path | None = None) -> GossipResult:
    """Breadth-first exploration; stops at the first violation (the shallowest one).

    ``fair_exchange=False`` checks only the safety property (equal sets render equal).  With
    ``checkpoint`` (a directory) the search writes a checkpoint after every completed level
    (``gossip_checkpoint``); ``resume`` names one to go on from, and keeps writing there.  The
    cyclic collector is off while it runs: what the search holds only grows, so every full
    collection would walk all of it again; what it drops is freed by reference counting, and the
    collector is back on when it returns."""
    if checkpoint is not None and resume is not None:
        raise ArgumentError("resume", str(resume), "continues the checkpoint it names and writes there: "
                                                   "give it without --checkpoint")
    if keep_keys and (checkpoint is not None or resume is not None):
        raise ValueError("keep_keys lists every key in memory; a checkpointed search keeps only digests")
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _search(backend, universe, config, backend_name, mutant, fair_exchange, progress, keep_keys,
                       checkpoint, resume)
    finally:
        if collecting:
            gc.enable()


# counts a checkpoint carries (with "checked", the states whose checks were done)
_COUNTS = ("transitions", "depth", "merges", "folded_moves", "unfolded_states", "unproved_merges",
           "unproved_example", "fair_exchanges", "exhaustive")


def _search(backend: Backend, universe: Universe, config: GossipConfig, backend_name: str | None,
            mutant: str | None, fair_exchange: bool, progress: Progress, keep_keys: bool,
            checkpoint: Path | None, resume: Path | None) -> GossipResult:
    config.validate(universe)
    started = time.perf_counter()
    model = GossipModel(backend, universe, config)
    verdict = Verdict(model)
    symmetry = Symmetry(config)
    result = GossipResult(config, universe.name)
    union = verdict.union_render()
    root = model.initial()
    proving = config.symmetry
    # every state reached, as a row of the visited table: its key's digest, its parent row and
    # the move from it (the trace), and with symmetry the digest of its relabelled image (the
    # merge proofs); only the frontier's nodes are held, so a state object is freed once no node
    # waiting to be expanded holds it
    visited = Visited(proving)
    keys: list[Hashable] = []
    store = None
    if checkpoint is not None or resume is not None:
        ident = identity(config, universe.name, backend_name or backend.name, mutant, fair_exchange)
        store = Checkpoint(resume or checkpoint, ident, "resume" if resume is not None else "checkpoint")  # type: ignore[arg-type]
    marks: list[list[int]] = []   # per state mark: a row holding it and the replica (checkpoints)
    # reached but not yet checked: checked CHECK_BATCH at a time, in the order reached, so their
    # renders go to the backend together; with each node, the counts when it was reached, to
    # report a violation exactly as if every node had been checked the moment it was reached
    pending: list[tuple[int, Node, int, Facts, tuple[int, int, int, bool]]] = []
    states_checked = 0

    def check_pending() -> bool:
        nonlocal states_checked
        found = verdict.first_violation([(n, facts) for _, n, _, facts, _ in pending], union, fair_exchange)
        checked = len(pending) if found is None else found[0]
        states_checked += checked
        result.fair_exchanges += checked if fair_exchange else 0
        if found is None:
            pending.clear()
            return True
        index, result.kind, pair = found
        row, n, depth, _, (result.states, result.transitions, result.depth, result.exhaustive) = pending[index]
        result.violation_depth = depth
        if result.kind == "fair-exchange":
            result.fair_exchanges += 1
        tail = model.fair_exchange(n) if result.kind == "fair-exchange" else []
        result.violation = gossip_trace(model, verdict, universe, visited, row, tail, pair, backend_name, mutant)
        return False

    if resume is not None:
        manifest = store.load(visited)  # type: ignore[union-attr]
        for field in _COUNTS:
            setattr(result, field, manifest["counts"][field])
        states_checked, marks = manifest["counts"]["checked"], manifest["marks"]
        _renumber(model, visited, marks, store)  # type: ignore[arg-type]
        first, stop = manifest["level"]["frontier"]
        depth = manifest["level"]["depth"]
        frontier = deque((row, n, verdict.facts(n)) for row in range(first, stop)
                         for n in [model.run_actions(root, visited.path(row))[0]])
    else:
        if store is not None:
            store.start()
        root_key, root_proof = symmetry.key_and_proof(root)
        visited.add(digest(root_key), NO_PARENT, 0, root_proof)
        if keep_keys:
            keys.append(root_key)
        result.unfolded_states = 1 if config.fold_drops else 0
        root_facts = verdict.facts(root)
        pending.append((0, root, 0, root_facts, (1, 0, 0, True)))
        _witness(marks, root, 0)
        frontier = deque([(0, root, root_facts)])
        depth = 0
    popped = 0
    ok = True
    full = False
    widest = len(frontier)  # the most nodes one level held (what the frontier costs)
    while ok and frontier and not full:
        following: deque[tuple[int, Node, Facts]] = deque()
        size, expanded = len(frontier), 0
        while frontier:  # popped as expanded: a node is freed once its children are made
            row, n, facts = frontier.popleft()
            popped += 1
            if popped % 2000 == 0:
                progress(f"gossip {universe.name}: states", visited.rows, 0)
            expanded += 1
            if config.max_depth is not None and depth >= config.max_depth:
                result.exhaustive = bool(result.exhaustive and not model.successors(n))
                continue
            if config.fold_drops:
                result.folded_moves += len(set(k for k, _ in n.flight))  # a drop per distinct message
            for action in model.successors(n):
                child = model.apply(n, action)
                result.transitions += 1
                ck, proof = symmetry.key_and_proof(child)
                d = digest(ck)
                seen = visited.find(d)
                if seen is not None:
                    result.merges += 1
                    if proving and proof != visited.proof(seen):
                        _unproved(result, visited, row, action, seen)
                    continue
                if visited.rows >= config.max_states:
                    result.exhaustive = False
                    full = True
                    break
                crow = visited.add(d, row, encode_action(action), proof)
                if keep_keys:
                    keys.append(ck)
                if store is not None:
                    _witness(marks, child, crow)
                if config.fold_drops:
                    result.unfolded_states += splits(frozenset(Counter(k for k, _ in child.flight).items()))
                result.depth = max(result.depth, depth + 1)
                child_facts = verdict.facts(child, n, facts)
                following.append((crow, child, child_facts))
                pending.append((crow, child, depth + 1, child_facts,
                                (visited.rows, result.transitions, result.depth, result.exhaustive)))
            if full:
                break
            if len(pending) >= CHECK_BATCH:
                ok = check_pending()
                if not ok:
                    break
        if ok and pending:
            ok = check_pending()
        if ok and not full and store is not None:  # the level is complete: every state expanded and checked
            counts = {f: getattr(result, f) for f in _COUNTS} | {"checked": states_checked}
            level = {"depth": depth + 1, "frontier": [visited.rows - len(following), visited.rows],
                     "expanded": expanded, "size": size, "rows": visited.rows}
            store.write(visited, level, counts, marks)
        widest = max(widest, len(following))
        frontier = following
        depth += 1
    if ok:
        result.states = visited.rows
    if keep_keys:
        result.reached = keys
    result.renders = verdict.render_calls
    result.unrendered_comparisons = verdict.unrendered
    result.seconds = time.perf_counter() - started
    result.details["visited_bytes"] = visited.nbytes()
    result.details["widest_level"] = widest
    progress(f"gossip {universe.name}: states", result.states, result.states)
    return result


def _witness(marks: list[list[int]], node: Node, row: int) -> None:
    """Record, for each state mark ``node`` is the first row to hold, that row and the replica."""
    for replica, mark in enumerate(node.marks):
        if mark == len(marks):
            marks.append([row, replica])


def _renumber(model: GossipModel, visited: Visited, marks: list[list[int]], store: Checkpoint) -> None:
    """Give a resumed run's model the state marks of the run that wrote the checkpoint: mark m
    is the state that replica holds at the row recorded for it (its moves replayed, which meet
    only states of smaller marks), numbered in order as the model numbers new states."""
    root = model.initial()
    for mark, (row, replica) in enumerate(marks):
        node = model.run_actions(root, visited.path(row))[0]
        if node.marks[replica] != mark:
            raise ArgumentError("resume", str(store.directory), f"its state {mark} (row {row:,}, replica {replica}) "
                                                                f"replays as state {node.marks[replica]}")


def _unproved(result: GossipResult, visited: Visited, row: int, action: Action, seen: int) -> None:
    """Count a merge whose node is not a relabelling of the representative; keep the first."""
    result.unproved_merges += 1
    if result.unproved_example is None:
        result.unproved_example = [[list(a) for a in visited.path(row) + [action]],
                                   [list(a) for a in visited.path(seen)]]
