"""The gossip explorer's own controls, run inside every exploration: proof that it could see.

- **Canary**: an order-by-arrival render (the run's own backend's BagMerge of each replica's
  fragments in the order they arrived) explored on 2 replicas × 2 fragments, in-flight ≤ 2,
  through the same search (symmetry reduction as configured, render batching, verdict).  It must
  be reported as the shallowest violation of each check: equal sets rendering differently at
  depth 6 (both publish, both send, both deliver), and a fair exchange from the initial state not
  converging.  Its same-set trace must replay, and a copy without its last move must not (no
  shallower state violates): both go through one replay judgement, so a judgement that passes
  a trace without replaying it is seen.  A canary not seen means the explorer is blind.
- **Reduction cross-check**: on 3 replicas × 2 fragments, in-flight ≤ 1, the plain and the reduced
  searches run on the run's backend; their verdicts must agree, and (when all hold) the reduced
  state count must equal the number of orbits of the plain search's states, counted by brute
  force over every relabelling of the replicas that keeps the unpublished fragments' homes —
  apart from the reduction's own key; with drop folding (``gossip_model``), the folded states
  must be exactly the plain states with their dropped messages back in flight, and the plain
  count the sum of their splits.  Every run cross-checks both (symmetry alone, and with drop
  folding), whichever it uses, so the folded path is checked by default too.
- **Moves check**: on three small configurations (3 replicas × 2 fragments, in-flight ≤ 1; 2 × 2,
  in-flight ≤ 2, both fragments published at replica 1; 3 × 1, in-flight ≤ 1, the smallest
  fragment count), plain and with drop folding, the search
  runs on ``FragmentIndices`` (states are the sets they hold, so marks are one to one with sets)
  and its counts must equal ``gossip_reference``'s, an enumeration of the abstract model written
  apart from ``gossip_model``: states, transitions, depth, and with folding the drop moves not
  taken and the unfolded state count (which must also be the plain enumeration's state count).
  A configuration the search refuses is a disagreement: each lies in the documented domain.
- **Unrendered comparisons**: the verdict fed, on a backend whose batch render returns nothing,
  a same-set pair with both digests missing, with one missing, and a fair exchange; each must be
  counted as not made (the counts due known from the construction), never passed or failed.
- **Orbit key**: four replicas holding one state with four messages in flight, as a four-cycle,
  that cycle relabelled, and two two-cycles: every replica's signature is the same in all three,
  so only the message list the key writes tells the two-cycles apart, as it must."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from modelcheck.backend import Backend, FragmentDesc, Geometry, Universe
from modelcheck import gossip_reference
from modelcheck.gossip_model import GossipConfig, GossipModel, Node, folded, splits
from modelcheck.gossip_search import GossipResult, search
from modelcheck.gossip_symmetry import Symmetry
from modelcheck.gossip_verdict import Verdict
from modelcheck.trace_replay import replay
from spec import ArgumentError, FragmentSet

CANARY = GossipConfig(replicas=2, fragments=2, in_flight=2)
CANARY_EXPECTED = {"same-set": 6, "fair-exchange": 0}   # kind -> depth of the shallowest violation
CROSS_CHECK = GossipConfig(replicas=3, fragments=2, in_flight=1, max_states=100_000)
# a dropped message is reachable in all; the second has two messages at once and homes set; the third
# is the smallest fragment count, one fragment, with two replicas that are nobody's home
MOVES_CHECK = (CROSS_CHECK, GossipConfig(replicas=2, fragments=2, in_flight=2, homes=(1, 1), max_states=100_000),
               GossipConfig(replicas=3, fragments=1, in_flight=1, max_states=100_000))
MOVES_FIELDS = ("states", "transitions", "depth", "folded_moves", "unfolded_states")


class ArrivalOrder:
    """An order-by-arrival render over any backend: a state is its fragments in first-arrival
    order (one per content id), rendered as the backend's BagMerge of that list.  Two replicas
    that received two fragments in opposite orders hold equal sets and render differently: the
    negative control every exploration must catch."""

    mutant = "canary-order-by-arrival"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name

    def build(self, geometry: Geometry, desc: FragmentDesc) -> Any:
        return self.inner.build(geometry, desc)

    def singleton(self, fragment: Any) -> tuple[tuple[bytes, Any], ...]:
        return ((self.inner.content_id(fragment), fragment),)

    def merge(self, a: tuple, b: tuple) -> tuple:
        held = {cid for cid, _ in a}
        return a + tuple((cid, f) for cid, f in b if cid not in held)

    def abstract(self, state: tuple) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(cid for cid, _ in state)

    def state_key(self, state: tuple) -> Hashable:
        return tuple(cid for cid, _ in state)

    def render_digest(self, state: tuple, base: int = 0) -> str:
        return self.inner.bag_digest([f for _, f in state], base)


Searcher = Callable[[Backend, Universe, GossipConfig, bool], GossipResult]


def in_process(backend: Backend, universe: Universe, config: GossipConfig, fair_exchange: bool) -> GossipResult:
    """The single-process search (``gossip_search.search``) of ``backend``, as a ``Searcher``."""
    return search(backend, universe, config, mutant=getattr(backend, "mutant", None), fair_exchange=fair_exchange)


def canary(backend: Backend, universe: Universe, symmetry: bool, fold_drops: bool = False,
           searcher: Searcher = in_process) -> dict[str, Any]:
    """Explore the order-by-arrival render; what each check reported, and whether it was seen.
    ``searcher`` is the search the run itself uses (the sharded one builds the same render in
    each worker), so the canary goes through the run's own pipeline."""
    config = dataclasses.replace(CANARY, symmetry=symmetry, fold_drops=fold_drops)
    out: dict[str, Any] = {"render": "order by arrival (the backend's BagMerge of the arrival order)",
                           "replicas": config.replicas, "fragments": config.fragments,
                           "in_flight": config.in_flight, "symmetry": symmetry, "fold_drops": fold_drops,
                           "checks": {}}
    if len(universe.fragments) < config.fragments:
        out["seen"] = False
        out["why"] = f"universe {universe.name!r} has fewer than {config.fragments} fragments"
        return out
    bad = ArrivalOrder(backend)
    seen = True
    for kind, depth in CANARY_EXPECTED.items():
        r = searcher(bad, universe, config, kind == "fair-exchange")
        replayed = _replays(r.violation, bad)
        found = r.kind == kind and r.violation_depth == depth and replayed
        out["checks"][kind] = {"found": r.kind or "nothing", "depth": r.violation_depth, "expected_depth": depth,
                               "trace_reproduces": replayed, "states": r.states, "seen": found}
        seen = seen and found
        if kind == "same-set" and r.kind == kind and r.violation is not None:
            out["refused_copy"] = refused_copy(r.violation, bad, depth)
    out["seen"] = seen
    return out


