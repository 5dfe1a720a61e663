"""The FragmentSet CvRDT (claims C1, C2, C7): merge laws over whole states, with Z3 arrays.

Encoding.  A state is a pair of arrays over 256-bit content ids: ``dom : ID -> Bool`` (which
ids are present) and ``pay : ID -> Frag`` (the fragment stored under an id), i.e. an arbitrary,
possibly infinite, map from ids to fragments.  Merge is pointwise (``spec.FragmentSet.merge``):
an id is present in ``a | b`` when it is present in either, and keeps ``a``'s fragment when both
have it.  Equality of states is extensional (same ids, same fragment under each present id) and
``a <= b`` is inclusion of ids, as in ``spec.FragmentSet``.

Every law is "for all ids i, <pointwise statement at i>", so the negation is skolemized with one
free id ``i`` and merged states are never materialized: a ``State`` is read at ``i`` through
``at(i)``.  Universal premises (a state is indexed by content id; hash-injectivity) are
instantiated at ``i`` and at the fragments read there: a weaker premise, so ``unsat`` is a
proof under the universal one.  Hypotheses of a law (``b <= a``) are the antecedent of its
claim.  A law carries only the premises it needs (the vacuity check drops each and wants
``sat``): most hold for all states; commutativity and convergence need hash-injectivity.
The result is quantifier-free (QF_AUFBV).

The laws take the merge rule as a parameter so that the same law can be run against a wrong
merge (intersection is not inflationary) and must then be refuted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import z3

from proofs.obligation import Goal, Obligation, Premise, Result, law, premise
from proofs.vocabulary import FRAG, ID, ID_BITS, cid, fragments, hash_injective
from proofs.witness import as_bool, as_int, frag_text, id_text, list_text

LOGIC = "QF_AUFBV"


@dataclass(frozen=True)
class Slot:
    """A state read at one id: whether the id is present and which fragment it holds."""

    present: z3.BoolRef
    payload: z3.ExprRef


MergeRule = Callable[[Slot, Slot], Slot]


def union_by_id(a: Slot, b: Slot) -> Slot:
    """``spec.FragmentSet.merge``: present in either; the left operand's fragment wins."""
    return Slot(z3.Or(a.present, b.present), z3.If(a.present, a.payload, b.payload))


def intersection(a: Slot, b: Slot) -> Slot:
    """A wrong merge, for negative tests: it loses fragments, so it is not inflationary."""
    return Slot(z3.And(a.present, b.present), a.payload)


class State(Protocol):
    def at(self, i: z3.BitVecRef) -> Slot: ...


@dataclass(frozen=True)
class Leaf:
    """An arbitrary state: two free arrays."""

    name: str
    dom: z3.ArrayRef
    pay: z3.ArrayRef

    @classmethod
    def named(cls, name: str) -> Leaf:
        return cls(name, z3.Array(f"{name}_dom", ID, z3.BoolSort()), z3.Array(f"{name}_pay", ID, FRAG))

    def at(self, i: z3.BitVecRef) -> Slot:
        return Slot(z3.Select(self.dom, i), z3.Select(self.pay, i))

    def indexed_by_content_id(self, i: z3.BitVecRef) -> z3.BoolRef:
        """Premise: the fragment stored under ``i`` has content id ``i`` (``FragmentSet.of``)."""
        slot = self.at(i)
        return z3.Implies(slot.present, cid(slot.payload) == i)


@dataclass(frozen=True)
class Joined:
    """``left | right`` under a merge rule, read pointwise."""

    left: State
    right: State
    rule: MergeRule = union_by_id

    def at(self, i: z3.BitVecRef) -> Slot:
        return self.rule(self.left.at(i), self.right.at(i))


@dataclass(frozen=True)
class Delivered:
    """The one-fragment state ``{u}`` if ``delivered`` holds, else the empty state."""

    fragment: z3.ExprRef
    delivered: z3.BoolRef

    def at(self, i: z3.BitVecRef) -> Slot:
        return Slot(z3.And(self.delivered, cid(self.fragment) == i), self.fragment)


EMPTY_PAYLOAD = z3.Const("no_fragment", FRAG)


@dataclass(frozen=True)
class Empty:
    def at(self, i: z3.BitVecRef) -> Slot:
        return Slot(z3.BoolVal(False), EMPTY_PAYLOAD)


