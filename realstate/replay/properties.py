"""Every check ``canonmerge realstate`` runs, registered under its claim with its expectation.

Kept apart from the code that decides them (the replay's per-claim modules), as stateright keeps
``Property::always``/``sometimes`` apart from the search; ``spec.registered("realstate")`` lists them."""

from __future__ import annotations

from modelcheck import properties as MC
from spec import Expect, declared_in, register

PART = "realstate"
ALWAYS, SOMETIMES = Expect.ALWAYS, Expect.SOMETIMES

REDELIVERY = register(
    "C2", PART, "re-delivery leaves the canonical render unchanged", ALWAYS,
    "for every arity, every schedule with one re-delivered copy renders like the set")
PERMUTATIONS = register(
    "C3", PART, "permutations render one digest", ALWAYS,
    "for every arity n, all n! delivery orders of the agents' fragments render one digest")
TREES = register(
    "C3", PART, "merge trees render the same digest", ALWAYS,
    "every binary merge tree over every leaf order renders the digest of the set")
CROSS_DEVICE = register(
    "C3", PART, "canonical render has the same SHA-256 on CPU and the device", ALWAYS,
    "the canonical render computed on the device equals the one computed on the CPU, byte for byte")
BAG_ORDER = register(
    "C4", PART, "BagMerge order dependence", SOMETIMES,
    "some arity has two delivery orders whose BagMerge bytes differ")
BAG_REDELIVERY = declared_in(MC.BAG_REDELIVERY, PART)  # declared once, with modelcheck's search
KEY_EXACT = register(
    "C5", PART, "order key equals the exact reference", ALWAYS,
    "the engine's key of every fragment equals (total_order_bits(m), id) with m from the exact "
    "Fraction reference")
TIES = register(
    "C5", PART, "tied m (head-swapped twin) still orders uniquely", ALWAYS,
    "a fragment and its twin with the same key norms (heads 0 and 1 swapped, or with one KV head positions "
    "0 and 1: bit-identical m, other id) sort and render one way "
    "from every input order")
CONTROL_ORDER = register(
    "C3", PART, "control: an arrival-order render fails the permutations check", ALWAYS,
    "the permutations check, run on the same fragments with the planted order-by-arrival engine, "
    "reports a failure and exit code 1 (the check and the verdict machinery can fail)")
CONTROL_TIES = register(
    "C5", PART, "control: a key without tie-break fails the ties check", ALWAYS,
    "the tied-m check, run with the planted no-tie-break engine (m alone as the key), reports a "
    "failure and exit code 1")
CONTROL_BAG = register(
    "C4", PART, "control: one fragment twice gives BagMerge no order witness", ALWAYS,
    "the BagMerge order check, run on two deliveries of the first fragment (both orders are the "
    "same bytes), finds no witness and reports a failure: a 'sometimes' check without a witness "
    "never passes")
PAIR = register(
    "C6", PART, "n = 2 canonical render equals one BagMerge order", ALWAYS,
    "the canonical render of two fragments equals BagMerge in one of its two orders")
DECODE = register(
    "C8", PART, "greedy decode identical for every permutation", ALWAYS,
    "the final agent decodes the same tokens (and logits bytes) from every permutation's render")
FREQUENCIES = register(
    "C8", PART, "re-encoding uses the model's own rotary frequencies", ALWAYS,
    "the frequencies the engine re-encodes with are bit for bit the loaded model's inv_freq")
FIDELITY = register(
    "C8", PART, "re-encoding fidelity", ALWAYS,
    "re-encoded keys match the model's own RoPE of the same pre-RoPE keys at the target offset, "
    "above the storage dtype's cosine floor on every layer")
ORACLE = register(
    "C3", PART, "render equals the independent oracle", ALWAYS,
    "every distinct render the replay made, plus the full set in canonical, bag and naive mode at "
    "base 0 and at a non-zero base (each on the small-render path and, with small chunk sizes, on every "
    "path real-size renders take: the compiled kernel and both branches of torch's chunked path), sets "
    "rendered together by canonical_renders (one call holding the full set and its negated twin of the same layout shape; also with a batch bound that "
    "writes the full sets alone beside batched one-fragment sets), and every fragment's content id, "
    "m and key, equal the independently written reference (oracle/) byte for byte (a key it re-encodes to "
    "NaN included: the storage dtype's canonical quiet NaN)")
KNOWN_IDS = register(
    "C5", PART, "known answers: fingerprint digests and content ids", ALWAYS,
    "the published known-answer vectors (docs/VECTORS.md): fingerprint digests and content ids")
KNOWN_M = register(
    "C5", PART, "known answers: order values m (float64 bits, canonical NaN)", ALWAYS,
    "the published known-answer vectors: the order statistic's float64 bits")
KNOWN_KEYS = register(
    "C5", PART, "known answers: order keys (totalOrder bits ++ content id)", ALWAYS,
    "the published known-answer vectors: the 40-byte order keys")
KNOWN_RENDERS = register(
    "C3", PART, "known answers: render layouts and digests", ALWAYS,
    "the published known-answer vectors: canonical, bag and naive render layouts and digests, "
    "at base 0 and non-zero bases")

COMPOSE_ORDERS = register(
    "C9", PART, "composition: every schedule composes one render", ALWAYS,
    "every permutation of the first n fragments (each n >= 2), every merge tree over two leaf orders and every "
    "single re-delivery of the full set composes to one digest and one list of selected positions")
COMPOSE_DECODE = register(
    "C9", PART, "composition: one greedy answer from every schedule", ALWAYS,
    "the final agent decodes the same tokens, and the same first-step logits bytes, from every schedule's "
    "composed render")
COMPOSE_GATE_ZERO = register(
    "C9", PART, "gate: r = 0, s = 0 composes canonical_merge's bytes", ALWAYS,
    "for every n, composition with nothing recomputed is the bytes of canonical_merge of the first n fragments")
COMPOSE_GATE_FULL = register(
    "C9", PART, "gate: r = 1 composes one prefill of the canonical sequence", ALWAYS,
    "composition with every token recomputed is, byte for byte, the keys and values of one prefill of the "
    "canonical token sequence (text-only agents, input ids) and of the canonical inputs (the replay's agents)")
CONTROL_COMPOSE = register(
    "C9", PART, "control: an arrival-order selection fails the composition check", ALWAYS,
    "the composition check, run on the same fragments with the planted selection that anchors every fragment "
    "but the first to arrive (at least one anchor), over the n arrival orders that each put another fragment "
    "first, reports a failure and exit code 1")
COMPOSE_CHECKS = (COMPOSE_ORDERS, COMPOSE_DECODE, COMPOSE_GATE_ZERO, COMPOSE_GATE_FULL, CONTROL_COMPOSE)
