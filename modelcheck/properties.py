"""Every check ``canonmerge check`` runs, registered under its claim with its expectation.

Kept apart from the search (``checks``, ``gossip``, ``randomized``), as stateright keeps
``Property::always``/``sometimes`` apart from the model: the search only counts cases and
violations or witnesses against these declarations, and ``spec.registered("modelcheck")`` is the
index of what this part checks, the rows in which each run checks its own instruments
(``INSTRUMENTS``) included."""

from __future__ import annotations

from spec import Expect, register

PART = "modelcheck"
ALWAYS, SOMETIMES = Expect.ALWAYS, Expect.SOMETIMES

PERMUTATIONS = register(
    "C3", PART, "permutations", ALWAYS,
    "every delivery order of each set renders the same bytes as the index-order fold")
MERGE_TREES = register(
    "C3", PART, "merge trees", ALWAYS,
    "every binary merge tree over every leaf order renders the same bytes")
REDELIVERIES = register(
    "C3", PART, "re-deliveries", ALWAYS,
    "every schedule with re-delivered copies (distinct objects, equal bytes) renders the same bytes")
ENGINE_ORDER = register(
    "C3", PART, "engine order over every input order", ALWAYS,
    "the engine's sort driven directly with every input order of each set (equal-m twins "
    "included) returns one order, spec.canonical_order by the spec key")
ORACLE = register(
    "C3", PART, "render equals the independent oracle", ALWAYS,
    "every canonical render the matrix makes (and BagMerge of each refinement state) equals, byte "
    "for byte, the independently written reference render of oracle/ at the universe's base (a key "
    "re-encoded to NaN included: both write the dtype's canonical quiet NaN)")
REFINEMENT_ORDER = register(
    "C3", PART, "refinement: render order = spec order", ALWAYS,
    "the render lays fragments out in spec.canonical_order by the backend's key")
RANDOMIZED = register(
    "C3", PART, "randomized N <= 64 (Hypothesis)", ALWAYS,
    "random sets of up to 64 fragments render one digest over random orders, trees, re-deliveries")
BAG_ORDER = register(
    "C4", PART, "BagMerge order dependence", SOMETIMES,
    "some set has two delivery orders whose BagMerge bytes differ")
# the replay runs this search on its agents' fragments and reports it in the same words
BAG_REDELIVERY = register(
    "C4", (PART, "realstate"), "BagMerge re-delivery", SOMETIMES,
    "some re-delivered copy changes the BagMerge bytes")
PAIRS = register(
    "C6", PART, "N = 2 equals a BagMerge order", ALWAYS,
    "the canonical render of every pair equals BagMerge in one of its two orders")
REFINEMENT_BAG = register(
    "C6", PART, "refinement: render = BagMerge of spec order", ALWAYS,
    "the canonical render equals BagMerge of the spec order")
LAWS_C1 = register(
    "C1", PART, "semilattice laws on concrete states", ALWAYS,
    "merge is commutative, associative and idempotent on concrete states (same set, same bytes)")
REFINEMENT_UNION = register(
    "C1", PART, "refinement: abstract(merge) = union", ALWAYS,
    "the abstraction of a merged state is the union of the abstractions")
LAWS_C2 = register(
    "C2", PART, "inflation and absorption on concrete states", ALWAYS,
    "merge is inflationary and absorbing on concrete states")
GOSSIP_SAME_SET = register(
    "C7", PART, "gossip: equal sets render equal", ALWAYS,
    "in every reachable state, replicas holding the same set render the same bytes (each "
    "replica's state rendered by its own call)")
GOSSIP_FAIR = register(
    "C7", PART, "gossip: fair exchange converges", ALWAYS,
    "from every reachable state, a fair exchange brings every replica to the render of the union")

# The instruments' own rows: each run proves that its C3 search could see (``modelcheck.instruments``),
# registered under C3, whose search they watch.
CANARY_ARRIVAL = register(
    "C3", PART, "canary: order-by-arrival render is caught", ALWAYS,
    "a negative control sent through the run's own shards, engine, shared unions and verdict "
    "merging — a render that lays fragments out in arrival order, on a tiny universe — is "
    "reported as a C3 violation by every C3 family that ran")
CANARY_SHARDS = register(
    "C3", PART, "canary: a render that differs between shards is caught", ALWAYS,
    "a negative control whose render is constant within each shard but differs between shards is "
    "reported by the union of shard verdicts (digests of one set compared across shards)")
COVERAGE_COUNTS = register(
    "C3", PART, "coverage: schedules checked = closed-form count", ALWAYS,
    "per universe and N, the distinct valid permutations, merge trees and re-delivery patterns "
    "rendered equal n!, (2n-2)!/(n-1)! and the surjection counts, computed independently")
COVERAGE_ARRIVAL = register(
    "C3", PART, "coverage: arrival order fed = schedule (from-scratch sample)", ALWAYS,
    "on a sample of every shard, the state each render is given equals the schedule's state "
    "rebuilt from nothing (arrival order and state key), and the comparison sees a control")
COVERAGE_PLAN = register(
    "C3", PART, "coverage: shard plan = closed forms at every arity", ALWAYS,
    "the C3 shard plan of every arity and re-delivery bound check accepts (N = 1..9, R = 0..3), "
    "built as counts only, holds n!, (2n-2)!/(n-1)! and the surjection counts of schedules per "
    "family, summed over its shards")
COVERAGE_SELECTION = register(
    "C3", PART, "coverage: every shard ran exactly its selection", ALWAYS,
    "the checks each shard tallied (the canaries' included, whose selections are narrower) are the "
    "checks of the selection it was handed that its kind runs, none more, none fewer")

C3_FAMILIES = (PERMUTATIONS, MERGE_TREES, REDELIVERIES)
INSTRUMENTS = (CANARY_ARRIVAL, CANARY_SHARDS, COVERAGE_COUNTS, COVERAGE_ARRIVAL, COVERAGE_PLAN, COVERAGE_SELECTION)
EXHAUSTIVE = (PERMUTATIONS, MERGE_TREES, REDELIVERIES, ENGINE_ORDER, ORACLE, REFINEMENT_ORDER, BAG_ORDER,
              BAG_REDELIVERY, PAIRS, REFINEMENT_BAG, LAWS_C1, REFINEMENT_UNION, LAWS_C2)
GOSSIP = (GOSSIP_SAME_SET, GOSSIP_FAIR)
ALL = (*EXHAUSTIVE, RANDOMIZED, *GOSSIP)
