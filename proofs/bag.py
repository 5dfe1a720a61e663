"""BagMerge (claim C4): concatenation in arrival order, the prior-work baseline.

Encoding: a bag is an SMT-LIB sequence of fragments (``(Seq Frag)``, ``seq.++``, ``seq.unit``,
``seq.len``; logic QF_UFSLIA, understood by Z3 and cvc5).  Both obligations state the property a
CvRDT merge has (C1 commutativity, C2 absorption) and expect a refutation: the witness is C4's
concrete evidence."""

from __future__ import annotations

from collections.abc import Callable

import z3

from proofs.obligation import Goal, Obligation, Result, law
from proofs.vocabulary import FRAG
from proofs.witness import frag_text, list_text, seq_items

BAG = z3.SeqSort(FRAG)
LOGIC = "QF_UFSLIA"


def _witness(named: dict[str, z3.ExprRef]) -> Callable[[z3.ModelRef], dict[str, str]]:
    def describe(model: z3.ModelRef) -> dict[str, str]:
        out = {}
        for name, term in named.items():
            value = model.eval(term, model_completion=True)
            if value.sort() == FRAG:
                out[name] = frag_text(value)
            elif z3.is_int_value(value):
                out[name] = str(value.as_long())
            else:
                out[name] = list_text(seq_items(value))
        return out
    return describe


def concat_commutes() -> Goal:
    """The (false) law ``a ++ b = b ++ a`` for all bags."""
    a, b = z3.Consts("a b", BAG)
    ab, ba = z3.Concat(a, b), z3.Concat(b, a)
    return Goal([], ab == ba, LOGIC, _witness({"a": a, "b": b, "a ++ b": ab, "b ++ a": ba}))


def redelivery_is_noop() -> Goal:
    """The (false) law: re-delivering a fragment ``u`` already in bag ``s`` leaves it unchanged."""
    s = z3.Const("s", BAG)
    (u,) = z3.Consts("u", FRAG)
    again = z3.Concat(s, z3.Unit(u))
    return law([], [z3.Contains(s, z3.Unit(u))], again == s, LOGIC,
                _witness({"s": s, "u": u, "s ++ <u>": again, "len(s)": z3.Length(s),
                          "len(s ++ <u>)": z3.Length(again)}))


OBLIGATIONS: list[Obligation] = [
    Obligation("c4_bag_merge_not_commutative", "C4",
               "sequence concatenation is not commutative: a++b != b++a for some bags",
               Result.REFUTED, concat_commutes),
    Obligation("c4_redelivery_changes_bag", "C4",
               "re-delivering a fragment the bag already holds changes it (its length grows)",
               Result.REFUTED, redelivery_is_noop),
]
