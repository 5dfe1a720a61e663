"""The structural checks ``canonmerge bench`` runs in every problem-budget cell, registered under
their claims (part "realstate")."""

from __future__ import annotations

from spec import Expect, register

PART = "realstate"
ALWAYS, SOMETIMES = Expect.ALWAYS, Expect.SOMETIMES

BENCH_UNIQUENESS = register(
    "C8", PART, "bench: one CanonicalMerge answer over all k! input orders", ALWAYS,
    "canonmerge bench: CanonicalMerge fed each of the k! input orders of a problem's fragments decodes "
    "one answer (identical greedy tokens and first-step logits bytes) in every problem-budget cell")
BENCH_RENDER = register(
    "C3", PART, "bench: one CanonicalMerge digest over all k! orders and re-deliveries", ALWAYS,
    "canonmerge bench: every input order, and every single re-delivered fragment, renders the digest "
    "of the set in every problem-budget cell")
BENCH_ABSORB = register(
    "C2", PART, "bench: a re-delivered fragment leaves the state unchanged", ALWAYS,
    "canonmerge bench: merging a copy of any one agent's fragment into the state leaves its content ids unchanged")
BENCH_BAG = register(
    "C4", PART, "bench: BagMerge bytes change with order and re-delivery", SOMETIMES,
    "canonmerge bench: some cell has two input orders with different BagMerge bytes (a witness), and "
    "in every cell a re-delivered fragment changes BagMerge's bytes")