def _replays(trace: dict[str, Any] | None, backend: Backend) -> bool:
    """Whether a canary trace replays as the violation it records: the one judgement the canary's
    traces and their refused copy go through, so a judgement that passed a trace without
    replaying it would pass the copy too, and be seen."""
    return trace is not None and replay(trace, backend).reproduced


def refused_copy(trace: dict[str, Any], backend: Backend, depth: int) -> dict[str, Any]:
    """The shallowest same-set violation's trace (``depth`` moves) without its last move, through
    ``_replays``: it must not replay, since the search found no violating state shallower (a copy
    is fed, so the canary's own trace is left as the search wrote it), and it must be that copy,
    one move short, not some shorter prefix that would not replay whatever the search found.
    The explorer judges both (``gossip.explore``)."""
    copy = dict(trace, ops=trace["ops"][:-1])
    return {"ops": len(copy["ops"]), "expected_ops": depth - 1, "replays": _replays(copy, backend)}


def cross_check(backend: Backend, universe: Universe, fair_exchange: bool, fold_drops: bool = False
                ) -> dict[str, Any]:
    """The plain search and the reduced ones (symmetry; with ``fold_drops``, folding alone and
    both together) on a small configuration, compared: the same verdict, and when all hold, the
    relations each reduction documents, computed from the plain search's states."""
    config = CROSS_CHECK
    if len(universe.fragments) < config.fragments:
        return {"agree": False, "why": f"universe {universe.name!r} has fewer than {config.fragments} fragments"}
    plain = search(backend, universe, config, fair_exchange=fair_exchange, keep_keys=True)
    runs = {"plain": plain}
    if fold_drops:
        runs["folded"] = search(backend, universe, dataclasses.replace(config, fold_drops=True),
                                fair_exchange=fair_exchange, keep_keys=True)
    runs["reduced"] = search(backend, universe, dataclasses.replace(config, symmetry=True, fold_drops=fold_drops),
                             fair_exchange=fair_exchange)
    out = compare_reductions(runs, config, fold_drops)
    # the comparison shown to see, on copies of these very searches: the reduced search one state
    # more, and (folded) the plain search one state more, must each make it disagree (when the
    # searches hold; a violation stops them, and then only their verdicts are compared)
    if out["orbits_by_brute_force"] is None:
        out["controls_unseen"] = None
        return out
    doctored = {"reduced": dict(runs, reduced=dataclasses.replace(runs["reduced"], states=runs["reduced"].states + 1))}
    if fold_drops:
        doctored["plain"] = dict(runs, plain=dataclasses.replace(plain, states=plain.states + 1))
    out["controls_unseen"] = [name for name, copy in doctored.items()
                              if compare_reductions(copy, config, fold_drops)["agree"]]
    return out


