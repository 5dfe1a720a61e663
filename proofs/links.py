"""Code links: the real Python in ``spec`` against the Z3 encodings, on every case of small domains.

A proof about an encoding says nothing about the code unless the two agree.  Each check here
runs the real function (``FragmentSet.merge``, ``<=``, ``FragmentSet.of``, ``order_key``,
``canonical_order``) on every case of a small domain and evaluates the encoding the proofs use
(``proofs.fragment_set``'s arrays, ``proofs.ordering``'s key) on the same concrete values, so a
change to either side fails the check.  ``c5_link_total_order_bits`` (in ``proofs.ordering``)
does the same for all 2**64 patterns symbolically; here the rest is bounded-exhaustive:

- merge and ``|``: every pair of states over 3 ids, each id absent or holding one of two
  payloads (27 states, 729 pairs), and every triple over 2 ids nested both ways (729 triples);
  the inputs must be left unchanged;
- ``<=``, ``==``, ``<``: every pair of those states;
- ``bag_order``: every arrival sequence of length <= 4 over two fragments, against the C4
  encoding's bag (sequence concatenation);
- ``FragmentSet.of``: every delivery sequence of length <= 4 over three fragments (two sharing
  an id), against the fold ``state | {u}`` of the C7 encoding;
- ``order_key``: 40 bytes equal to the 320-bit encoding on special float64 patterns (zeros,
  subnormals, infinities, NaNs with payloads, both signs) times four ids;
- ``canonical_order``: every permutation of every subset (up to 5) of six fragments with equal-m
  twins, -0/+0 and a NaN: the output is the input's items (by identity), non-strictly sorted by
  the encoded key, and the same for every permutation, so by ``c3_sorted_unique_*`` it is the
  one sorted list of that set.

What these do not cover: inputs outside the domains (more ids, longer lists); that is what the
proofs are for, given the encodings agree here."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, permutations, product

import z3

from proofs import fragment_set as fs
from proofs.bag import BAG
from proofs.obligation import CodeCheck, Deadline, Finding, Result
from proofs.ordering import order_key as encoded_order_key
from proofs.vocabulary import FRAG, ID_BITS, cid
from spec import CONTENT_ID_BYTES, ORDER_KEY_BYTES, FragmentSet, bag_order, canonical_order, order_key

Entry = str | None  # one id of a small state: absent, or the name of the payload it holds


def id_bytes(k: int) -> bytes:
    return k.to_bytes(CONTENT_ID_BYTES, "big")


class World:
    """Named fragment constants with fixed content ids, and a Z3 model fixing them: encoding
    terms built from these constants evaluate to concrete values under it."""

    def __init__(self, ids: dict[str, int]) -> None:
        self.const = {name: z3.Const(f"frag_{name}", FRAG) for name in ids}
        solver = z3.Solver()
        if len(ids) > 1:
            solver.add(z3.Distinct(*self.const.values()))
        solver.add(*(cid(c) == ids[name] for name, c in self.const.items()))
        if solver.check() != z3.sat:  # pragma: no cover - distinct constants with ids are consistent
            raise RuntimeError("the concrete world is inconsistent")
        self.model = solver.model()
        self.name_of = {str(self.model.eval(c)): name for name, c in self.const.items()}

    def read(self, slot: fs.Slot) -> Entry:
        """The entry a slot of the encoding holds: None when absent, else its payload's name."""
        present = self.model.eval(slot.present, model_completion=True)
        if not z3.is_true(present) and not z3.is_false(present):
            raise ValueError(f"presence did not evaluate to a constant: {present}")
        if z3.is_false(present):
            return None
        payload = str(self.model.eval(slot.payload, model_completion=True))
        return self.name_of.get(payload, f"<not a known fragment: {payload}>")


@dataclass(frozen=True)
class Table:
    """A concrete state as an encoding ``State``: id -> payload name (absent ids are missing)."""

    world: World
    entries: dict[int, str]

    def at(self, i: z3.BitVecRef) -> fs.Slot:
        name = self.entries.get(z3.simplify(i).as_long())
        if name is None:
            return fs.Slot(z3.BoolVal(False), fs.EMPTY_PAYLOAD)
        return fs.Slot(z3.BoolVal(True), self.world.const[name])


