"""The canonical render's order (claims C3, C6): a list sorted by the real key is determined by its set.

C3 is proved for the real 40-byte key, ``proofs.ordering.full_key`` (``concat(total_order_bits(m),
cid)`` compared as an unsigned 320-bit word), with hash-injectivity as the only premise about the
world, for lists of every length N.  The statement the code relies on:

    U(s):  for every list t, if s and t are each non-strictly sorted by the key, each free of
           duplicates, and hold the same set, then s = t.

Lists are the algebraic datatype ``FragList = nil | cons(head: Frag, tail: FragList)``; the
predicates on them are uninterpreted functions whose definitions are premises, unfolded once at
the lists a query talks about (a true fact about the real definition, so ``unsat`` is a proof):

    set_of(nil) = {}                 set_of(cons(h, t)) = set_of(t) + {h}      (arrays Frag -> Bool)
    dup_free(nil)                    dup_free(cons(h, t)) = h not in set_of(t) and dup_free(t)
    sorted(nil)                      sorted(cons(h, t)) = (t = nil or key(h) <= key(head t)) and sorted(t)

The induction over N (the length of s) is a chain of obligations, each a quantifier-free query:

- ``c3_key_le_antisymmetric``: key(f) <= key(g) and key(g) <= key(f) imply f = g.  The only use
  of hash-injectivity, and the only place the content-id tie-break matters: with the key
  without tie-break this lemma and the bounded statement are refuted (expected).
- ``c3_head_is_minimum``: a sorted non-empty list's head is <= every member (induction over the
  list: premise = the same claim for the tail, plus bvule transitivity at three keys).
- ``c3_head_not_in_tail`` and ``c3_tail_holds_set_minus_head``: a duplicate-free list's tail
  holds exactly the set minus the head.
- ``c3_sorted_unique_base`` (N = 0) and ``c3_sorted_unique_step`` (N to N + 1): the step's
  premise about lists of length N is the induction hypothesis U(tail s) at tail t, nothing
  else; its other premises are the definitions at s and t and instances of the lemmas above.

By induction on N every U holds.  ``c3_sorted_unique_upto_10`` re-checks the statement directly
for every pair of lengths up to 10 (a cross-check, not the proof); ``proofs.links`` runs
``spec.canonical_order`` on every permutation of small fragment lists and checks its output is
sorted by this key and holds the input set, so by U it is the one sorted list of that set.

C6 uses the real key and ``spec.canonical_order``'s stable sort of two items: swap only when the
second key is strictly smaller."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import z3

from proofs.obligation import Goal, Obligation, Premise, Result, law, premise
from proofs.ordering import (
    ORDER_LAWS_KEPT,
    Key,
    fragment_witness,
    full_key,
    key_le,
    key_without_tiebreak,
    le_antisymmetric_at,
    le_transitive_at,
    lt_total_at,
    plain_fragments,
)
from proofs.vocabulary import FRAG, fragments, hash_injective
from proofs.witness import as_bool, frag_text, list_text

LOGIC = "ALL"  # datatypes + arrays + bit-vectors + uninterpreted functions

_list = z3.Datatype("FragList")
_list.declare("nil")
_list.declare("cons", ("head", FRAG), ("tail", _list))
FRAG_LIST = _list.create()
nil, cons, head, tail = FRAG_LIST.nil, FRAG_LIST.cons, FRAG_LIST.head, FRAG_LIST.tail
is_nil, is_cons = FRAG_LIST.is_nil, FRAG_LIST.is_cons

FRAG_SET = z3.ArraySort(FRAG, z3.BoolSort())
EMPTY = z3.K(FRAG, z3.BoolVal(False))
set_of = z3.Function("set_of", FRAG_LIST, FRAG_SET)
dup_free = z3.Function("dup_free", FRAG_LIST, z3.BoolSort())
sorted_by_key = z3.Function("sorted_by_key", FRAG_LIST, z3.BoolSort())


def lists(names: str) -> list[z3.ExprRef]:
    return list(z3.Consts(names, FRAG_LIST))


def member(e: z3.ExprRef, s: z3.ExprRef) -> z3.BoolRef:
    return z3.Select(set_of(s), e)


# ----------------------------------------------------------------------------- definitions

def set_definition(s: z3.ExprRef) -> z3.BoolRef:
    return set_of(s) == z3.If(is_nil(s), EMPTY, z3.Store(set_of(tail(s)), head(s), True))


def dup_free_definition(s: z3.ExprRef) -> z3.BoolRef:
    return dup_free(s) == z3.Or(is_nil(s), z3.And(z3.Not(member(head(s), tail(s))), dup_free(tail(s))))


def sorted_definition(s: z3.ExprRef, key: Key) -> z3.BoolRef:
    le = key_le(key)
    adjacent = z3.Or(is_nil(tail(s)), le(head(s), head(tail(s))))
    return sorted_by_key(s) == z3.Or(is_nil(s), z3.And(adjacent, sorted_by_key(tail(s))))


def definitions(label: str, build: Callable[[z3.ExprRef], z3.BoolRef], *at: z3.ExprRef) -> Premise:
    return premise(f"definition of {label} at {', '.join(map(str, at))}", *(build(s) for s in at))


# ----------------------------------------------------------------------------- the statements
# Each is a Python function so that the lemma's obligation and its instances in later
# obligations are the same formula.

def antisymmetric_at(f: z3.ExprRef, g: z3.ExprRef, key: Key) -> z3.BoolRef:
    le = key_le(key)
    return z3.Implies(z3.And(le(f, g), le(g, f)), f == g)


def head_is_minimum_at(s: z3.ExprRef, e: z3.ExprRef, key: Key) -> z3.BoolRef:
    return z3.Implies(z3.And(is_cons(s), sorted_by_key(s), member(e, s)), key_le(key)(head(s), e))


def head_not_in_tail_at(s: z3.ExprRef) -> z3.BoolRef:
    return z3.Implies(z3.And(is_cons(s), dup_free(s)), z3.Not(member(head(s), tail(s))))


def tail_is_rest_at(s: z3.ExprRef) -> z3.BoolRef:
    return z3.Implies(z3.And(is_cons(s), z3.Not(member(head(s), tail(s)))),
                      z3.And(member(head(s), s), set_of(tail(s)) == z3.Store(set_of(s), head(s), False)))


def tail_inherits_at(s: z3.ExprRef) -> z3.BoolRef:
    return z3.Implies(z3.And(is_cons(s), sorted_by_key(s), dup_free(s)),
                      z3.And(sorted_by_key(tail(s)), dup_free(tail(s))))


def unique_hypotheses(s: z3.ExprRef, t: z3.ExprRef) -> list[z3.BoolRef]:
    return [sorted_by_key(s), sorted_by_key(t), dup_free(s), dup_free(t), set_of(s) == set_of(t)]


def unique_at(s: z3.ExprRef, t: z3.ExprRef) -> z3.BoolRef:
    return z3.Implies(z3.And(unique_hypotheses(s, t)), s == t)


def _split(claim: z3.BoolRef) -> tuple[z3.BoolRef, z3.BoolRef]:
    """(antecedent, conclusion) of one of the implications above."""
    antecedent, conclusion = claim.children()
    return antecedent, conclusion


# ----------------------------------------------------------------------------- the lemmas

def key_le_antisymmetric(key: Key = full_key) -> Goal:
    """Two fragments whose keys are each <= the other are one fragment: equal 320-bit words have
    equal low 256 bits (the content ids), and hash-injectivity does the rest."""
    f, g = fragments("f g")
    hypothesis, conclusion = _split(antisymmetric_at(f, g, key))
    premises = [premise("hash-injectivity", *hash_injective([f, g])),
                premise("bvule antisymmetry at the two keys", le_antisymmetric_at(key(f), key(g)),
                        kept=ORDER_LAWS_KEPT)]
    return law(premises, [hypothesis], conclusion, LOGIC, fragment_witness([f, g]), plain_fragments([f, g]))


def head_is_minimum(key: Key = full_key) -> Goal:
    """Induction over the list: if the claim holds for tail(s), it holds for s."""
    (s,), (e,) = lists("s"), fragments("e")
    hypothesis, conclusion = _split(head_is_minimum_at(s, e, key))
    premises = [premise("induction hypothesis: the claim for tail(s)", head_is_minimum_at(tail(s), e, key)),
                definitions("sorted", lambda x: sorted_definition(x, key), s),
                definitions("set_of", set_definition, s, tail(s)),
                premise("bvule transitivity at key(head s), key(head tail s), key(e)",
                        le_transitive_at(key(head(s)), key(head(tail(s))), key(e)), kept=ORDER_LAWS_KEPT)]
    return law(premises, [hypothesis], conclusion, LOGIC)


def head_not_in_tail() -> Goal:
    (s,) = lists("s")
    hypothesis, conclusion = _split(head_not_in_tail_at(s))
    return law([definitions("dup_free", dup_free_definition, s)], [hypothesis], conclusion, LOGIC)


def tail_holds_set_minus_head() -> Goal:
    (s,) = lists("s")
    hypothesis, conclusion = _split(tail_is_rest_at(s))
    return law([definitions("set_of", set_definition, s)], [hypothesis], conclusion, LOGIC)


def tail_sorted_and_dup_free(key: Key = full_key) -> Goal:
    (s,) = lists("s")
    hypothesis, conclusion = _split(tail_inherits_at(s))
    premises = [definitions("sorted", lambda x: sorted_definition(x, key), s),
                definitions("dup_free", dup_free_definition, s)]
    return law(premises, [hypothesis], conclusion, LOGIC)


def sorted_unique_base(key: Key = full_key) -> Goal:
    """N = 0: the empty list is the only list holding the empty set."""
    s, t = lists("s t")
    premises = [definitions("set_of", set_definition, s, t)]
    return law(premises, [is_nil(s), *unique_hypotheses(s, t)], s == t, LOGIC)


def sorted_unique_step(key: Key = full_key) -> Goal:
    """N to N + 1: s = cons(h, s') with s' of length N.  The heads of s and t are both the
    minimum of the one set, so they are equal; the tails are sorted, duplicate-free and hold
    the set minus that head, so the induction hypothesis makes them equal.  (t = nil is
    impossible: its set is empty while s's holds its head.)"""
    s, t = lists("s t")
    premises = [
        premise("induction hypothesis U(tail s) at tail t", unique_at(tail(s), tail(t))),
        premise("lemma c3_head_is_minimum at (s, head t), (t, head s)",
                head_is_minimum_at(s, head(t), key), head_is_minimum_at(t, head(s), key)),
        premise("lemma c3_key_le_antisymmetric at (head s, head t)", antisymmetric_at(head(s), head(t), key)),
        premise("lemma c3_head_not_in_tail at s, t", head_not_in_tail_at(s), head_not_in_tail_at(t)),
        premise("lemma c3_tail_holds_set_minus_head at s, t", tail_is_rest_at(s), tail_is_rest_at(t)),
        premise("lemma c3_tail_sorted_and_dup_free at s, t", tail_inherits_at(s), tail_inherits_at(t)),
        premise("definition of set_of at nil", set_of(nil) == EMPTY),
    ]
    return law(premises, [is_cons(s), *unique_hypotheses(s, t)], s == t, LOGIC)


# ----------------------------------------------------------------------------- bounded cross-check

BOUND = 10


key_order = z3.Function("key_order", FRAG, FRAG, z3.BoolSort())


def sorted_unique_bounded(n: int = BOUND, key: Key | None = None) -> Goal:
    """U directly for every pair of lengths up to ``n`` (prefix "active" flags: one query covers
    lengths 0..n).  Sorted is stated pairwise (x_j <= x_k for j < k, what adjacent sortedness
    gives by transitivity).

    With ``key`` None the order is a relation ``key_order`` whose only premise is the key's
    antisymmetry, ``c3_key_le_antisymmetric``, at every (x_j, y_k): the statement is then
    proved for every order with that property, the real key's among them.  (Bit-blasting 20
    real 320-bit keys under EUF is out of reach: Z3 does not finish N = 3 in a minute.)
    With a ``key``, <= is bvule on it and hash-injectivity is the premise: used at N = 2 to
    refute the key without tie-break on real bit-vectors."""
    xs = fragments(" ".join(f"x{k}" for k in range(n)))
    ys = fragments(" ".join(f"y{k}" for k in range(n)))
    ax, ay = [z3.Bool(f"ax{k}") for k in range(n)], [z3.Bool(f"ay{k}") for k in range(n)]
    le = key_order if key is None else key_le(key)

    def well_formed(seq: list[z3.ExprRef], active: list[z3.BoolRef]) -> list[z3.BoolRef]:
        prefix = [z3.Implies(active[k + 1], active[k]) for k in range(n - 1)]
        pairs = [(j, k) for j in range(n) for k in range(j + 1, n)]
        ordered = [z3.Implies(active[k], le(seq[j], seq[k])) for j, k in pairs]
        distinct = [z3.Implies(active[k], seq[j] != seq[k]) for j, k in pairs]
        return prefix + ordered + distinct

    def within(seq: list[z3.ExprRef], active: list[z3.BoolRef], other: list[z3.ExprRef],
               other_active: list[z3.BoolRef]) -> list[z3.BoolRef]:
        return [z3.Implies(a, z3.Or([z3.And(b, e == o) for o, b in zip(other, other_active)]))
                for e, a in zip(seq, active)]

    hypotheses = [*well_formed(xs, ax), *well_formed(ys, ay), *within(xs, ax, ys, ay), *within(ys, ay, xs, ax)]
    claim = z3.And([z3.And(a == b, z3.Implies(a, x == y)) for x, y, a, b in zip(xs, ys, ax, ay)])
    if key is None:
        premises = [premise("lemma c3_key_le_antisymmetric at every (x_j, y_k)",
                            *(z3.Implies(z3.And(le(x, y), le(y, x)), x == y) for x, y in product(xs, ys)))]
    else:
        premises = [premise("hash-injectivity", *hash_injective(xs + ys))]

    def describe(model: z3.ModelRef) -> dict[str, str]:
        def seq(items: list[z3.ExprRef], active: list[z3.BoolRef]) -> str:
            return list_text([frag_text(model.eval(e, model_completion=True))
                              for e, a in zip(items, active) if as_bool(model, a)])
        shown = {"x": seq(xs, ax), "y": seq(ys, ay)}
        if key is not None:
            active = [e for e, a in [*zip(xs, ax), *zip(ys, ay)] if as_bool(model, a)]
            named = {frag_text(model.eval(e, model_completion=True)): e for e in active}
            shown.update(fragment_witness(list(named.values()))(model))
        return shown

    return law(premises, hypotheses, claim, "QF_UF" if key is None else "QF_UFBV", describe,
               [] if key is None else plain_fragments(xs + ys))


# ----------------------------------------------------------------------------- C6

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
    premises = [premise("hash-injectivity", *hash_injective([f, g])),
                premise("bvult totality at the two keys", lt_total_at(full_key(f), full_key(g)),
                        kept=ORDER_LAWS_KEPT)]
    return Goal(premises, claim, "QF_UFBV", fragment_witness([f, g]), plain_fragments([f, g]))


U = "two lists each non-strictly sorted by the key, duplicate-free and holding the same set are equal"

OBLIGATIONS: list[Obligation] = [
    Obligation("c3_key_le_antisymmetric", "C3",
               "key(f) <= key(g) <= key(f) implies f = g for the real 40-byte key, given hash-injectivity "
               "(the content-id tie-break at work)", Result.PROVED, key_le_antisymmetric),
    Obligation("c3_head_is_minimum", "C3",
               "induction over the list: a sorted non-empty list's head has a key <= every member's",
               Result.PROVED, head_is_minimum),
    Obligation("c3_head_not_in_tail", "C3", "a duplicate-free non-empty list's head is not in its tail",
               Result.PROVED, head_not_in_tail),
    Obligation("c3_tail_holds_set_minus_head", "C3",
               "if the head is not in the tail, the head is in the set and the tail holds exactly the set "
               "minus the head",
               Result.PROVED, tail_holds_set_minus_head),
    Obligation("c3_tail_sorted_and_dup_free", "C3",
               "the tail of a sorted, duplicate-free non-empty list is sorted and duplicate-free",
               Result.PROVED, tail_sorted_and_dup_free),
    Obligation("c3_sorted_unique_base", "C3", f"N = 0: {U} (the empty list is the only one for the empty set)",
               Result.PROVED, sorted_unique_base),
    Obligation("c3_sorted_unique_step", "C3",
               f"N to N+1: {U}, for s of length N+1, from the same statement for tail(s) (length N) and "
               "the lemmas", Result.PROVED, sorted_unique_step),
    Obligation(f"c3_sorted_unique_upto_{BOUND}", "C3",
               f"cross-check for every pair of lengths <= {BOUND}: {U}, for any order with the key's "
               "antisymmetry (c3_key_le_antisymmetric)", Result.PROVED, sorted_unique_bounded),
    Obligation("c3_sorted_unique_without_tiebreak", "C3",
               "with the key without the content-id tie-break (real bit-vectors, hash-injectivity), two "
               "different lists of 2 fragments are both sorted and hold the same set (equal m)",
               Result.REFUTED, lambda: sorted_unique_bounded(2, key_without_tiebreak)),
    Obligation("c6_two_fragments_bag_order", "C6",
               "for N = 2 the canonical order is the same for both arrival orders and equals one of "
               "the two BagMerge orders, given hash-injectivity", Result.PROVED, two_fragments_bag_order),
]
