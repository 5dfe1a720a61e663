"""The Coq development's rows: each theorem of ``proofs/coq/CanonMerge.v`` under its claim, with
its statement as coqc prints it, and the premises the development may assume.

Z3 proves C3's induction step; the induction itself, and C1, C2, C6, C7 for states and lists of
every size, are theorems of the Coq model here.  A row holds only when coqc compiles the file,
the theorem states exactly ``coq`` (so a weakened statement fails), and ``Print Assumptions``
lists nothing but premises of ``PREMISES`` with their registered types (so an ``Admitted``, an
``Axiom`` or a changed or extra hypothesis fails).  ``proofs.coqc`` runs coqc and decides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from proofs.obligation import CoqTheorem

SOURCE = Path(__file__).with_name("coq") / "CanonMerge.v"
SECTION_END = "End Model."  # the queries go just before it, inside the section


@dataclass(frozen=True)
class CoqPremise:
    """A section variable of the development, with its type as coqc prints it: a parameter (a
    type, a function; ``group`` empty) or a hypothesis the theorems assume (``group`` names it
    in a row's figure)."""

    type: str
    group: str = ""

    @property
    def hypothesis(self) -> bool:
        return bool(self.group)


INJECTIVITY, ORDER = "hash-injectivity", "order laws"
PREMISES: dict[str, CoqPremise] = {
    "Frag": CoqPremise("Type"),
    "Id": CoqPremise("Type"),
    "id": CoqPremise("Frag -> Id"),
    "id_eq_dec": CoqPremise("forall i j : Id, {i = j} + {i <> j}"),
    "id_injective": CoqPremise("forall f g : Frag, id f = id g -> f = g", INJECTIVITY),
    "M": CoqPremise("Type"),
    "m": CoqPremise("Frag -> M"),
    "ltM": CoqPremise("M -> M -> bool"),
    "ltM_irreflexive": CoqPremise("forall x : M, ltM x x = false", ORDER),
    "ltM_transitive": CoqPremise("forall x y z : M, ltM x y = true -> ltM y z = true -> ltM x z = true", ORDER),
    "ltM_trichotomous": CoqPremise("forall x y : M, ltM x y = true \\/ x = y \\/ ltM y x = true", ORDER),
    "ltI": CoqPremise("Id -> Id -> bool"),
    "ltI_irreflexive": CoqPremise("forall i : Id, ltI i i = false", ORDER),
    "ltI_transitive": CoqPremise("forall i j k : Id, ltI i j = true -> ltI j k = true -> ltI i k = true", ORDER),
    "ltI_trichotomous": CoqPremise("forall i j : Id, ltI i j = true \\/ i = j \\/ ltI j i = true", ORDER),
}



def premises_text(hypotheses: tuple[str, ...]) -> str:
    """The premises a theorem uses, by group: ``hash-injectivity, 5 order laws``."""
    groups = [PREMISES[name].group for name in hypotheses]
    counted = {g: groups.count(g) for g in dict.fromkeys(groups)}
    return ", ".join(g if n == 1 else f"{n} {g}" for g, n in counted.items()) or "none"


_SORTED = "StronglySorted (fun f g : Frag => ltF f g = true)"

THEOREMS: list[CoqTheorem] = [
    CoqTheorem("c1_coq_merge_is_union", "C1",
               "Coq, every state: a fragment is in merge a b iff it is in a or in b (hash-injectivity)",
               "forall (a b : list Frag) (f : Frag), In f (merge a b) <-> In f a \\/ In f b"),
    CoqTheorem("c1_coq_commutative", "C1",
               "Coq, every state: merge a b and merge b a hold the same fragments (hash-injectivity)",
               "forall (a b : list Frag) (f : Frag), In f (merge a b) <-> In f (merge b a)"),
    CoqTheorem("c1_coq_associative", "C1",
               "Coq, every state: merge (merge a b) c is the same list as merge a (merge b c)",
               "forall a b c : list Frag, merge (merge a b) c = merge a (merge b c)"),
    CoqTheorem("c1_coq_idempotent", "C1", "Coq, every state: merge a a is a",
               "forall a : list Frag, merge a a = a"),
    CoqTheorem("c2_coq_inflationary", "C2", "Coq, every state: the ids of a are among the ids of merge a b",
               "forall a b : list Frag, incl (map id a) (map id (merge a b))"),
    CoqTheorem("c2_coq_absorbing", "C2",
               "Coq, every state: if b's ids are among a's, merge a b is a itself (re-delivery is a no-op)",
               "forall a b : list Frag, incl (map id b) (map id a) -> merge a b = a"),
    CoqTheorem("c2_coq_least_upper_bound", "C2", "Coq, every state: a <= c and b <= c imply merge a b <= c",
               "forall a b c : list Frag, incl (map id a) (map id c) -> incl (map id b) (map id c) -> "
               "incl (map id (merge a b)) (map id c)"),
    CoqTheorem("c3_coq_sorted_unique", "C3",
               "Coq, every N: two lists strictly sorted by the key that hold the same fragments are equal",
               f"forall s t : list Frag, {_SORTED} s -> {_SORTED} t -> (forall f : Frag, In f s <-> In f t) -> s = t"),
    CoqTheorem("c3_coq_canonical_is_sorted_set", "C3",
               "Coq, every N: the canonical order of a delivery list is strictly sorted by the key and holds "
               "exactly its fragments (hash-injectivity)",
               f"forall l : list Frag, {_SORTED} (canonical l) /\\ (forall f : Frag, In f (canonical l) <-> In f l)"),
    CoqTheorem("c3_coq_canonical_set_determined", "C3",
               "Coq, every N: delivery lists holding the same fragments (any order, any duplicates) have one "
               "canonical order (hash-injectivity)",
               "forall l1 l2 : list Frag, (forall f : Frag, In f l1 <-> In f l2) -> canonical l1 = canonical l2"),
    CoqTheorem("c3_coq_merge_trees", "C3",
               "Coq, every N: any two merge trees whose leaves hold the same fragments give one canonical "
               "order (hash-injectivity)",
               "forall t1 t2 : merge_tree, (forall f : Frag, In f (leaves t1) <-> In f (leaves t2)) -> "
               "canonical_order (evaluate t1) = canonical_order (evaluate t2)"),
    CoqTheorem("c5_coq_key_lexicographic", "C5",
               "Coq, abstract orders: the key order is m's order, ties broken by the ids' order",
               "forall f g : Frag, ltF f g = true <-> ltM (m f) (m g) = true \\/ m f = m g /\\ "
               "ltI (id f) (id g) = true"),
    CoqTheorem("c5_coq_key_strict_total", "C5",
               "Coq, abstract orders: the key order is irreflexive, transitive and trichotomous on "
               "fragments (hash-injectivity)",
               "(forall f : Frag, ltF f f = false) /\\ (forall f g h : Frag, ltF f g = true -> ltF g h = true -> "
               "ltF f h = true) /\\ (forall f g : Frag, ltF f g = true \\/ f = g \\/ ltF g f = true)"),
    CoqTheorem("c6_coq_two_fragments", "C6",
               "Coq: two distinct fragments have one canonical order from both arrival orders, and it is "
               "BagMerge's order of one of them (hash-injectivity)",
               "forall f g : Frag, f <> g -> canonical [f; g] = canonical [g; f] /\\ "
               "(canonical [f; g] = bag_order [f; g] \\/ canonical [f; g] = bag_order [g; f])"),
    CoqTheorem("c7_coq_same_deliveries_same_state", "C7",
               "Coq, every delivery sequence: replicas whose messages hold the same fragments (duplicated, "
               "reordered, dropped then resent) hold the same state and one canonical order (hash-injectivity)",
               "forall ms1 ms2 : list (list Frag), (forall f : Frag, In f (concat ms1) <-> In f (concat ms2)) -> "
               "(forall f : Frag, In f (replica ms1) <-> In f (replica ms2)) /\\ "
               "canonical_order (replica ms1) = canonical_order (replica ms2)"),
]