def compare_reductions(runs: dict[str, GossipResult], config: GossipConfig, fold_drops: bool) -> dict[str, Any]:
    """The cross-check's one comparison of the plain and reduced searches' results (see
    ``cross_check``), of the real searches and of the doctored copies alike."""
    plain = runs["plain"]
    out: dict[str, Any] = {"replicas": config.replicas, "fragments": config.fragments, "in_flight": config.in_flight,
                           "fold_drops": fold_drops, "unproved_merges": runs["reduced"].unproved_merges}
    for name, r in runs.items():
        out[f"{name}_states"], out[f"{name}_verdict"] = r.states, _verdict(r)
    agree = len({out[f"{name}_verdict"] for name in runs}) == 1 and not runs["reduced"].unproved_merges
    if all(r.violation is None and r.exhaustive for r in runs.values()):
        quotient = runs["folded"] if fold_drops else plain
        if fold_drops:
            keys = runs["folded"].reached or []
            out["plain_states_from_folded"] = sum(splits(k[2]) for k in keys)  # type: ignore[index]
            agree = (agree and {folded(k) for k in plain.reached or []} == set(keys)
                     and out["plain_states_from_folded"] == plain.states)
        orbits = orbit_count(quotient.reached or [], config)
        out["orbits_by_brute_force"] = orbits
        agree = agree and orbits == runs["reduced"].states < quotient.states
    else:
        out["orbits_by_brute_force"] = None  # a violation stopped the searches: verdicts compared only
    out["agree"] = agree
    return out


def _verdict(r: GossipResult) -> str:
    return f"{r.kind} at depth {r.violation_depth}" if r.violation is not None else "holds"


def orbit_count(keys: Sequence[Hashable], config: GossipConfig) -> int:
    """How many orbits the plain search's states (``gossip_model.plain_key``s) fall into under
    the replica relabellings that keep every unpublished fragment's home: each state's least
    image over all of them, counted."""
    r_count = config.replicas
    perms = list(itertools.permutations(range(r_count)))
    least = set()
    for marks, published, flight, dropped in keys:  # type: ignore[misc]
        waiting = {config.home(f) for f in range(config.fragments) if f not in published}
        images = []
        for pi in perms:
            if any(pi[h] != h for h in waiting):
                continue
            moved_marks = [0] * r_count
            for r in range(r_count):
                moved_marks[pi[r]] = marks[r]
            images.append((tuple(moved_marks), tuple(sorted(published)),
                           tuple(sorted(((pi[s], pi[d], m), c) for (s, d, m), c in flight)),
                           tuple(sorted(((pi[s], pi[d], m), c) for (s, d, m), c in dropped))))
        least.add(min(images))
    return len(least)


