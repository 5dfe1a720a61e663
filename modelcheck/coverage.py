"""What the C3 enumeration really covered, watched from inside each shard.

The shared unions (``modelcheck.unions``) and the enumerators are trusted by the C3 checks: a
stale prefix union feeds a render another arrival order than the schedule the checker reports,
and an enumerator that skips schedules shrinks the search while every render still agrees.
Neither shows in a verdict, so each shard watches the (schedule, state) pairs on their way to
the render:

- every schedule is counted, checked to be a schedule of the shard (arity, prefix, each
  fragment delivered) and checked to be new (no schedule counted twice);
- on a sample of every shard (its first ``ALWAYS_SAMPLED`` schedules per family, then one in
  ``SAMPLE_ONE_IN``, pseudo-random but fixed by the shard) the state is rebuilt from nothing —
  ``backend.merge`` folded over fresh singletons of the schedule's leaves, nothing shared — and
  the arrival order and state key of the state the render is given are compared with it, and
  the number sampled is held to what the rule owes for the schedules streamed (``samples_due``,
  written apart), so a sample thinned to its first schedules shows;
- the rebuilt state's arrival order is also compared with what the schedule itself says a set
  holds (``ScheduleWatcher.scheduled``: each content id's first delivery, in delivery order).
  Both states are labelled through ``Leaves.labels``, so the first comparison cannot see a
  labelling that names an original as its copy; the second reads the schedule, not the labels.

The counts are then held to closed forms written here, independently of the enumerators'
(``closed_forms``), by ``modelcheck.instruments``.  The watcher also proves that both comparisons
can see: it compares each sampled schedule's fresh state with the previous schedule's state and
with the previous schedule's first deliveries, which arrived in another order and must be
reported different (on canary shards the schedule just before, the nearest one)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck.backend import Backend
from modelcheck.schedules import Expr, Join, Leaf, sequence
from modelcheck.unions import Leaves, comb_states
from spec.fragment_set import current_iteration_order, iteration_order

ALWAYS_SAMPLED = 4          # per family and shard: small shards are checked whole
SAMPLE_ONE_IN = 128         # beyond those, about one schedule in this many
# the copy-numbering control (``copies_as_scheduled``): its key among a shard's coverage, and the
# schedules it builds: every delivery of 2 fragments with 1 or 2 re-deliveries, the least that
# re-delivers one fragment twice
COPIES, COPIES_ARITY, COPIES_EXTRA = "copy numbering", 2, 2


# --- closed forms, independent of ``modelcheck.schedules`` -------------------------------------

def _surjections(m: int, k: int) -> int:
    """Maps of m labelled deliveries onto k fragments using each: k!·S(m, k), with the Stirling
    number from its recurrence S(m, k) = k·S(m−1, k) + S(m−1, k−1)."""
    row = [1] + [0] * k              # S(0, j)
    for _ in range(m):
        row = [0] + [j * row[j] + row[j - 1] for j in range(1, k + 1)]
    return math.factorial(k) * row[k]


def closed_forms(n: int, redeliveries: int) -> dict[str, int]:
    """The number of C3 schedules of arity n: n! arrival orders, (2n−2)!/(n−1)! merge trees
    (leaf orders times tree shapes), and the sequences of n + e deliveries (e = 1..R) that
    deliver every fragment."""
    return {"permutations": math.factorial(n),
            "trees": math.factorial(2 * n - 2) // math.factorial(n - 1),
            "re-deliveries": sum(_surjections(n + e, n) for e in range(1, redeliveries + 1))}


# --- the watcher ------------------------------------------------------------------------------

@dataclass
class Seen:
    """What one family of one shard fed to the render."""

    count: int = 0                   # schedules rendered
    distinct: int = 0                # of them, valid and not seen before in this shard
    invalid: int = 0                 # not a schedule of this shard (arity, prefix, coverage)
    repeated: int = 0                # counted twice
    sampled: int = 0                 # rebuilt from nothing and compared
    mismatched: int = 0              # fed in another arrival order (or another state) than reported
    off_schedule: int = 0            # rebuilt from nothing into other items than the schedule's firsts
    due: int = 0                     # samples the sampling rule owes for ``count`` schedules (``samples_due``)
    first_mismatch: str = ""
    first_off_schedule: str = ""
    # the comparisons' own controls: recorded by the same code as the samples, each a state compared
    # with another schedule's build, so each must count as mismatched and off schedule
    control: Seen | None = None

    def add(self, other: Seen) -> None:
        for name in ("count", "distinct", "invalid", "repeated", "sampled", "mismatched", "off_schedule", "due"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.first_mismatch = self.first_mismatch or other.first_mismatch
        self.first_off_schedule = self.first_off_schedule or other.first_off_schedule
        if other.control is not None:
            if self.control is None:
                self.control = Seen()
            self.control.add(other.control)


def sample_seed(salt: str, family: str, n: int, prefix: Sequence[int]) -> str:
    """What fixes one family's sample in one shard: the same schedules on every engine and rerun."""
    return f"{salt}/{family}/{n}/{list(prefix)}"