def states(ids: Sequence[int], payloads: Sequence[str]) -> list[dict[int, str]]:
    """Every state over ``ids``: each id absent or holding one of ``payloads`` (named ``x@k``)."""
    choices = [[None, *(f"{p}@{k}" for p in payloads)] for k in ids]
    return [{k: e for k, e in zip(ids, pick) if e is not None} for pick in product(*choices)]


def _world(ids: Sequence[int], payloads: Sequence[str]) -> World:
    return World({f"{p}@{k}": k for k in ids for p in payloads})


def _spec_state(entries: dict[int, str]) -> FragmentSet[str]:
    return FragmentSet({id_bytes(k): name for k, name in entries.items()})


def _spec_entries(state: object, ids: Iterable[int]) -> dict[int, Entry]:
    if not isinstance(state, FragmentSet):
        return {k: f"<not a FragmentSet: {type(state).__name__}>" for k in ids}
    return {k: state.get(id_bytes(k)) if id_bytes(k) in state else None for k in ids}


def _show(entries: dict[int, str] | dict[int, Entry]) -> str:
    return "{" + ", ".join(f"id {k}: {v}" for k, v in sorted(entries.items()) if v is not None) + "}"


class Pointwise:
    """The encoding of a merge expression evaluated id by id, memoized on the entries it reads
    (the encoding is pointwise by construction: ``Joined.at(i)`` reads its leaves at ``i``)."""

    def __init__(self, world: World, build: Callable[..., fs.State]) -> None:
        self.world, self.build, self.memo = world, build, {}

    def __call__(self, k: int, *entries: Entry) -> Entry:
        key = (k, *entries)
        if key not in self.memo:
            leaves = [Table(self.world, {} if e is None else {k: e}) for e in entries]
            self.memo[key] = self.world.read(self.build(*leaves).at(z3.BitVecVal(k, ID_BITS)))
        return self.memo[key]

    def fold(self, k: int, so_far: Entry, name: str) -> Entry:
        """One delivery step: the state so far (one entry at ``k``) and the fragment ``name``."""
        key = (k, so_far, "deliver", name)
        if key not in self.memo:
            leaf = Table(self.world, {} if so_far is None else {k: so_far})
            self.memo[key] = self.world.read(self.build(leaf, name).at(z3.BitVecVal(k, ID_BITS)))
        return self.memo[key]


# ----------------------------------------------------------------------------- C1, C2: merge, <=

PAIR_IDS, TRIPLE_IDS, PAYLOADS = (1, 2, 3), (1, 2), ("x", "y")


def merge_refines_union_by_id(deadline: Deadline) -> Finding:
    """``a.merge(b)`` and ``a | b`` equal ``union_by_id`` at every id (and ``len``/``ids`` count
    the present ones), for all pairs; both nestings of three states equal the nested encoding;
    inputs are left unchanged."""
    cases = 0
    world = _world(PAIR_IDS, PAYLOADS)
    joined = Pointwise(world, lambda a, b: fs.Joined(a, b))
    for a, b in product(states(PAIR_IDS, PAYLOADS), repeat=2):
        cases += 1
        sa, sb = _spec_state(a), _spec_state(b)
        expected = {k: joined(k, a.get(k), b.get(k)) for k in PAIR_IDS}
        present = {k for k, e in expected.items() if e is not None}
        for how, result in (("a.merge(b)", sa.merge(sb)), ("a | b", sa | sb)):
            got = _spec_entries(result, PAIR_IDS)
            if got == expected and (len(result) != len(present) or result.ids() != {id_bytes(k) for k in present}):
                got = {**got, 0: f"len {len(result)}, {len(result.ids())} ids"}
            if got != expected:
                return Finding(cases, {"a": _show(a), "b": _show(b), f"spec {how}": _show(got),
                                       "encoding union_by_id": _show(expected)})
        if _spec_entries(sa, PAIR_IDS) != {k: a.get(k) for k in PAIR_IDS} or \
                _spec_entries(sb, PAIR_IDS) != {k: b.get(k) for k in PAIR_IDS}:
            return Finding(cases, {"a": _show(a), "b": _show(b), "spec a.merge(b)": "changed an input"})
        if cases % 128 == 0:
            deadline()
    world = _world(TRIPLE_IDS, PAYLOADS)
    shapes = {"(a|b)|c": (lambda a, b, c: fs.Joined(fs.Joined(a, b), c), lambda a, b, c: a.merge(b).merge(c)),
              "a|(b|c)": (lambda a, b, c: fs.Joined(a, fs.Joined(b, c)), lambda a, b, c: a.merge(b.merge(c)))}
    for shape, (encode, run) in shapes.items():
        nested = Pointwise(world, encode)
        for a, b, c in product(states(TRIPLE_IDS, PAYLOADS), repeat=3):
            cases += 1
            expected = {k: nested(k, a.get(k), b.get(k), c.get(k)) for k in TRIPLE_IDS}
            got = _spec_entries(run(_spec_state(a), _spec_state(b), _spec_state(c)), TRIPLE_IDS)
            if got != expected:
                return Finding(cases, {"a": _show(a), "b": _show(b), "c": _show(c), f"spec {shape}": _show(got),
                                       f"encoding {shape}": _show(expected)})
            if cases % 128 == 0:
                deadline()
    return Finding(cases)