class FragmentIndices:
    """A backend whose state is the frozenset of the universe positions of the fragments it holds:
    one to one with the set by construction.  The moves check runs on it rather than on the run's
    backend, so that a backend which is not a CvRDT (marks finer than sets) is reported by the
    checks that look for it, not mistaken for a fault of the explorer's moves."""

    name = "fragment-indices"

    def __init__(self, universe: Universe) -> None:
        self.fragments = universe.fragments

    def build(self, geometry: Geometry, desc: FragmentDesc) -> int:
        return next(i for i, d in enumerate(self.fragments) if d is desc)

    def singleton(self, fragment: int) -> frozenset[int]:
        return frozenset({fragment})

    def merge(self, a: frozenset[int], b: frozenset[int]) -> frozenset[int]:
        return a | b

    def abstract(self, state: frozenset[int]) -> FragmentSet[bytes]:
        return FragmentSet.of_ids(i.to_bytes(32, "big") for i in state)

    def state_key(self, state: frozenset[int]) -> Hashable:
        return state

    def render_digest(self, state: frozenset[int], base: int = 0) -> str:
        return f"{base}:{sorted(state)}"


def moves_check(universe: Universe, fair_exchange: bool) -> dict[str, Any]:
    """The plain and folded searches on ``FragmentIndices``, their counts against
    ``gossip_reference``'s on each ``MOVES_CHECK`` configuration; ``agree`` when every one matches,
    no search stopped at a violation or a bound, and every comparison it made had its renders."""
    out: dict[str, Any] = {"configurations": [], "agree": True}
    need = max(c.fragments for c in MOVES_CHECK)
    if len(universe.fragments) < need:
        return {"agree": False, "why": f"universe {universe.name!r} has fewer than {need} fragments"}
    for config in MOVES_CHECK:
        try:
            config.validate(universe)
        except ArgumentError as exc:  # a valid configuration refused: the search's domain is wrong
            return {"agree": False, "why": f"the search refused a configuration of its documented domain: {exc}"}
    backend = FragmentIndices(universe)
    for config in MOVES_CHECK:
        plain_states = None
        for fold in (False, True):
            c = dataclasses.replace(config, fold_drops=fold)
            r = search(backend, universe, c, fair_exchange=fair_exchange)
            ref = gossip_reference.count(c.replicas, c.fragments, c.in_flight, c.homes, fold_drops=fold)
            got = {"states": r.states, "transitions": r.transitions, "depth": r.depth,
                   "folded_moves": r.folded_moves, "unfolded_states": r.unfolded_states}
            want = {k: getattr(ref, k) for k in MOVES_FIELDS}
            # the reference's own relation: its folded states stand for exactly its plain ones
            consistent = ref.unfolded_states == plain_states if fold else True
            plain_states = ref.states
            entry = {"replicas": c.replicas, "fragments": c.fragments, "in_flight": c.in_flight,
                     "homes": list(c.homes) if c.homes else None, "fold_drops": fold, "search": got,
                     "reference": want, "violation": r.kind or None, "exhaustive": r.exhaustive,
                     "unrendered_comparisons": r.unrendered_comparisons, "reference_consistent": consistent}
            # each requirement on its own, so that a weakened one is not hidden behind the others
            entry["agree"] = all((got == want, consistent, r.violation is None, r.exhaustive,
                                  not r.unrendered_comparisons))
            out["configurations"].append(entry)
            out["agree"] = out["agree"] and entry["agree"]
    # every configuration checked plain and folded, in that order (a folding left out is no check)
    folds = [e["fold_drops"] for e in out["configurations"]]
    out["agree"] = all((out["agree"], folds == [False, True] * len(MOVES_CHECK)))
    out["bounded"] = bounded_check(backend, universe, fair_exchange)
    out["agree"] = out["agree"] and all(b["agree"] for b in out["bounded"])
    return out