def samples_due(seed: str, count: int) -> int:
    """How many of ``count`` schedules the sampling rule rebuilds from nothing: the first
    ``ALWAYS_SAMPLED``, then each next one a gap of 1 + int(Exp(1 / ``SAMPLE_ONE_IN``)) further on,
    the gaps drawn from ``seed``.  Written apart from ``ScheduleWatcher.watch``, which applies the
    rule while it streams, so that a sample thinned (or thickened) there differs from this count."""
    chance = random.Random(seed)
    due = position = 0
    while position < count:
        due += 1
        position += 1 if due < ALWAYS_SAMPLED else 1 + int(chance.expovariate(1 / SAMPLE_ONE_IN))
    return due


def leaves_in_order(expr: Expr) -> list[Leaf]:
    """The deliveries of a schedule, left to right (written here, not borrowed from the
    enumerators it checks)."""
    if isinstance(expr, Leaf):
        return [expr]
    return leaves_in_order(expr.left) + leaves_in_order(expr.right)


class Signatures:
    """Whether each key of one family of one shard is a schedule of it, and a hashable identity
    (equal for equal schedules only).  A key is an arrival sequence (its copies numbered in
    arrival order by construction; it is its own identity) or a merge tree (each fragment
    delivered once, copy 0).  A tree's identity is its two sides' numbers in a table of the
    distinct subtrees seen: the enumeration shares subtree objects between the trees of one leaf
    order, so each is numbered once and a tree costs two look-ups."""

    def __init__(self, n: int, prefix: Sequence[int], extra: int | None) -> None:
        self.n, self.prefix, self.extra = n, tuple(prefix), extra
        self.full = frozenset(range(n))
        self._parts: dict[int, tuple[Expr, int, tuple[int, ...], bool]] = {}   # by id (object kept)
        self._numbers: dict[tuple[int, int, int], int] = {}
        self._valid: dict[tuple[int, ...], bool] = {}

    def of(self, key: Any) -> tuple[bool, Hashable]:
        """(is a schedule of this family and shard, identity)."""
        if isinstance(key, tuple):
            return self.valid(key), key
        if isinstance(key, Leaf):
            number, indices, once = self._part(key)
            return once and self.valid(indices), (-1, number)
        (ln, li, lo), (rn, ri, ro) = self._part(key.left), self._part(key.right)  # the root is never kept
        return lo and ro and self.valid(li + ri), (ln, rn)

    def valid(self, indices: tuple[int, ...]) -> bool:
        """Starts with the prefix, delivers every fragment, has the family's repeats."""
        ok = self._valid.get(indices)
        if ok is None:
            repeats = len(indices) - self.n
            ok = (indices[:len(self.prefix)] == self.prefix and set(indices) == self.full
                  and (repeats == self.extra if self.extra is not None else repeats >= 1))
            if len(self._valid) < 100_000:
                self._valid[indices] = ok
        return ok

    def _part(self, expr: Expr) -> tuple[int, tuple[int, ...], bool]:
        """(number of the subtree, its leaves' indices, whether every leaf is copy 0)."""
        hit = self._parts.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1], hit[2], hit[3]
        if isinstance(expr, Leaf):
            shape, indices, once = (0, expr.index, expr.copy), (expr.index,), expr.copy == 0
        else:
            (ln, li, lo), (rn, ri, ro) = self._part(expr.left), self._part(expr.right)
            shape, indices, once = (1, ln, rn), li + ri, lo and ro
        number = self._numbers.setdefault(shape, len(self._numbers))
        self._parts[id(expr)] = (expr, number, indices, once)
        return number, indices, once


def arrival(backend: Backend, leaves: Leaves, state: Any) -> tuple[Any, ...]:
    """What a render is given, as far as order goes: the state's items in arrival order, each as
    the (index, copy) of the fragment object it is (None for an item that is not one), and the
    state's key.  A state that cannot be iterated shows its key only.  Either way such a state
    cannot be held to its schedule's first deliveries, and its builds are counted off schedule:
    the order comparison cannot see it."""
    labels = leaves.labels()
    try:
        if current_iteration_order() == "arrival":
            order = tuple(labels.get(id(item)) for item in state)
        else:
            with iteration_order("arrival"):
                order = tuple(labels.get(id(item)) for item in state)
    except TypeError:
        order = ()
    return order, backend.state_key(state)