def equal_at(s: State, t: State, i: z3.BitVecRef) -> z3.BoolRef:
    """``s`` and ``t`` agree at ``i``: both absent, or both present with the same fragment."""
    x, y = s.at(i), t.at(i)
    return z3.And(x.present == y.present, z3.Implies(x.present, x.payload == y.payload))


def leq_at(s: State, t: State, i: z3.BitVecRef) -> z3.BoolRef:
    """``s <= t`` at ``i`` (inclusion of ids, as ``spec.FragmentSet.__le__``)."""
    return z3.Implies(s.at(i).present, t.at(i).present)


# ----------------------------------------------------------------------------- witnesses

def _set_text(model: z3.ModelRef, state: State, i: z3.BitVecRef) -> str:
    """A state restricted to the witness id, as a list of ``id: fragment`` entries."""
    slot = state.at(i)
    if not as_bool(model, slot.present):
        return "{}"
    at = id_text(as_int(model, i))
    return "{" + f"{at}: {frag_text(model.eval(slot.payload, model_completion=True))}" + "}"


def set_witness(i: z3.BitVecRef, leaves: Sequence[Leaf], states: dict[str, State],
                fragments_shown: Sequence[z3.ExprRef] = ()) -> Callable[[z3.ModelRef], dict[str, str]]:
    """Witness printer: the offending id, each state at that id, and the fragments' ids.

    Laws are pointwise, so the states are shown restricted to the one id where they differ;
    the model's values at other ids are unconstrained and would only mislead."""

    def describe(model: z3.ModelRef) -> dict[str, str]:
        out = {"at id": id_text(as_int(model, i)) + " (states shown restricted to it)"}
        out.update({name: _set_text(model, state, i) for name, state in states.items()})
        held = [leaf.at(i).payload for leaf in leaves if as_bool(model, leaf.at(i).present)]
        shown = [*fragments_shown, *held]
        for term in shown:
            frag = model.eval(term, model_completion=True)
            out[f"cid({frag_text(frag)})"] = id_text(as_int(model, cid(frag)))
        return out

    return describe


# ----------------------------------------------------------------------------- C1, C2 laws

def _frame(names: str, injective: bool = False) -> tuple[list[Leaf], z3.BitVecRef, list[Premise]]:
    """Leaves, the skolem id ``i``, and the premises a law needs: none, or (for the laws where
    two payloads under one id meet) states indexed by content id plus hash-injectivity."""
    leaves = [Leaf.named(n) for n in names.split()]
    i = z3.BitVec("i", ID_BITS)
    premises = []
    if injective:
        premises = [premise("states are indexed by content id", *(leaf.indexed_by_content_id(i) for leaf in leaves)),
                    premise("hash-injectivity", *hash_injective([leaf.at(i).payload for leaf in leaves]))]
    return leaves, i, premises


def commutativity(rule: MergeRule = union_by_id, injective: bool = True) -> Goal:
    """C1: ``a | b = b | a`` (the only law here where the payload kept on a shared id matters,
    so the only one that needs hash-injectivity)."""
    (a, b), i, premises = _frame("a b", injective)
    ab, ba = Joined(a, b, rule), Joined(b, a, rule)
    return Goal(premises, equal_at(ab, ba, i), LOGIC,
                set_witness(i, [a, b], {"a": a, "b": b, "a|b": ab, "b|a": ba}))


def associativity(rule: MergeRule = union_by_id) -> Goal:
    """C1: ``(a | b) | c = a | (b | c)``, for all states (no premise: leftmost payload wins on both sides)."""
    (a, b, c), i, premises = _frame("a b c")
    left, right = Joined(Joined(a, b, rule), c, rule), Joined(a, Joined(b, c, rule), rule)
    return Goal(premises, equal_at(left, right, i), LOGIC,
                set_witness(i, [a, b, c], {"a": a, "b": b, "c": c, "(a|b)|c": left, "a|(b|c)": right}))


def idempotence(rule: MergeRule = union_by_id) -> Goal:
    """C1: ``a | a = a``, for all states."""
    (a,), i, premises = _frame("a")
    aa = Joined(a, a, rule)
    return Goal(premises, equal_at(aa, a, i), LOGIC, set_witness(i, [a], {"a": a, "a|a": aa}))


