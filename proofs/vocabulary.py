"""The vocabulary every proof shares: fragments, their content ids, hash-injectivity.

Fragments are an uninterpreted sort: the proofs assume nothing about what a fragment holds,
only that ``cid`` maps it to a 256-bit content id.  Hash-injectivity (DESIGN.md: equal ids
mean the same fragment) is never built in; an obligation that needs it states it as a premise,
instantiated at the fragments it talks about (a weaker premise than the universal one, so an
``unsat`` under it is still a proof under the universal premise)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import z3

from spec import CONTENT_ID_BYTES

ID_BITS = 8 * CONTENT_ID_BYTES
ID = z3.BitVecSort(ID_BITS)
FRAG = z3.DeclareSort("Frag")
cid = z3.Function("cid", FRAG, ID)


def fragments(names: str) -> list[z3.ExprRef]:
    """Free fragment constants, e.g. ``fragments("f g h")``."""
    return list(z3.Consts(names, FRAG))


def hash_injective(terms: Sequence[z3.ExprRef]) -> list[z3.BoolRef]:
    """The premise ``cid(s) = cid(t) => s = t`` for every pair of the given fragment terms."""
    return [z3.Implies(cid(s) == cid(t), s == t) for s, t in combinations(terms, 2)]