def from_scratch(backend: Backend, leaves: Leaves, expr: Expr) -> Any:
    """The state of ``expr`` built from nothing: a fresh singleton per leaf (of the same fragment
    object the shared unions use), folded by ``backend.merge``."""
    if isinstance(expr, Leaf):
        return backend.singleton(leaves.fragment(expr.index, expr.copy))
    assert isinstance(expr, Join)
    return backend.merge(from_scratch(backend, leaves, expr.left), from_scratch(backend, leaves, expr.right))


class DeliveryLog:
    """A backend whose state is every delivery in order, re-delivered copies included (a set
    keeps only each fragment's first, so a copy's number never shows in its arrival order):
    what a shared union was built from shows in its state.  Fragments are the backend's own."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    def copy(self, fragment: Any) -> Any:
        return self.inner.copy(fragment)

    def singleton(self, fragment: Any) -> tuple[Any, ...]:
        return (fragment,)

    def merge(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return a + b

    def state_key(self, state: tuple[Any, ...]) -> Hashable:
        return tuple(self.inner.content_id(f) for f in state)


def copies_as_scheduled(backend: Backend, objects: dict[int, Any]) -> Seen:
    """The shared unions' copy numbering, held to the schedule's: every arrival sequence of
    ``COPIES_ARITY`` fragments with up to ``COPIES_EXTRA`` re-deliveries built by
    ``unions.comb_states`` on a ``DeliveryLog`` of ``backend``, each state's deliveries compared
    (``arrival``) with the from-scratch build of ``schedules.sequence``, which numbers the copies
    apart; a state built from other copies than its schedule's counts as mismatched, and a build
    whose deliveries are not the schedule's (index, copy) — a copy that is another copy's object,
    or the original's — as off schedule (``Leaves.labels`` against the schedule).  The control:
    each from-scratch build compared, by the same ``arrival``, with the build of its own sequence
    with every re-delivered copy numbered one higher (the same deliveries, other copies), which
    must count as mismatched and off schedule every time: a comparison blind to copy numbers misses it.
    The control's schedule must keep the schedule's originals (counted apart as invalid otherwise): a
    control that turned a copy into an original would be seen by a comparison that tells only originals
    from copies."""
    log: Any = DeliveryLog(backend)
    leaves = Leaves(log, {i: objects[i] for i in range(COPIES_ARITY)})
    seen, control = Seen(), Seen()
    for extra in range(1, COPIES_EXTRA + 1):
        for seq, state in comb_states(log, leaves, COPIES_ARITY, extra):
            expr = sequence(seq)
            fed, fresh = arrival(log, leaves, state), arrival(log, leaves, from_scratch(log, leaves, expr))
            seen.count += 1
            seen.sampled += 1
            if fed != fresh:
                seen.mismatched += 1
                seen.first_mismatch = seen.first_mismatch or f"{_render(expr)} built as [{_labels(fed[0])}]"
            delivered = tuple((leaf.index, leaf.copy) for leaf in leaves_in_order(expr))
            seen.off_schedule += fresh[0] != delivered      # a copy that is not its own object shows here
            other = _recopied(expr)
            recopied = arrival(log, leaves, from_scratch(log, leaves, other))
            control.sampled += 1
            control.mismatched += fresh != recopied
            control.off_schedule += recopied[0] != delivered
            # the control's own schedule renumbers copies alone: its originals are the schedule's
            control.invalid += _originals(leaves_in_order(other)) != _originals(leaves_in_order(expr))
    seen.control = control
    return seen


def _originals(delivered: Sequence[Leaf]) -> tuple[tuple[int, bool], ...]:
    """Each delivery's fragment index and whether it is the original (copy 0), in delivery order."""
    return tuple((leaf.index, leaf.copy == 0) for leaf in delivered)


def _recopied(expr: Expr) -> Expr:
    """``expr`` with every re-delivered copy numbered one higher (originals kept)."""
    if isinstance(expr, Leaf):
        return Leaf(expr.index, expr.copy + 1) if expr.copy else expr
    assert isinstance(expr, Join)
    return Join(_recopied(expr.left), _recopied(expr.right))


