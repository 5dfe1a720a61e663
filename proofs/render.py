"""The canonical render's order (claims C3, C6): a sorted layout is determined by its set.

C3 is proved for an arbitrary strict total order ``lt`` on fragments (an uninterpreted relation),
so it rests on exactly what C5 proves of the real key and nothing else.  Its premises (``lt`` is
irreflexive, transitive and total) are universal; they are instantiated at every pair and triple
of the fragments in the query, which is a weaker premise, so ``unsat`` is still a proof.

Encoding for the bounded obligation: sequences are up to N fragment constants with prefix-closed
"active" flags, so one query covers every pair of lengths 0..N.  Sets in the induction lemmas are
arrays ``Frag -> Bool``; set equality is array equality (extensional in the theory of arrays).

C6 uses the real key (``proofs.ordering.full_key``) and ``spec.canonical_order``'s stable sort of
two items: swap only when the second key is strictly smaller."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations, product

import z3

from proofs.obligation import Goal, Obligation, Result
from proofs.ordering import fragment_witness, full_key, plain_fragments
from proofs.vocabulary import FRAG, fragments, hash_injective
from proofs.witness import as_bool, frag_text, list_text

lt = z3.Function("lt", FRAG, FRAG, z3.BoolSort())


def strict_total_order(terms: Sequence[z3.ExprRef]) -> list[z3.BoolRef]:
    """The premise "``lt`` is a strict total order", instantiated on ``terms``."""
    premises = [z3.Not(lt(t, t)) for t in terms]
    premises += [z3.Implies(z3.And(lt(p, q), lt(q, r)), lt(p, r)) for p, q, r in product(terms, repeat=3)]
    premises += [z3.Implies(p != q, z3.Or(lt(p, q), lt(q, p))) for p, q in permutations(terms, 2)]
    return premises


BOUND = 10


def sorted_unique_bounded(n: int = BOUND) -> Goal:
    """C3 for every pair of lengths up to ``n``: two strictly ``lt``-sorted sequences holding
    the same set have the same length and the same elements in the same places."""
    xs, ys = fragments(" ".join(f"x{k}" for k in range(n))), fragments(" ".join(f"y{k}" for k in range(n)))
    ax, ay = [z3.Bool(f"ax{k}") for k in range(n)], [z3.Bool(f"ay{k}") for k in range(n)]

    def well_formed(seq: list[z3.ExprRef], active: list[z3.BoolRef]) -> list[z3.BoolRef]:
        prefix = [z3.Implies(active[k + 1], active[k]) for k in range(n - 1)]
        ascending = [z3.Implies(active[k + 1], lt(seq[k], seq[k + 1])) for k in range(n - 1)]
        return prefix + ascending

    def within(seq: list[z3.ExprRef], active: list[z3.BoolRef], other: list[z3.ExprRef],
               other_active: list[z3.BoolRef]) -> list[z3.BoolRef]:
        return [z3.Implies(a, z3.Or([z3.And(b, e == o) for o, b in zip(other, other_active)]))
                for e, a in zip(seq, active)]

    premises = [*strict_total_order(xs + ys), *well_formed(xs, ax), *well_formed(ys, ay),
                *within(xs, ax, ys, ay), *within(ys, ay, xs, ax)]
    claim = z3.And([z3.And(a == b, z3.Implies(a, x == y)) for x, y, a, b in zip(xs, ys, ax, ay)])

    def describe(model: z3.ModelRef) -> dict[str, str]:
        def seq(items: list[z3.ExprRef], active: list[z3.BoolRef]) -> str:
            return list_text([frag_text(model.eval(e, model_completion=True))
                              for e, a in zip(items, active) if as_bool(model, a)])
        return {"x": seq(xs, ax), "y": seq(ys, ay)}

    return Goal(premises, claim, "QF_UF", describe)


def head_is_minimum_step() -> Goal:
    """Induction step A: if ``x1 < x2`` and ``x2`` is the minimum of the tail's set T, then
    ``x1`` is the minimum of {x1} u T (so the head of a sorted sequence is its set's minimum)."""
    x1, x2, e = fragments("x1 x2 e")
    tail = z3.Array("T", FRAG, z3.BoolSort())
    whole = z3.Store(tail, x1, True)
    premises = [lt(x1, x2), z3.Select(tail, x2),
                z3.Implies(z3.Select(tail, e), z3.Or(e == x2, lt(x2, e))),
                *strict_total_order([x1, x2, e])]
    claim = z3.Implies(z3.Select(whole, e), z3.Or(e == x1, lt(x1, e)))
    return Goal(premises, claim, "QF_AUF")


def minimum_unique_step() -> Goal:
    """Induction step B: equal sets with minima ``x1`` and ``y1`` have ``x1 = y1`` and equal
    remainders (the tails hold the same set), for any strict total order ``lt``."""
    x1, y1 = fragments("x1 y1")
    xset, yset = z3.Array("X", FRAG, z3.BoolSort()), z3.Array("Y", FRAG, z3.BoolSort())

    def minimum(m: z3.ExprRef, s: z3.ArrayRef, at: Sequence[z3.ExprRef]) -> list[z3.BoolRef]:
        return [z3.Select(s, m), *(z3.Implies(z3.Select(s, e), z3.Or(e == m, lt(m, e))) for e in at)]

    premises = [xset == yset, *minimum(x1, xset, [y1]), *minimum(y1, yset, [x1]),
                *strict_total_order([x1, y1])]
    claim = z3.And(x1 == y1, z3.Store(xset, x1, False) == z3.Store(yset, y1, False))
    return Goal(premises, claim, "QF_AUF")


def canonical_pair(p: z3.ExprRef, q: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
    """``spec.canonical_order([p, q], order_key)``: a stable sort swaps only on a strict drop."""
    swap = z3.ULT(full_key(q), full_key(p))
    return z3.If(swap, q, p), z3.If(swap, p, q)


def two_fragments_bag_order() -> Goal:
    """C6: the canonical order of {f, g} is the same from both arrival orders and equals one
    of the two BagMerge orders, given hash-injectivity (distinct fragments, distinct ids)."""
    f, g = fragments("f g")
    c1, c2 = canonical_pair(f, g)
    d1, d2 = canonical_pair(g, f)
    claim = z3.And(c1 == d1, c2 == d2,
                   z3.Or(z3.And(c1 == f, c2 == g), z3.And(c1 == g, c2 == f)))

    return Goal(hash_injective([f, g]), claim, "QF_UFBV", fragment_witness([f, g]), plain_fragments([f, g]))


OBLIGATIONS: list[Obligation] = [
    Obligation(f"c3_sorted_unique_upto_{BOUND}", "C3",
               f"for every pair of lengths <= {BOUND}, two strictly sorted sequences holding the same set "
               "are equal (premise: the order is strict total, C5)", Result.PROVED, sorted_unique_bounded),
    Obligation("c3_step_head_is_minimum", "C3",
               "induction step, all N: if x1 < x2 and x2 = min(T) then x1 = min({x1} u T) "
               "(premise: strict total order, C5)", Result.PROVED, head_is_minimum_step),
    Obligation("c3_step_minimum_unique", "C3",
               "induction step, all N: equal sets have equal minima and equal remainders, so sorted "
               "renders agree head by head (premise: strict total order, C5)", Result.PROVED,
               minimum_unique_step),
    Obligation("c6_two_fragments_bag_order", "C6",
               "for N = 2 the canonical order is the same for both arrival orders and equals one of "
               "the two BagMerge orders, given hash-injectivity", Result.PROVED, two_fragments_bag_order),
]