def bounded_check(backend: Backend, universe: Universe, fair_exchange: bool) -> list[dict[str, Any]]:
    """The search's bounds against the reference, on 2 × 2, in-flight ≤ 2, both fragments at
    replica 0: stopped at half the reference's depth it must have reached exactly the states the
    reference first reaches within that depth; stopped at depth 0 or at one state (the smallest
    ``max_depth`` and ``max_states``) it holds the initial state alone; and none may call itself
    exhaustive."""
    config = dataclasses.replace(MOVES_CHECK[1], homes=(0, 0))
    ref = gossip_reference.count(config.replicas, config.fragments, config.in_flight, config.homes, fold_drops=False)
    depth = max(1, ref.depth // 2)
    out = []
    for bound, c, want in (("max_depth", dataclasses.replace(config, max_depth=depth), sum(ref.levels[:depth + 1])),
                           ("max_depth", dataclasses.replace(config, max_depth=0), 1),
                           ("max_states", dataclasses.replace(config, max_states=1), 1)):
        try:
            r = search(backend, universe, c, fair_exchange=fair_exchange)
        except ArgumentError as exc:  # a bound of the documented domain refused
            out.append({"bound": bound, "value": getattr(c, bound), "refused": str(exc), "agree": False})
            continue
        # the comparison shown to see: the same result with one state more, or called exhaustive,
        # must each be found to disagree
        doctored = [bounded_agrees(r.states + 1, r.exhaustive, r.violation, want),
                    bounded_agrees(r.states, True, r.violation, want)]
        out.append({"bound": bound, "value": getattr(c, bound), "states": r.states, "reference_states": want,
                    "exhaustive": r.exhaustive, "violation": r.kind or None,
                    "agree": bounded_agrees(r.states, r.exhaustive, r.violation, want),
                    "control_seen": not any(doctored)})
    return out


def bounded_agrees(states: int, exhaustive: bool, violation: Any, want: int) -> bool:
    """The bounded check's one comparison: a search stopped by its bound holds exactly the states
    the reference reaches within it, does not call itself exhaustive, and found no violation."""
    return states == want and not exhaustive and violation is None


def moves_differences(checked: dict[str, Any]) -> str:
    """The first configuration the moves check disagreed on, in one line."""
    if "why" in checked:
        return checked["why"]
    bound = next((b for b in checked.get("bounded", []) if not b["agree"]), None)
    if all(e["agree"] for e in checked["configurations"]) and bound is None:
        folds = ", ".join("folded" if e["fold_drops"] else "plain" for e in checked["configurations"])
        return f"the configurations were not each checked plain and folded ({folds})"
    if all(e["agree"] for e in checked["configurations"]) and "refused" in bound:
        return f"bounded by {bound['bound']} {bound['value']}: the search refused it ({bound['refused']})"
    if all(e["agree"] for e in checked["configurations"]):
        return (f"bounded by {bound['bound']} {bound['value']}: {bound['states']:,} states "
                f"(reference {bound['reference_states']:,}), " + ("exhaustive" if bound["exhaustive"] else "bounded")
                + (f", stopped at a {bound['violation']} violation" if bound["violation"] else ""))
    bad = next(e for e in checked["configurations"] if not e["agree"])
    fields = ", ".join(f"{k} {bad['search'][k]:,} vs {bad['reference'][k]:,}" for k in MOVES_FIELDS
                       if bad["search"][k] != bad["reference"][k])
    other = [f"stopped at a {bad['violation']} violation"] if bad["violation"] else []
    other += [] if bad["exhaustive"] else ["hit its bound"]
    other += ([f"{bad['unrendered_comparisons']:,} comparison(s) without renders"]
              if bad["unrendered_comparisons"] else [])
    other += ([] if bad["reference_consistent"] else
              [f"the reference's folded states stand for {bad['reference']['unfolded_states']:,} states, "
               "not its plain count"])
    where = (f"{bad['replicas']} replicas × {bad['fragments']} fragments, in-flight ≤ {bad['in_flight']}"
             + (", drops folded" if bad["fold_drops"] else ""))
    return f"{where}: " + "; ".join(([f"search vs reference: {fields}"] if fields else []) + other)


class Unrendering(FragmentIndices):
    """``FragmentIndices`` whose batch render returns no digest: every comparison the verdict is
    fed on it is due without its renders."""

    name = "fragment-indices-unrendered"

    def render_digests(self, states: Sequence[frozenset[int]], base: int = 0) -> list[str]:
        return []


# a replica publishes fragment 0 and sends it to one other: two replicas hold one set, one holds nothing
UNRENDERED_CONFIG = GossipConfig(replicas=3, fragments=1, in_flight=1)
UNRENDERED_MOVES = (("publish", 0), ("send", 0, 1), ("exchange", 0, 1))


def unrendered_control(universe: Universe) -> list[dict[str, Any]]:
    """The verdict (``Verdict.first_violation``) fed comparisons without their renders, on
    ``Unrendering``: each must be counted in ``unrendered`` (``counted`` equal to ``due``) and
    reported as no violation (``violation``, what the verdict returned, None); the explorer judges
    both.  The counts
    due are known from the construction: one pair holds equal sets (its two records unrendered,
    or one of them), and a fair exchange makes one state per replica, none rendered (the pair's
    records given equal digests, so only the exchange is due), so the expectation is no count
    the verdict makes."""
    backend = Unrendering(universe)
    model = GossipModel(backend, universe, UNRENDERED_CONFIG)
    node, _ = model.run_actions(model.initial(), UNRENDERED_MOVES)
    cases = []
    for name, filled, fair, due in (("both digests missing", (), False, 1),
                                    ("one digest missing", (0,), False, 1),
                                    ("a fair exchange unrendered", (0, 1), True, UNRENDERED_CONFIG.replicas)):
        verdict = Verdict(model)
        facts = verdict.facts(node)
        for r in filled:
            facts[r][1] = "rendered"
        found = verdict.first_violation([(node, facts)], "union", fair)
        cases.append({"case": name, "due": due, "counted": verdict.unrendered,
                      "violation": found})
    return cases


# four replicas holding one state, each sending it to one other: a four-cycle, the same cycle
# relabelled (0 1 2 3 -> 2 0 3 1), and two two-cycles.  Every replica's signature (its state, what it
# sends and is sent) is the same in all three, so only the messages' endpoints tell the third apart.
KEY_CONFIG = GossipConfig(replicas=4, fragments=1, in_flight=4, symmetry=True)
KEY_NODES = {"four-cycle": ((0, 1), (1, 2), (2, 3), (3, 0)),
             "four-cycle relabelled": ((2, 0), (0, 3), (3, 1), (1, 2)),
             "two two-cycles": ((0, 1), (1, 0), (2, 3), (3, 2))}


def key_control() -> dict[str, Any]:
    """The symmetry reduction's orbit key (``Symmetry.orbit_key``) on ``KEY_NODES``: equal for the
    four-cycle and its relabelling, different for the two two-cycles (no relabelling maps a cycle
    of four onto two of two), though every replica's signature is the same in all three.  The
    explorer requires both."""
    sym = Symmetry(KEY_CONFIG)
    keys = {name: sym.orbit_key(Node((None,) * 4, (0,) * 4, frozenset({0}),
                                     tuple(((s, d, 0), None) for s, d in pairs), ()))
            for name, pairs in KEY_NODES.items()}
    return {"relabelling_merged": keys["four-cycle"] == keys["four-cycle relabelled"],
            "cycles_told_apart": keys["four-cycle"] != keys["two two-cycles"],
            "nodes_as_claimed": key_nodes_as_claimed()}


KEY_RELABELLING = {0: 2, 1: 0, 2: 3, 3: 1}  # maps the four-cycle onto "four-cycle relabelled"


def key_nodes_as_claimed() -> bool:
    """The key control's premise, checked in the run, apart from the key: in each node every
    replica sends one message and is sent one (so every replica's signature is the same in all
    three), ``KEY_RELABELLING`` maps the four-cycle onto its relabelling, and the third node is two
    cycles of two.  A node edited so that some replica's signature differs would let a key that
    reads signatures alone tell the cycles apart, and the control would stop showing anything."""
    replicas = list(range(KEY_CONFIG.replicas))
    each_one = all(sorted(s for s, _ in pairs) == sorted(d for _, d in pairs) == replicas
                   and all(s != d for s, d in pairs) for pairs in KEY_NODES.values())
    relabelled = sorted((KEY_RELABELLING[s], KEY_RELABELLING[d]) for s, d in KEY_NODES["four-cycle"])
    step = dict(KEY_NODES["two two-cycles"])
    return (each_one and relabelled == sorted(KEY_NODES["four-cycle relabelled"])
            and all(step[step[r]] == r for r in replicas))