@dataclass
class ScheduleWatcher:
    """Watches the C3 families of one shard (``UniverseCheck.c3`` hands it each family's pairs)."""

    backend: Backend
    leaves: Leaves
    salt: str                        # the shard: fixes which schedules are sampled
    probe: bool                      # controls against the schedule just before (canary shards)
    seen: dict[str, Seen] = field(default_factory=dict)
    _ids: dict[int, bytes] = field(default_factory=dict)   # content id of each fragment index

    def watch(self, family: str, n: int, prefix: Sequence[int], to_expr: Callable[[Any], Expr],
              pairs: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        """``pairs`` unchanged, each one counted and a sample rebuilt and compared on the way."""
        seen = self.seen.setdefault(family, Seen(control=Seen()))
        keys: set[Hashable] = set()
        of, add = Signatures(n, prefix, None if family == "re-deliveries" else 0).of, keys.add
        seed = sample_seed(self.salt, family, n, prefix)
        chance = random.Random(seed)
        count = invalid = next_sample = 0
        previous: Any = None
        try:
            for key, state in pairs:
                valid, identity = of(key)
                if valid:
                    add(identity)
                else:
                    invalid += 1
                if count == next_sample:
                    expr = to_expr(key)
                    self._compare(seen, expr, state, previous)
                    previous = (expr, state)
                    next_sample = count + 1
                    if next_sample >= ALWAYS_SAMPLED:
                        next_sample += int(chance.expovariate(1 / SAMPLE_ONE_IN))
                elif self.probe:
                    previous = (to_expr(key), state)
                count += 1
                yield key, state
        finally:   # also when the consumer stops early
            seen.count += count
            seen.invalid += invalid
            seen.distinct += len(keys)
            seen.repeated += count - invalid - len(keys)
            seen.due += samples_due(seed, count)

    def scheduled(self, expr: Expr) -> tuple[tuple[int, int], ...]:
        """What a replica's set holds after ``expr``, in arrival order, read from the schedule
        alone: the (index, copy) of each content id's first delivery, in delivery order.  A set's
        merge keeps the payload it holds and appends what is new (``spec.FragmentSet.merge``, the
        state of the reference and realstate backends and of the arrival canary), so a
        re-delivered copy never shows.  ``Leaves.labels`` is not consulted: this is what the
        labelled build is compared with."""
        first: dict[bytes, tuple[int, int]] = {}
        for leaf in leaves_in_order(expr):
            first.setdefault(self._content_id(leaf.index), (leaf.index, leaf.copy))
        return tuple(first.values())

    def _content_id(self, index: int) -> bytes:
        cid = self._ids.get(index)
        if cid is None:
            cid = self._ids[index] = self.backend.content_id(self.leaves.objects[index])
        return cid

    def _compare(self, seen: Seen, expr: Expr, state: Any, previous: tuple[Expr, Any] | None) -> None:
        """A sampled schedule, and the control made of it: the previous schedule's state and
        firsts (the one just before on a canary shard, else the previous sample), which arrived
        in another order, against this build."""
        fresh = arrival(self.backend, self.leaves, from_scratch(self.backend, self.leaves, expr))
        self._record(seen, expr, state, fresh)
        if seen.control is not None and previous is not None and self.scheduled(previous[0]) != self.scheduled(expr):
            self._record(seen.control, previous[0], previous[1], fresh)

    def _record(self, seen: Seen, expr: Expr, state: Any, fresh: tuple[Any, ...]) -> None:
        """Compares ``state`` (what the render of ``expr`` was given) with ``fresh`` (a
        from-scratch build, arrival-labelled), and ``fresh`` with ``expr``'s first deliveries."""
        seen.sampled += 1
        if arrival(self.backend, self.leaves, state) != fresh:
            seen.mismatched += 1
            seen.first_mismatch = seen.first_mismatch or _render(expr)
        scheduled = self.scheduled(expr)
        if fresh[0] != scheduled:
            seen.off_schedule += 1
            seen.first_off_schedule = seen.first_off_schedule or (
                f"{_render(expr)} built as [{_labels(fresh[0])}], its schedule's firsts [{_labels(scheduled)}]"
                + (" (?: an item that is not one of the schedule's fragment objects)" if None in fresh[0] else ""))

    def report(self) -> dict[str, Seen]:
        return self.seen


def _labels(order: Sequence[tuple[int, int] | None]) -> str:
    return " ".join("?" if label is None else f"{label[0]}" + "'" * label[1] for label in order)


def _render(expr: Expr) -> str:
    if isinstance(expr, Leaf):
        return f"{expr.index}" + "'" * expr.copy
    return f"({_render(expr.left)} {_render(expr.right)})"