def order_refines_inclusion(deadline: Deadline) -> Finding:
    """``a <= b`` is the encoding's ``leq_at`` at every id, for all pairs of states; ``a == b``
    is ``leq_at`` both ways and ``a < b`` one way only (equality is by ids, as in the encoding's
    order: payloads under one id are one fragment by hash-injectivity)."""
    cases = 0
    world = _world(PAIR_IDS, PAYLOADS)
    memo: dict[tuple[int, Entry, Entry], bool] = {}
    for a, b in product(states(PAIR_IDS, PAYLOADS), repeat=2):
        cases += 1
        for k in PAIR_IDS:
            _leq(world, k, a.get(k), b.get(k), memo)
        leq = all(memo[(k, a.get(k), b.get(k))] for k in PAIR_IDS)
        geq = all(_leq(world, k, b.get(k), a.get(k), memo) for k in PAIR_IDS)
        sa, sb = _spec_state(a), _spec_state(b)
        for how, got, expected in (("a <= b", sa <= sb, leq), ("a == b", sa == sb, leq and geq),
                                   ("a < b", sa < sb, leq and not geq)):
            if got is not expected:
                return Finding(cases, {"a": _show(a), "b": _show(b), f"spec {how}": repr(got),
                                       "encoding (leq_at at every id)": repr(expected)})
        if cases % 128 == 0:
            deadline()
    return Finding(cases)


def _leq(world: World, k: int, a: Entry, b: Entry, memo: dict[tuple[int, Entry, Entry], bool]) -> bool:
    if (k, a, b) not in memo:
        left, right = (Table(world, {} if e is None else {k: e}) for e in (a, b))
        value = world.model.eval(fs.leq_at(left, right, z3.BitVecVal(k, ID_BITS)), model_completion=True)
        memo[(k, a, b)] = z3.is_true(value)
    return memo[(k, a, b)]


# ----------------------------------------------------------------------------- C4: bag_order

BAGGED = {"p@1": 1, "q@2": 2}
BAG_LENGTH = 4


def _seq_names(world: World, value: z3.ExprRef) -> list[str]:
    """The fragments of a concrete Z3 sequence value, by name."""
    if z3.is_app_of(value, z3.Z3_OP_SEQ_CONCAT):
        return [n for child in value.children() for n in _seq_names(world, child)]
    if z3.is_app_of(value, z3.Z3_OP_SEQ_UNIT):
        return [world.name_of.get(str(value.arg(0)), f"<unknown {value.arg(0)}>")]
    if z3.is_app_of(value, z3.Z3_OP_SEQ_EMPTY):
        return []
    raise ValueError(f"not a sequence value: {value}")


def bag_order_is_concatenation(deadline: Deadline) -> Finding:
    """``spec.bag_order`` of an arrival sequence is the C4 encoding's bag: the concatenation
    of the arrivals in order, duplicates kept."""
    cases = 0
    world = World(BAGGED)
    for length in range(BAG_LENGTH + 1):
        for arrivals in product(BAGGED, repeat=length):
            cases += 1
            bag = z3.Empty(BAG)
            for name in arrivals:
                bag = z3.Concat(bag, z3.Unit(world.const[name]))
            expected = _seq_names(world, world.model.eval(bag, model_completion=True))
            got = bag_order(list(arrivals))
            if list(got) != expected:
                return Finding(cases, {"arrivals": "<" + ", ".join(arrivals) + ">",
                                       "spec bag_order": repr(got), "encoding": "<" + ", ".join(expected) + ">"})
        deadline()
    return Finding(cases)