def inflation(rule: MergeRule = union_by_id) -> Goal:
    """C2: ``a <= a | b`` and ``b <= a | b``, for all states."""
    (a, b), i, premises = _frame("a b")
    ab = Joined(a, b, rule)
    return Goal(premises, z3.And(leq_at(a, ab, i), leq_at(b, ab, i)), LOGIC,
                set_witness(i, [a, b], {"a": a, "b": b, "a|b": ab}))


def absorption(rule: MergeRule = union_by_id) -> Goal:
    """C2: ``b <= a`` implies ``a | b = a`` (re-delivery is a no-op), for all states."""
    (a, b), i, premises = _frame("a b")
    ab = Joined(a, b, rule)
    return law(premises, [leq_at(b, a, i)], equal_at(ab, a, i), LOGIC,
                set_witness(i, [a, b], {"a": a, "b": b, "a|b": ab}))


def least_upper_bound(rule: MergeRule = union_by_id) -> Goal:
    """C2: ``a <= c`` and ``b <= c`` imply ``a | b <= c``, for all states."""
    (a, b, c), i, premises = _frame("a b c")
    ab = Joined(a, b, rule)
    return law(premises, [leq_at(a, c, i), leq_at(b, c, i)], leq_at(ab, c, i), LOGIC,
                set_witness(i, [a, b, c], {"a": a, "b": b, "c": c, "a|b": ab}))


# ----------------------------------------------------------------------------- C7

Support = Callable[[z3.ExprRef], z3.BoolRef]


def _support_array(name: str) -> Support:
    array = z3.Array(name, FRAG, z3.BoolSort())
    return lambda f: z3.Select(array, f)


def invariant(state: State, support: Support, i: z3.BitVecRef,
              instances: Sequence[z3.ExprRef]) -> z3.BoolRef:
    """Inv(state, S) at id ``i``: the fragment held under ``i`` was delivered (is in S) and has
    id ``i``; and every delivered fragment with id ``i`` (checked at ``instances``) is present."""
    slot = state.at(i)
    stored = z3.Implies(slot.present, z3.And(support(slot.payload), cid(slot.payload) == i))
    complete = [z3.Implies(z3.And(support(f), cid(f) == i), slot.present) for f in instances]
    return z3.And(stored, *complete)


def invariant_initially() -> Goal:
    """C7 base: Inv(empty, {}) and Inv({u}, {u}) for every fragment u."""
    i = z3.BitVec("i", ID_BITS)
    u, f0 = fragments("u f0")
    claim = z3.And(invariant(Empty(), lambda f: z3.BoolVal(False), i, [f0]),
                   invariant(Delivered(u, z3.BoolVal(True)), lambda f: f == u, i, [f0]))
    return Goal([], claim, LOGIC, set_witness(i, [], {"{u}": Delivered(u, z3.BoolVal(True))}, [u, f0]))


def invariant_preserved_by_merge() -> Goal:
    """C7 step: Inv(a, S) and Inv(b, T) imply Inv(a | b, S u T), for any states a, b."""
    a, b = Leaf.named("a"), Leaf.named("b")
    support_a, support_b = _support_array("S"), _support_array("T")
    i = z3.BitVec("i", ID_BITS)
    (f0,) = fragments("f0")
    both: Support = lambda f: z3.Or(support_a(f), support_b(f))  # noqa: E731
    hypotheses = [invariant(a, support_a, i, [f0]), invariant(b, support_b, i, [f0])]
    ab = Joined(a, b)
    return law([], hypotheses, invariant(ab, both, i, [f0]), LOGIC,
                set_witness(i, [a, b], {"a": a, "b": b, "a|b": ab}, [f0]))


def same_support_same_state(injective: bool = True) -> Goal:
    """C7 conclusion: Inv(a, S) and Inv(b, S) with hash-injectivity imply a = b."""
    a, b = Leaf.named("a"), Leaf.named("b")
    support = _support_array("S")
    i = z3.BitVec("i", ID_BITS)
    pa, pb = a.at(i).payload, b.at(i).payload
    hypotheses = [invariant(a, support, i, [pb]), invariant(b, support, i, [pa])]
    premises = [premise("hash-injectivity", *hash_injective([pa, pb]))] if injective else []
    return law(premises, hypotheses, equal_at(a, b, i), LOGIC,
                set_witness(i, [a, b], {"a": a, "b": b}))