# ----------------------------------------------------------------------------- C7: FragmentSet.of

DELIVERABLE = {"u@1": 1, "v@1": 1, "w@2": 2}  # u and v share id 1: the first delivered must win
DELIVERY_LENGTH = 4


def of_refines_delivery_fold(deadline: Deadline) -> Finding:
    """``FragmentSet.of(seq)`` equals the encoding's fold ``((empty | {u1}) | {u2}) ...``,
    evaluated one delivery at a time (the fold is left-nested, so each step reads the state so
    far at the id, memoized on that entry)."""
    cases = 0
    world = World(DELIVERABLE)
    ids = sorted(set(DELIVERABLE.values()))
    empty = {k: world.read(fs.Empty().at(z3.BitVecVal(k, ID_BITS))) for k in ids}
    step = Pointwise(world, lambda so_far, name: fs.Joined(so_far, fs.Delivered(world.const[name], z3.BoolVal(True))))
    for length in range(DELIVERY_LENGTH + 1):
        for seq in product(DELIVERABLE, repeat=length):
            cases += 1
            expected = dict(empty)
            for name in seq:
                expected = {k: step.fold(k, expected[k], name) for k in ids}
            got = _spec_entries(FragmentSet.of(seq, lambda name: id_bytes(DELIVERABLE[name])), ids)
            if got != expected:
                return Finding(cases, {"delivered": "<" + ", ".join(seq) + ">", "spec FragmentSet.of": _show(got),
                                       "encoding fold": _show(expected)})
            deadline()
    return Finding(cases)


# ----------------------------------------------------------------------------- C5, C3: key, canonical order

def _float(bits: int) -> float:
    (value,) = struct.unpack("<d", bits.to_bytes(8, "little"))
    return value


def _sign(bits: int) -> list[int]:
    return [bits, bits | 1 << 63]


SPECIAL_PATTERNS = [p for magnitude in (
    0x0000000000000000,  # 0
    0x0000000000000001,  # smallest subnormal
    0x000FFFFFFFFFFFFF,  # largest subnormal
    0x0010000000000000,  # smallest normal
    0x3FF0000000000000,  # 1
    0x3FF0000000000001,  # 1 + ulp
    0x4000000000000000,  # 2
    0x7FEFFFFFFFFFFFFF,  # largest finite
    0x7FF0000000000000,  # inf
    0x7FF0000000000001,  # signaling NaN, payload 1
    0x7FF4000000000000,  # signaling NaN, top payload bit
    0x7FF8000000000000,  # quiet NaN
    0x7FF8000000000001,  # quiet NaN, payload 1
    0x7FFFFFFFFFFFFFFF,  # quiet NaN, largest payload
    0x1234567890ABCDEF, 0x0DEADBEEF0000000,
) for p in _sign(magnitude)]
SPECIAL_IDS = [0, 1, 1 << 255, (1 << 256) - 1]


def _encoded_key(m_bits: int, content_id: int) -> int:
    term = z3.simplify(encoded_order_key(z3.BitVecVal(m_bits, 64), z3.BitVecVal(content_id, ID_BITS)))
    if not z3.is_bv_value(term):
        raise ValueError(f"the encoded key did not evaluate to a constant: {term}")
    return term.as_long()


def order_key_matches_encoding(deadline: Deadline) -> Finding:
    """``spec.order_key`` is 40 bytes whose big-endian value is the encoded 320-bit key."""
    cases = 0
    for bits, k in product(SPECIAL_PATTERNS, SPECIAL_IDS):
        cases += 1
        code = order_key(_float(bits), id_bytes(k))
        expected = _encoded_key(bits, k)
        if not isinstance(code, bytes) or len(code) != ORDER_KEY_BYTES or int.from_bytes(code, "big") != expected:
            shown = code.hex() if isinstance(code, bytes) else repr(code)
            return Finding(cases, {"m bits": f"0x{bits:016x}", "cid": f"id 0x{k:x}",
                                   "spec order_key": shown, "encoding": f"{expected:080x}"})
        deadline()
    return Finding(cases)


@dataclass(eq=False)
class Item:
    """A fragment for the canonical-order check: compared by identity only."""

    name: str
    m_bits: int
    cid: int

    def key(self) -> bytes:
        return order_key(_float(self.m_bits), id_bytes(self.cid))


ORDER_UNIVERSE = (("a", 0x3FF0000000000000, 7), ("b", 0x3FF0000000000000, 3),  # equal m, ids 7 and 3
                  ("c", 0x8000000000000000, 9), ("d", 0x0000000000000000, 1),  # -0 and +0
                  ("e", 0x7FF8000000000001, 2), ("f", 0xBFF0000000000000, 5))  # +NaN, -1
ORDER_MAX_SIZE = 5


def canonical_order_is_the_sorted_list(deadline: Deadline) -> Finding:
    """Every permutation of every subset: the output is the input's items, sorted by the encoded
    key, and one list per subset."""
    items = [Item(*row) for row in ORDER_UNIVERSE]
    encoded = {id(item): _encoded_key(item.m_bits, item.cid) for item in items}
    cases = 0
    for item in items:
        cases += 1
        if int.from_bytes(item.key(), "big") != encoded[id(item)]:
            return Finding(cases, {"fragment": item.name, "spec order_key": item.key().hex(),
                                   "encoding": f"{encoded[id(item)]:080x}"})

    def names(seq: Sequence[Item]) -> str:
        return "<" + ", ".join(x.name if isinstance(x, Item) else repr(x) for x in seq) + ">"

    for size in range(ORDER_MAX_SIZE + 1):
        for subset in combinations(items, size):
            first: list[Item] | None = None
            for arrival in permutations(subset):
                cases += 1
                out = canonical_order(list(arrival), Item.key)
                same_items = (isinstance(out, list) and len(out) == len(arrival)
                              and sorted(map(id, out)) == sorted(map(id, arrival)))
                keys = [encoded.get(id(x)) for x in out] if same_items else []
                problem = ("not the input's items" if not same_items else
                           "not sorted by the encoded key" if any(p > q for p, q in zip(keys, keys[1:])) else
                           "differs from another arrival order" if first is not None and
                           [id(x) for x in out] != [id(x) for x in first] else "")
                if problem:
                    return Finding(cases, {"arrival": names(arrival), "spec canonical_order": names(out),
                                           "problem": problem,
                                           "sorted by the encoded key":
                                               names(sorted(subset, key=lambda x: encoded[id(x)]))})
                first = first if first is not None else out
            deadline()
    return Finding(cases)


CHECKS: list[CodeCheck] = [
    CodeCheck("c1_link_fragment_set_merge", "C1",
              "code link: spec FragmentSet.merge and | equal the encoding union_by_id on all 729 pairs of "
              "states over 3 ids x 2 payloads and all 729 triples over 2 ids (both nestings)",
              Result.PROVED, merge_refines_union_by_id),
    CodeCheck("c2_link_fragment_set_order", "C2",
              "code link: spec FragmentSet <=, == and < equal the encoding leq_at (at every id, one or both "
              "ways) on all 729 pairs",
              Result.PROVED, order_refines_inclusion),
    CodeCheck("c4_link_bag_order", "C4",
              "code link: spec bag_order of every arrival sequence of <= 4 deliveries of 2 fragments is the C4 "
              "encoding's bag (the concatenation, duplicates kept)", Result.PROVED, bag_order_is_concatenation),
    CodeCheck("c5_link_order_key", "C5",
              "code link: spec order_key is 40 bytes equal to the encoded 320-bit key on 32 special float64 "
              "patterns (zeros, subnormals, inf, NaN payloads, both signs) x 4 ids",
              Result.PROVED, order_key_matches_encoding),
    CodeCheck("c3_link_canonical_order", "C3",
              "code link: spec canonical_order on every permutation of every subset (<= 5) of 6 fragments "
              "with equal-m twins, -0/+0, NaN returns the input's items sorted by the encoded key, one list "
              "per set", Result.PROVED, canonical_order_is_the_sorted_list),
    CodeCheck("c7_link_fragment_set_of", "C7",
              "code link: spec FragmentSet.of equals the encoding's delivery fold on every sequence of <= 4 "
              "deliveries of 3 fragments (two share an id)", Result.PROVED, of_refines_delivery_fold),
]