def bounded_delivery(k: int = 6) -> Goal:
    """C7 directly, for up to ``k`` deliveries per replica: each replica folds ``state | {u}``
    from the empty state over its own sequence (duplicates, any order, any slot dropped)."""
    us, vs = fragments(" ".join(f"u{j}" for j in range(k))), fragments(" ".join(f"v{j}" for j in range(k)))
    du = [z3.Bool(f"du{j}") for j in range(k)]
    dv = [z3.Bool(f"dv{j}") for j in range(k)]
    i = z3.BitVec("i", ID_BITS)
    left: State = Empty()
    right: State = Empty()
    for u, d in zip(us, du):
        left = Joined(left, Delivered(u, d))
    for v, d in zip(vs, dv):
        right = Joined(right, Delivered(v, d))
    same_support = [z3.Implies(d, z3.Or([z3.And(e, u == v) for v, e in zip(vs, dv)])) for u, d in zip(us, du)]
    same_support += [z3.Implies(e, z3.Or([z3.And(d, v == u) for u, d in zip(us, du)])) for v, e in zip(vs, dv)]
    premises = [premise("hash-injectivity", *hash_injective([*us, *vs]))]

    def describe(model: z3.ModelRef) -> dict[str, str]:
        def seq(frags: list[z3.ExprRef], flags: list[z3.BoolRef]) -> str:
            return list_text([frag_text(model.eval(f, model_completion=True))
                              for f, d in zip(frags, flags) if as_bool(model, d)])
        out = {"replica 1 delivered": seq(us, du), "replica 2 delivered": seq(vs, dv)}
        out.update(set_witness(i, [], {"replica 1": left, "replica 2": right})(model))
        return out

    return law(premises, same_support, equal_at(left, right, i), LOGIC, describe)


INJ = "given hash-injectivity"

OBLIGATIONS: list[Obligation] = [
    Obligation("c1_commutative", "C1", f"a|b = b|a for all states indexed by content id, fragments "
               f"included, {INJ}", Result.PROVED, commutativity),
    Obligation("c1_associative", "C1", "(a|b)|c = a|(b|c) for all states, fragments included",
               Result.PROVED, associativity),
    Obligation("c1_idempotent", "C1", "a|a = a for all states", Result.PROVED, idempotence),
    Obligation("c1_commutative_needs_injectivity", "C1",
               "without hash-injectivity, union by id is not commutative: two fragments with one id "
               "make a|b keep a different payload than b|a", Result.REFUTED,
               lambda: commutativity(injective=False)),
    Obligation("c2_inflationary", "C2", "a <= a|b and b <= a|b for all states", Result.PROVED, inflation),
    Obligation("c2_absorbing", "C2", "b <= a implies a|b = a (re-delivery is a no-op)",
               Result.PROVED, absorption),
    Obligation("c2_least_upper_bound", "C2", "a <= c and b <= c imply a|b <= c",
               Result.PROVED, least_upper_bound),
    Obligation("c7_invariant_initially", "C7",
               "Inv(state, delivered) holds for the empty state and every one-fragment update",
               Result.PROVED, invariant_initially),
    Obligation("c7_invariant_preserved_by_merge", "C7",
               "Inv(a,S) and Inv(b,T) imply Inv(a|b, S u T): any merge tree, duplicates, reorders and "
               "resends keep the invariant (induction step over deliveries)", Result.PROVED,
               invariant_preserved_by_merge),
    Obligation("c7_same_support_same_state", "C7",
               f"Inv(a,S) and Inv(b,S) imply a = b: same delivered support, same state, {INJ}",
               Result.PROVED, same_support_same_state),
    Obligation("c7_same_support_needs_injectivity", "C7",
               "without hash-injectivity, two states with the same support can hold different "
               "payloads under one id", Result.REFUTED, lambda: same_support_same_state(injective=False)),
    Obligation("c7_bounded_delivery_6", "C7",
               f"two replicas folding up to 6 deliveries each with the same support hold equal "
               f"states, {INJ}", Result.PROVED, bounded_delivery),
]
