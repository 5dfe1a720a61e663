"""The bit-for-bit replay: the claims checked on caches from a real transformers model.

One function per registered check (``realstate.properties``): for every arity n = 1..N (the
first n agents' fragments) they render every permutation, every binary merge tree over every
leaf order and every schedule with one re-delivered copy (the enumerators are modelcheck's),
decode from every permutation, and compare SHA-256 digests of the rendered bytes.  Nothing is
memoized by set: every schedule's state is built and rendered by its own calls.  ``engine`` is
the mechanics under test: ``CANONICAL`` normally, a planted bug in the negative tests.  States
iterate in ``settings.iteration`` order (``arrival`` by default), so a render that forgets to
sort cannot hide behind id-ordered iteration."""

from __future__ import annotations

import itertools
import json
import math
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from modelcheck import schedules as en
from realstate import properties as P
from realstate.replay.activations import LayerActivations, layer_activations
from realstate.models.agents import DEFAULT_QUESTION, AgentRun, run_agents
from realstate.models.continuation import Continuation, greedy_continue, greedy_continue_many
from realstate.kernel.dtypes import raw_bits
from realstate.kernel.engine import (
    CANONICAL,
    KERNEL_PROBE_THREADS,
    PER_FRAGMENT,
    Engine,
    batched_up_to,
    chunked,
    large_path_engines,
    unfused,
)
from realstate.replay.fidelity import FidelityRow, placement_fidelity
from realstate.kernel.fragment import Fragment
from realstate.models.loading import LoadedModel, load_checkpoint, load_named, load_seeded, model_inv_freq
from realstate.evidence.planted import engine_named
from realstate.kernel.order_value import reference_order_value
from realstate.kernel.render import (
    Placement,
    Rendered,
    bag_merge,
    bag_render,
    canonical_merge,
    canonical_render,
    canonical_renders,
    layout,
    naive_concat,
    naive_render,
    render_layout,
)
from realstate.kernel.rope import NUMBA, fused_kernel
from realstate.settings import ReplaySettings
from spec import (
    Check,
    ClaimResult,
    InputError,
    Outcome,
    PartReport,
    Progress,
    Table,
    exit_code_for,
    no_progress,
    order_key,
)
from spec.fragment_set import iteration_order

# Renders decoded together in one batch: about this many bytes of rendered keys and values
DECODE_BATCH_BYTES = 256 << 20

# Fidelity floor per storage dtype: one rounding of the storage format, plus the model's own
# arithmetic at a different position, stays well above these on every layer.
MIN_COSINE = {"bfloat16": 0.9999, "float16": 0.99999, "float32": 0.999999}


def load_model(settings: ReplaySettings) -> LoadedModel:
    if settings.model is not None:
        return load_named(settings.model, settings.dtype, settings.device)
    if settings.checkpoint is not None:
        return load_checkpoint(settings.checkpoint, settings.dtype, settings.device)
    return load_seeded(settings.geometry, settings.dtype, settings.device, settings.seed)


# --- the replay ----------------------------------------------------------------------------

@dataclass
class ArityRow:
    """What the checks that ran found at one arity (a check that did not run leaves its zeros)."""

    n: int
    permutations: int = 0
    canonical_digests: set[str] = field(default_factory=set)
    bag_digests: set[str] = field(default_factory=set)
    trees: int = 0
    tree_digests: set[str] = field(default_factory=set)
    tree_violations: int = 0
    redeliveries: int = 0
    redelivery_canonical_changed: int = 0
    bag_redeliveries: int = 0
    redelivery_bag_changed: int = 0
    canonical_continuations: Counter[Continuation] = field(default_factory=Counter)  # decode -> orders
    bag_continuations: Counter[Continuation] = field(default_factory=Counter)
    c6_match: bool | None = None


class Replay:
    """What every per-claim check of the replay shares: the model, the agents' runs and
    fragments, the engine under test, and the per-arity figures the checks fill in."""

    def __init__(self, lm: LoadedModel, runs: list[AgentRun], settings: ReplaySettings,
                 engine: Engine, progress: Progress) -> None:
        self.lm, self.runs, self.settings, self.engine, self.progress = lm, runs, settings, engine, progress
        self.fragments = [r.fragment for r in runs]
        # with a tokenizer the final agent asks a question in words; otherwise (seeded token ids)
        # it continues from the first agent's first five tokens
        self.question = (settings.question or DEFAULT_QUESTION) if lm.tokenizer is not None else None
        self.final_prompt = (lm.tokenizer(self.question, add_special_tokens=False)["input_ids"]
                             if self.question is not None else runs[0].prompt_ids[:5])
        self.rows: dict[int, ArityRow] = {}
        self.fidelity_rows: list[FidelityRow] = []
        self.rendered: dict[tuple[int, str], Any] = {}  # (n, digest) -> a state that rendered to it
        self.renders = 0
        self.known_answers: dict[str, ClaimResult] | None = None

    def row(self, n: int) -> ArityRow:
        return self.rows.setdefault(n, ArityRow(n))

    @property
    def arities(self) -> range:
        return range(1, len(self.fragments) + 1)

    # states are built only through the engine's collection and merge, as replicas would
    def state_of(self, sequence: Sequence[Fragment]) -> Any:
        state = self.engine.collect([sequence[0]])
        for f in sequence[1:]:
            state = state.merge(self.engine.collect([f]))
        return state

    def delivered(self, leaf: en.Leaf, fragments: Sequence[Fragment]) -> Fragment:
        """The first delivery is the object itself; a re-delivery is a copy with equal bytes."""
        return fragments[leaf.index] if leaf.copy == 0 else fragments[leaf.index].copy()

    def state_of_schedule(self, expr: en.Expr, fragments: Sequence[Fragment]) -> Any:
        """Evaluate a modelcheck schedule (merge tree over deliveries) with the engine's merge."""
        if isinstance(expr, en.Leaf):
            return self.engine.collect([self.delivered(expr, fragments)])
        return self.state_of_schedule(expr.left, fragments).merge(self.state_of_schedule(expr.right, fragments))

    def render(self, state: Any, n: int | None = None) -> Rendered:
        """The canonical render of ``state``; with ``n`` (the state holds the first n agents'
        fragments) its digest is recorded for the oracle check, which compares every distinct
        render the replay made with the independent reference."""
        rendered = canonical_render(state, engine=self.engine)
        self.renders += 1
        if n is not None:
            self.rendered.setdefault((n, rendered.digest()), state)
        return rendered

    def digest(self, state: Any, n: int | None = None) -> str:
        return self.render(state, n).digest()

    def bag_digest(self, fragments: Sequence[Fragment]) -> str:
        return bag_render(fragments, engine=self.engine).digest()

    def continue_from(self, rendered: Rendered) -> Continuation:
        return greedy_continue(self.lm, rendered.to_cache(), self.final_prompt, self.settings.decode_tokens)

    @staticmethod
    def decode_rows(rendered: Rendered, total: int) -> int:
        """The row count of every batch ``total`` renders shaped like ``rendered`` are decoded in:
        one count for all of them, because a CPU matrix product's rounding can depend on how many
        rows it multiplies (at the qwen3-1.7b geometry a batch of 18 and one of 102 give other
        logits bytes for the same render), though not on the other rows' contents or a row's place."""
        return max(1, min(total, -(-DECODE_BATCH_BYTES // (2 * rendered.keys.nbytes))))

    def continue_from_each(self, renders: Iterable[Rendered], label: str, total: int) -> Iterator[Continuation]:
        """The final agent's decode from each render, in order, in batches of ``decode_rows`` rows
        (``greedy_continue_many``); the last batch is filled up to that count with copies of its
        first render, whose decodes are dropped."""
        batch: list[Rendered] = []
        rows = done = 0
        for rendered in renders:
            rows = rows or self.decode_rows(rendered, total)
            batch.append(rendered)
            if len(batch) == rows:
                yield from self._decode_batch(batch)
                done += len(batch)
                batch = []
                self.progress(label, done, total)
        if batch:
            yield from self._decode_batch(batch + [batch[0]] * (rows - len(batch)))[:len(batch)]
            self.progress(label, done + len(batch), total)

    def continue_alongside(self, target: Rendered, filler: Rendered, rows: int, position: int) -> Continuation:
        """``target`` decoded at ``position`` of a batch of ``rows`` rows whose other rows hold
        ``filler``: the shape and place its row had in ``continue_from_each``, other neighbours, so
        the two decodes are equal unless the batch mixes rows."""
        batch = [filler] * rows
        batch[position] = target
        return self._decode_batch(batch)[position]

    def _decode_batch(self, batch: list[Rendered]) -> list[Continuation]:
        return greedy_continue_many(self.lm, [x.keys for x in batch], [x.values for x in batch],
                                    self.final_prompt, self.settings.decode_tokens)

    def text(self, continuation: Continuation) -> str:
        """The decoded tokens as text (JSON-quoted, so spaces and newlines show), or their ids."""
        if self.lm.tokenizer is None:
            return "ids " + " ".join(map(str, continuation.tokens))
        return json.dumps(self.lm.tokenizer.decode(list(continuation.tokens)), ensure_ascii=False)


def head_swapped_twin(fragment: Fragment) -> Fragment:
    """Same multiset of key-vector norms at every layer (so exactly the same m), other content."""
    heads = fragment.keys.shape[1]
    order = [1, 0, *range(2, heads)]
    return Fragment(fragment.fingerprint, fragment.start, fragment.keys[:, order].contiguous(),
                    fragment.values[:, order].contiguous())


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# --- one function per registered check ------------------------------------------------------

def c3_permutations(r: Replay) -> ClaimResult:
    """Every delivery order of the first n fragments, for every n, renders one digest."""
    started = time.perf_counter()
    for n in r.arities:
        row, perms = r.row(n), list(itertools.permutations(r.fragments[:n]))
        for i, perm in enumerate(perms):
            row.canonical_digests.add(r.digest(r.state_of(perm), n))
            r.progress(f"realstate n={n}: permutations", i + 1, len(perms))
        row.permutations = len(perms)
    rows = [r.rows[n] for n in r.arities]
    total = sum(x.permutations for x in rows)
    bad = sum(len(x.canonical_digests) - 1 for x in rows)
    figure = (f"1 digest for each n <= {len(rows)} ({total} permutations)" if not bad
              else f"digests per n: {[len(x.canonical_digests) for x in rows]}")
    return P.PERMUTATIONS.tally(len(rows), sum(len(x.canonical_digests) > 1 for x in rows), "arities",
                                time.perf_counter() - started, figure=figure, permutations=total,
                                per_arity=[{"n": x.n, "canonical_digests": sorted(x.canonical_digests)}
                                           for x in rows])


def c3_trees(r: Replay) -> ClaimResult:
    """Every merge tree over every leaf order renders the digest of the index-order fold."""
    started = time.perf_counter()
    for n in r.arities:
        row, subset = r.row(n), r.fragments[:n]
        reference = r.digest(r.state_of(subset), n)
        for tree in en.merge_trees(n):
            digest = r.digest(r.state_of_schedule(tree, subset), n)
            row.tree_digests.add(digest)
            row.tree_violations += digest != reference
            row.trees += 1
            r.progress(f"realstate n={n}: merge trees", row.trees, en.tree_count(n))
    rows = [r.rows[n] for n in r.arities]
    return P.TREES.tally(sum(x.trees for x in rows), sum(x.tree_violations for x in rows), "trees",
                         time.perf_counter() - started,
                         figure=f"{sum(x.trees for x in rows)} trees x leaf orders, digests per n: "
                                f"{[len(x.tree_digests) for x in rows]}")


def c2_redelivery(r: Replay) -> ClaimResult:
    """One re-delivered copy, in every interleaving, leaves the canonical render unchanged."""
    started = time.perf_counter()
    for n in r.arities:
        row, subset = r.row(n), r.fragments[:n]
        reference = r.digest(r.state_of(subset), n)
        total = en.redelivery_count(n, 1)
        for schedule in en.redeliveries(n, 1):
            row.redeliveries += 1
            row.redelivery_canonical_changed += r.digest(r.state_of_schedule(schedule, subset), n) != reference
            r.progress(f"realstate n={n}: re-deliveries", row.redeliveries, total)
    rows = [r.rows[n] for n in r.arities]
    checked, changed = sum(x.redeliveries for x in rows), sum(x.redelivery_canonical_changed for x in rows)
    # a re-delivered copy is the same fragment to a library user too (==, hash); distinct ones differ
    copies = [(f, f.copy()) for f in r.fragments]
    unequal_copies = sum(c != f or hash(c) != hash(f) for f, c in copies)
    equal_distinct = sum(f == g for f, g in itertools.combinations(r.fragments, 2))
    return P.REDELIVERY.tally(checked + len(r.fragments), changed + unequal_copies + equal_distinct,
                              "re-deliveries and copies", time.perf_counter() - started,
                              figure=f"{changed} of {checked} re-deliveries changed it; "
                                     f"{unequal_copies} copies unequal, {equal_distinct} distinct pairs equal")


def c4_bag_order(r: Replay) -> ClaimResult:
    """BagMerge in every delivery order: some arity must give more than one digest."""
    started = time.perf_counter()
    for n in r.arities:
        row = r.row(n)
        row.bag_digests = {r.bag_digest(p) for p in itertools.permutations(r.fragments[:n])}
    rows = [r.rows[n] for n in r.arities if n >= 2]
    per_n = [len(r.rows[n].bag_digests) for n in r.arities]
    return P.BAG_ORDER.tally(len(rows), sum(len(x.bag_digests) > 1 for x in rows), "arities >= 2",
                             time.perf_counter() - started,
                             figure=f"BagMerge digests per n: {per_n} (n! = "
                                    f"{[math.factorial(n) for n in r.arities]})",
                             bag_digests_per_n=per_n)


def c4_bag_redelivery(r: Replay) -> ClaimResult:
    """BagMerge of every schedule with one re-delivered copy vs. BagMerge of the first arrivals."""
    started = time.perf_counter()
    for n in r.arities:
        row, subset = r.row(n), r.fragments[:n]
        for schedule in en.redeliveries(n, 1):
            arrivals = [r.delivered(leaf, subset) for leaf in en.leaves(schedule)]
            first = [subset[leaf.index] for leaf in en.leaves(schedule) if leaf.copy == 0]
            row.bag_redeliveries += 1
            row.redelivery_bag_changed += r.bag_digest(arrivals) != r.bag_digest(first)
    rows = [r.rows[n] for n in r.arities]
    checked, changed = sum(x.bag_redeliveries for x in rows), sum(x.redelivery_bag_changed for x in rows)
    return P.BAG_REDELIVERY.tally(checked, changed, "re-deliveries", time.perf_counter() - started,
                                  figure=f"re-delivery changed BagMerge in {changed} of {checked}")


def c6_pair(r: Replay) -> ClaimResult:
    """The canonical render of the first two fragments equals BagMerge in one of its orders."""
    started = time.perf_counter()
    if len(r.fragments) < 2:
        return P.PAIR.tally(0, 0, "pairs", figure="needs two agents")
    pair = r.fragments[:2]
    canonical = r.digest(r.state_of(pair), 2)
    match = canonical in {r.bag_digest(pair), r.bag_digest(pair[::-1])}
    r.row(2).c6_match = match
    return P.PAIR.tally(1, int(not match), "pairs", time.perf_counter() - started,
                        figure="equal to one of the 2 orders" if match else "equal to neither order")


def c8_decode(r: Replay) -> ClaimResult:
    """The final agent decodes identically from every permutation's canonical render (each
    permutation rendered by its own calls; the renders decoded in batches of one row count);
    BagMerge decodes of the full set in every order are reported with their text (they are
    expected to differ)."""
    started = time.perf_counter()
    alone_differs = 0  # batch rows that differ from their render decoded beside other renders
    for n in r.arities:
        row, perms = r.row(n), list(itertools.permutations(r.fragments[:n]))
        canonical = list(r.continue_from_each(
            (r.render(r.state_of(perm), n) for perm in perms), f"realstate n={n}: decodes", len(perms)))
        row.canonical_continuations.update(canonical)
        if n == len(r.fragments):
            bag = list(r.continue_from_each((bag_render(perm, engine=r.engine) for perm in perms),
                                            f"realstate n={n}: BagMerge decodes", len(perms)))
            row.bag_continuations.update(bag)
            # the batch must not mix rows: the last order's renders, decoded beside renders of
            # other bytes in a batch of the same shape, give its rows
            last = (r.render(r.state_of(perms[-1])), bag_render(perms[-1], engine=r.engine))
            rows = r.decode_rows(last[0], len(perms))
            position = (len(perms) - 1) % rows
            fillers = (bag_render(perms[0], engine=r.engine), last[1])  # the first of other bytes is used
            for target, decoded in zip(last, (canonical[-1], bag[-1])):
                filler = next((x for x in fillers if x.digest() != target.digest()), target)
                alone_differs += decoded != r.continue_alongside(target, filler, rows, position)
    rows = [r.rows[n] for n in r.arities]
    full = rows[-1]
    canonical = next(iter(full.canonical_continuations))
    shown = (f"decodes {r.text(canonical)} from all {full.n}! orders" if len(full.canonical_continuations) == 1
             else f"{len(full.canonical_continuations)} different decodes at n={full.n}")
    batch = "" if not alone_differs else (f"; {alone_differs} of 2 batch rows DIFFER from the render decoded "
                                          f"beside other renders")
    return P.DECODE.tally(
        len(rows) + 2, sum(len(x.canonical_continuations) > 1 for x in rows) + alone_differs,
        "arities and rows decoded beside other renders", time.perf_counter() - started,
        figure=f"{[len(x.canonical_continuations) for x in rows]} distinct per n; {shown}; BagMerge at "
               f"n={full.n}: {len({c.tokens for c in full.bag_continuations})} different continuations "
               f"({len({c.last_logits_sha256 for c in full.bag_continuations})} logits digests){batch}",
        canonical_tokens=[list(next(iter(x.canonical_continuations)).tokens) for x in rows
                          if len(x.canonical_continuations) == 1],
        decodes=_decodes_json(r))


def c5_key_exact(r: Replay) -> ClaimResult:
    """The engine's key equals the key from the exact Fraction reference, for every fragment and
    for a tied twin."""
    started = time.perf_counter()
    frags = [*r.fragments, head_swapped_twin(r.fragments[0])]
    mismatches = [f.content_id.hex()[:12] for f in frags
                  if r.engine.key(f) != order_key(reference_order_value(f.middle_layer_keys()), f.content_id)]
    return P.KEY_EXACT.tally(len(frags), len(mismatches), "fragments", time.perf_counter() - started,
                             figure="all keys bit-exact" if not mismatches else f"mismatch: {mismatches}",
                             order_values=[{"id": f.content_id.hex(), "m": f.order_value.hex()}
                                           for f in r.fragments])


def c5_ties(r: Replay) -> ClaimResult:
    """A real fragment and its head-swapped twin tie on m; the key must still order them.

    The sort is driven directly with every input order (a set's own iteration order must not
    be what makes the render deterministic), and the render is checked over every arrival order."""
    started = time.perf_counter()
    base = r.fragments[0]
    twin = head_swapped_twin(base)
    tie = _f64_bits(twin.order_value) == _f64_bits(base.order_value)
    distinct = twin.content_id != base.content_id
    members = [base, twin, *r.fragments[1:3]]
    perms = list(itertools.permutations(members))
    orders = {tuple(f.content_id for f in r.engine.order(list(p))) for p in perms}
    digests = {r.digest(r.state_of(p)) for p in perms}
    ok = tie and distinct and len(orders) == 1 and len(digests) == 1
    figure = (f"m equal: {tie}, ids differ: {distinct}; over {len(perms)} input orders: "
              f"{len(orders)} sort result(s), {len(digests)} render digest(s)")
    return P.TIES.holds_if(ok, figure, time.perf_counter() - started, m_equal=tie, ids_differ=distinct,
                           sort_results=len(orders), digests=len(digests))


def c8_frequencies(r: Replay) -> ClaimResult:
    """The frequencies the engine re-encodes with are bit for bit the model's own."""
    model_freqs = [_f64_bits(f) for f in model_inv_freq(r.lm.model)]
    used = [_f64_bits(float(f)) for f in r.engine.frequencies(r.lm.fingerprint)]
    differ = sum(a != b for a, b in zip(model_freqs, used)) + abs(len(model_freqs) - len(used))
    return P.FREQUENCIES.tally(len(model_freqs), differ, "frequencies",
                               figure=f"{differ} of {len(used)} frequencies differ from the model's")


def c8_fidelity(r: Replay) -> ClaimResult:
    """Re-encoded keys against the model's own RoPE at the target offsets, per layer."""
    started = time.perf_counter()
    rows = _fidelity(r, r.settings)
    r.fidelity_rows = rows
    floor = MIN_COSINE[r.lm.dtype]
    worst_cos = min(min(x.rope_min_cosine) for x in rows)
    worst_err = max(max(x.rope_max_abs_error) for x in rows)
    prefill_cos = min(min(x.prefill_min_cosine) for x in rows)
    below = sum(min(x.rope_min_cosine) < floor for x in rows)
    return P.FIDELITY.tally(len(rows), below, "placements", time.perf_counter() - started,
                            figure=f"min cosine {worst_cos:.7f} (floor {floor}) on renders at bases <= "
                                   f"{max(x.base for x in rows)}, max abs error {worst_err:.4g} (full "
                                   f"re-prefill: min cosine {prefill_cos:.7f}, not thresholded)",
                            floor=floor, rows=[x.to_json() for x in rows])


def c3_cross_device(r: Replay) -> ClaimResult:
    """The canonical render on the device and on the CPU have the same SHA-256."""
    started = time.perf_counter()
    device_digest = canonical_render(r.fragments, engine=r.engine).digest()
    cpu_digest = canonical_render([f.to("cpu") for f in r.fragments], engine=r.engine).digest()
    equal = device_digest == cpu_digest
    return P.CROSS_DEVICE.holds_if(equal, f"{r.lm.device.type} {device_digest[:16]} vs cpu {cpu_digest[:16]}",
                                   time.perf_counter() - started, device_digest=device_digest,
                                   cpu_digest=cpu_digest)


ORACLE_BASE = 13  # a non-zero base for the oracle's own cases (a render that ignores base shows)
# what a broken render raises: in the oracle row a crash is a mismatch, named, not a traceback
RENDER_CRASHES = (IndexError, ValueError, RuntimeError, TypeError)


def c3_oracle(r: Replay) -> ClaimResult:
    """Every distinct render recorded by the other checks, the full set in every mode at base 0
    and ORACLE_BASE, and every fragment's id, m and key, against the independent oracle."""
    import oracle
    from realstate.evidence.oracle_bridge import compare_render, fragment_mismatches, oracle_render, render_bytes

    started = time.perf_counter()
    failures: list[dict[str, Any]] = []
    fragments = [*r.fragments, head_swapped_twin(r.fragments[0])]
    for f in fragments:
        if problems := fragment_mismatches(f):
            failures.append({"fragment": f.content_id.hex()[:16], "first": problems[:2]})
    expected: dict[int, Any] = {}
    for (n, digest), state in r.rendered.items():
        want = expected.setdefault(n, oracle_render("canonical", r.fragments[:n], 0))
        if digest == want.digest:
            continue
        got = render_bytes(canonical_render(state, engine=r.engine))
        mismatches = oracle.compare(got, want, limit=3)
        if mismatches or got.digest != digest:
            failures.append({"n": n, "digest": digest[:16],
                             "first": [str(m) for m in mismatches] or ["the render is not deterministic"]})
    tokens = sum(f.tokens for f in r.fragments)
    head_dim = r.fragments[0].keys.shape[-1]
    # chunks of 5 positions besides chunk_probes' two: a piece that ends inside a later chunk
    # with several of its rows there (what real-size renders, 4,096 rows a chunk, do all the time)
    engines = [r.engine, *large_path_engines(r.engine, tokens, head_dim),
               chunked(unfused(r.engine), 5 * head_dim), PER_FRAGMENT]
    # the full set and its first fragment alone (a path that reads a second fragment breaks there),
    # then layouts the agents' fragments never form (_layout_probes), on every path
    cases = [(mode, base, engine, subset) for mode in ("canonical", "bag", "naive") for base in (0, ORACLE_BASE)
             for engine in engines for subset in (r.fragments, r.fragments[:1])]
    cases += [("bag", base, engine, probe) for probe in _layout_probes(r.fragments) for base in (0, ORACLE_BASE)
              for engine in engines]
    for mode, base, engine, subset in cases:
        try:
            mismatches = compare_render(mode, subset, base, engine, limit=3)
        except RENDER_CRASHES as exc:
            mismatches = [f"the render raised {type(exc).__name__}: {exc}"]
        if mismatches:
            failures.append({"mode": mode, "base": base, "engine": engine.name, "fragments": len(subset),
                             "first": [str(m) for m in mismatches]})
    # the batched paths (the per-fragment engine renders one at a time), and a batch bound of one
    # fragment's render: in one call, the one-fragment sets are written together and the full
    # sets each alone (the path a real-size render takes when rendered beside others)
    first = r.fragments[0]
    together_engines = [*engines[:-1], batched_up_to(r.engine, first.keys.numel())]
    together_count, together = _together_mismatches(r, together_engines)
    failures += together
    api = _public_api_mismatches(r)
    failures += api
    checked = len(fragments) + len(r.rendered) + len(cases) + len(PUBLIC_API) + 2 + together_count
    return P.ORACLE.tally(checked, len(failures), "fragments and renders", time.perf_counter() - started,
                          figure=f"{checked - len(failures)}/{checked} equal: {len(fragments)} fragments' "
                                 f"ids, m and keys; {len(r.rendered)} distinct renders of {r.renders}; "
                                 f"{len(cases)} renders of the full set, of one fragment and of two probe "
                                 f"layouts (canonical, bag, naive at base 0 and {ORACLE_BASE}, each on the small "
                                 f"path, the compiled kernel{_fused_note(r.fragments[0].keys)} on the process's "
                                 f"threads and on {KERNEL_PROBE_THREADS}, the torch chunked path at three "
                                 f"chunk sizes and the per-fragment path); "
                                 f"{together_count} renders of sets written together ({len(together_engines)} "
                                 f"paths, both bases); {len(PUBLIC_API) + 2} "
                                 f"library calls with their defaults (the three DynamicCache renders, layout, "
                                 f"canonical_renders)",
                          failures=failures[:5])


def _fused_note(keys: torch.Tensor) -> str:
    """Says so where the compiled kernel's engine fell back to the torch path (numba missing,
    CUDA keys or float16): the replay still passes, but it has not exercised the kernel."""
    if fused_kernel(keys) is not None:
        return ""
    return f" (which does not apply to {keys.dtype} keys on {keys.device.type}" + (
        "" if NUMBA else " or without numba") + ": the torch path)"


def _together_calls(fragments: Sequence[Fragment]) -> list[list[list[Fragment]]]:
    """The states of each ``canonical_renders`` call: first the full set, the same set with every
    key and value negated (other bytes, the same tokens, starts and m — squared norms do not see
    a sign — so the same layout shape), the full set in reverse, and the first fragment and its
    negated twin (two batches; one that mixed up its members' tensors shows in the twins); then
    two states of different shapes in one call (each its own batch of one)."""
    twins = [Fragment(f.fingerprint, f.start, -f.keys, -f.values) for f in fragments]
    return [[list(fragments), twins, list(fragments)[::-1], twins[:1], list(fragments[:1])],
            [list(fragments), list(fragments[:1])]]


def _together_mismatches(r: Replay, engines: Sequence[Engine]) -> tuple[int, list[dict[str, Any]]]:
    """Each call of ``_together_calls`` made with ``canonical_renders`` per engine and
    base, against the oracle's render of that set (one count per set, engine and base)."""
    import oracle
    from realstate.evidence.oracle_bridge import oracle_render, render_bytes

    calls = _together_calls(r.fragments)
    wanted = {(c, i, base): oracle_render("canonical", s, base) for c, states in enumerate(calls)
              for i, s in enumerate(states) for base in (0, ORACLE_BASE)}
    failures: list[dict[str, Any]] = []
    for engine in engines:
        for base in (0, ORACLE_BASE):
            for c, states in enumerate(calls):
                try:
                    rendered = canonical_renders(states, base, engine)
                except RENDER_CRASHES as exc:
                    failures.append({"together": c, "base": base, "engine": engine.name,
                                     "first": [f"the render raised {type(exc).__name__}: {exc}"]})
                    continue
                for i, got in enumerate(rendered):
                    if mismatches := oracle.compare(render_bytes(got), wanted[c, i, base], limit=3):
                        failures.append({"together": f"{c}.{i}", "base": base, "engine": engine.name,
                                         "first": [str(m) for m in mismatches]})
    return len(engines) * 2 * sum(len(states) for states in calls), failures


def _layout_probes(fragments: Sequence[Fragment]) -> list[list[Fragment]]:
    """Bag layouts the agents' fragments do not form, built from their bytes (at base 0):
    a fragment that lands on its own start (delta 0, so copied untouched, and holding -0 keys that a
    rotation by 0 would turn into +0) between two that move; and one fragment longer than the
    head dimension (a path that mixes up the token and head axes shows there)."""
    first, second, third = (list(fragments) * 3)[:3]
    kept_keys = first.keys.clone() if second is first else second.keys.clone()
    kept_keys.view(-1)[::5] = -0.0
    moved = Fragment(first.fingerprint, first.start + 7, first.keys, first.values)
    kept = Fragment(second.fingerprint, first.tokens, kept_keys, second.values)
    last = Fragment(third.fingerprint, 0, third.keys, third.values)
    head_dim, total = first.keys.shape[-1], sum(f.tokens for f in fragments)
    long = bag_render(list(fragments) * (head_dim // total + 1)).as_fragment()
    return [[moved, kept, last], [long]]


def _control(r: Replay, engine: Engine, fragments: Sequence[Fragment] | None = None) -> Replay:
    """A fresh replay of the same agents (or of ``fragments``) with ``engine``: its renders and
    figures are its own, so a control never touches what the real checks recorded."""
    control = Replay(r.lm, r.runs, r.settings, engine, no_progress)
    if fragments is not None:
        control.fragments = list(fragments)
    return control


def _caught(result: ClaimResult) -> bool:
    return result.outcome is Outcome.FAILS and exit_code_for([result]) == 1


def control_order(r: Replay) -> ClaimResult:
    """Negative control: the permutations check (a count) fails on an arrival-order render."""
    started = time.perf_counter()
    inner = c3_permutations(_control(r, engine_named("order-by-arrival")))
    return P.CONTROL_ORDER.holds_if(_caught(inner), f"order-by-arrival: {inner.outcome.value}, exit "
                                    f"{exit_code_for([inner])} ({inner.figure})", time.perf_counter() - started)


def control_ties(r: Replay) -> ClaimResult:
    """Negative control: the ties check (a single comparison) fails without the id tie-break;
    decided by a count, so each verdict path checks the other."""
    started = time.perf_counter()
    inner = c5_ties(_control(r, engine_named("no-tie-break")))
    return P.CONTROL_TIES.tally(1, 0 if _caught(inner) else 1, "planted bugs", time.perf_counter() - started,
                                figure=f"no-tie-break: {inner.outcome.value}, exit {exit_code_for([inner])} "
                                       f"({inner.figure})")


def control_bag(r: Replay) -> ClaimResult:
    """Negative control: a 'sometimes' check with nothing to find fails — two deliveries of one
    fragment, whose two BagMerge orders are the same bytes."""
    started = time.perf_counter()
    inner = c4_bag_order(_control(r, r.engine, [r.fragments[0], r.fragments[0].copy()]))
    return P.CONTROL_BAG.holds_if(_caught(inner), f"one fragment twice: {inner.outcome.value}, exit "
                                  f"{exit_code_for([inner])} ({inner.figure})", time.perf_counter() - started)


PUBLIC_API = (("canonical", canonical_merge, canonical_render), ("bag", bag_merge, bag_render),
              ("naive", naive_concat, naive_render))


def _public_api_mismatches(r: Replay) -> list[dict[str, Any]]:
    """The library's DynamicCache API with its defaults (base 0, and ``Fragment.from_cache``'s
    start 0) holds the render the oracle checks at base 0: read back as a fragment, the cache has
    the content id of that render packaged at base 0; ``layout``'s default base is 0; and
    ``canonical_renders`` with its default base gives the oracle's render at base 0."""
    found = []
    for mode, api, render in PUBLIC_API:
        back = Fragment.from_cache(api(r.fragments), r.lm.fingerprint).content_id
        want = render(r.fragments).as_fragment().content_id
        if back != want:
            found.append({"api": api.__name__, "first": [f"cache read back as {back.hex()[:16]}, the base-0 "
                                                         f"{mode} render is {want.hex()[:16]}"]})
    offsets, at = [], 0
    for f in r.fragments:
        offsets.append(at)
        at += f.tokens
    if [p.offset for p in layout(r.fragments)] != offsets:
        found.append({"api": "layout", "first": [f"default layout offsets {[p.offset for p in layout(r.fragments)]}, "
                                                 f"want {offsets} (base 0)"]})
    from realstate.evidence.oracle_bridge import oracle_render

    many, want_digest = canonical_renders([r.fragments])[0].digest(), oracle_render("canonical", r.fragments, 0).digest
    if many != want_digest:
        found.append({"api": "canonical_renders", "first": [f"default render {many[:16]}, the oracle's at base 0 "
                                                             f"{want_digest[:16]}"]})
    return found


def known_answer(check: Check) -> Callable[[Replay], ClaimResult]:
    """The check's row of the known-answer vectors (recomputed once per replay)."""
    def run(r: Replay) -> ClaimResult:
        if r.known_answers is None:
            from realstate.replay.vectors import check_known_answers

            r.known_answers = {row.check: row for row in check_known_answers()}
        return r.known_answers[check.name]
    return run


CHECKS: dict[Check, Callable[[Replay], ClaimResult]] = {
    # first: the known answers take a fraction of a second and read nothing the replay computes,
    # so with --fail-fast (canonmerge audit) a format or arithmetic change stops the run early
    P.KNOWN_IDS: known_answer(P.KNOWN_IDS),
    P.KNOWN_M: known_answer(P.KNOWN_M),
    P.KNOWN_KEYS: known_answer(P.KNOWN_KEYS),
    P.KNOWN_RENDERS: known_answer(P.KNOWN_RENDERS),
    P.REDELIVERY: c2_redelivery,
    P.PERMUTATIONS: c3_permutations,
    P.TREES: c3_trees,
    P.BAG_ORDER: c4_bag_order,
    P.BAG_REDELIVERY: c4_bag_redelivery,
    P.KEY_EXACT: c5_key_exact,
    P.TIES: c5_ties,
    P.PAIR: c6_pair,
    P.DECODE: c8_decode,
    P.FREQUENCIES: c8_frequencies,
    P.FIDELITY: c8_fidelity,
    P.CROSS_DEVICE: c3_cross_device,
    P.ORACLE: c3_oracle,  # after every check that renders: it compares what they rendered
    P.CONTROL_ORDER: control_order,
    P.CONTROL_TIES: control_ties,
    P.CONTROL_BAG: control_bag,
}


def run_replay(settings: ReplaySettings = ReplaySettings(), progress: Progress = no_progress,
               engine: Engine = CANONICAL, lm: LoadedModel | None = None,
               checks: Sequence[Check] | None = None, fail_fast: bool = False) -> PartReport:
    """Build the agents' fragments and run the selected checks on them (every check of
    ``CHECKS`` by default; see the module docstring).

    Args:
        settings: the weights source (geometry, checkpoint or named model), agents, latent steps,
            dtype, device, decode length, fidelity offsets, prompts and iteration order.
        progress: called as ``progress(label, done, total)`` during long loops.
        engine: the render mechanics under test (a planted bug in the negative tests).
        lm: an already loaded model, instead of loading the one ``settings`` names.
        checks: the registered checks to run (``realstate.properties``); ``None`` for all.
        fail_fast: stop after the first check that does not hold (``canonmerge audit``).

    Example:
        >>> report = run_replay(ReplaySettings(agents=3))  # doctest: +SKIP
        >>> {r.claim for r in report.results if r.outcome is not Outcome.HOLDS}  # doctest: +SKIP
        set()
    """
    settings.validate()
    started = time.perf_counter()
    timings: dict[str, float] = {}
    chosen = [c for c in CHECKS if checks is None or c in checks]

    def lap(name: str, t0: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - t0, 3)
        return now

    t = time.perf_counter()
    lm = lm or load_model(settings)
    t = lap("load_model", t)
    if lm.device.type == "cpu":
        chosen = [c for c in chosen if c is not P.CROSS_DEVICE]
    progress("realstate: agents", 0, settings.agents)
    runs = run_agents(lm, settings.agents, settings.latent_steps, settings.seed,
                      list(settings.prompts) if settings.prompts else None, settings.agent_starts)
    t = lap("agents", t)
    replay = Replay(lm, runs, settings, engine, progress)
    ids = [f.content_id for f in replay.fragments]
    if len(set(ids)) != len(ids):
        raise InputError("two agents produced identical fragments; give them different prompts")

    results: list[ClaimResult] = []
    with iteration_order(settings.iteration):
        for check in chosen:
            results.append(CHECKS[check](replay))
            t = lap(check.name, t)
            if fail_fast and results[-1].outcome is not Outcome.HOLDS:
                break
        incremental = _incremental(replay)

    tables = [_model_table(lm, settings), _arity_table([replay.rows[n] for n in sorted(replay.rows)])]
    if any(x.canonical_continuations for x in replay.rows.values()):
        tables.append(_decodes_table(replay))
    if replay.fidelity_rows:
        tables.append(_fidelity_table(replay.fidelity_rows))
    activations = layer_activations(runs, replay.fidelity_rows)
    tables.append(_activations_table(activations, lm.fingerprint.layers // 2))
    notes = [
        f"weights: {lm.source} ({lm.source_detail})"
        + ("; seeded weights are not real weights: the bit-level claims C3, C6, C7 do not depend on "
           "weight values, the decode figures do" if lm.source == "seeded" else ""),
        f"incremental re-encoding (render of a render) gives {'DIFFERENT' if incremental['differs'] else 'the same'}"
        f" bytes from the flat render ({incremental['key_elements_differing']} key elements differ); "
        "canonmerge always renders flat from stored positions",
        f"FragmentSet iteration order during the replay: {settings.iteration}",
    ]
    if len(results) < len(chosen):
        notes.append(f"--fail-fast: stopped at {results[-1].check}; {len(chosen) - len(results)} checks not run")
    full = replay.rows.get(len(replay.fragments))
    data = {
        "model": lm.describe(),
        "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items()},
        "engine": engine.name,
        "checks": [c.name for c in chosen],
        "fragments": [{"agent": x.name, "id": x.fragment.content_id.hex(), "start": x.fragment.start,
                       "tokens": x.fragment.tokens,
                       "prompt_tokens": len(x.prompt_ids), "latent_steps": x.latent_steps,
                       "m": x.fragment.order_value} for x in runs],
        "canonical_digest_full_set": replay.digest(replay.state_of(replay.fragments)),
        "counts": {"permutations": sum(x.permutations for x in replay.rows.values()),
                   "merge_trees": sum(x.trees for x in replay.rows.values()),
                   "redeliveries": sum(x.redeliveries for x in replay.rows.values())},
        "incremental": incremental,
        "activations_per_layer": [x.to_json() for x in activations],
        "full_set_row": _row_json(full) if full is not None else None,
        "timings_s": {**timings, "total": round(time.perf_counter() - started, 3)},
    }
    return PartReport("realstate", results, tables, data, notes)


def _fidelity(replay: Replay, settings: ReplaySettings) -> list[FidelityRow]:
    """C8 on rendered caches: the full set rendered by the engine at base 0 and at each fidelity
    offset, and each placement's slice read back from the render and compared with the model's
    own RoPE at that placement's offset."""
    runs = {run.fragment.content_id: run for run in replay.runs}  # captures checked by run_agent
    total = sum(f.tokens for f in replay.fragments)
    limit = replay.fragments[0].fingerprint.max_positions - total
    bases = sorted({0, *(min(o, limit) for o in settings.fidelity_offsets)})
    rows: list[FidelityRow] = []
    for i, base in enumerate(bases):
        rendered = canonical_render(replay.fragments, base, engine=replay.engine)
        position = 0
        for placement in rendered.layout:
            n = placement.fragment.tokens
            run = runs[placement.fragment.content_id]
            moved = rendered.keys[:, :, position:position + n]
            rows.append(placement_fidelity(replay.lm, run, moved, placement.offset, base))
            position += n
        replay.progress("realstate: fidelity", i + 1, len(bases))
    return rows


def _incremental(replay: Replay) -> dict[str, Any]:
    """Flat render vs. rendering the tail first at 0 and then shifting that block into place."""
    ordered = replay.engine.order(replay.fragments)
    flat = render_layout(layout(ordered), 0, replay.engine)
    if len(ordered) < 2:
        return {"differs": False, "key_elements_differing": 0, "note": "needs two fragments"}
    block = bag_render(ordered[1:], 0, replay.engine).as_fragment()
    two_step = render_layout([Placement(ordered[0], 0), Placement(block, ordered[0].tokens)], 0, replay.engine)
    differing = int((raw_bits(flat.keys) != raw_bits(two_step.keys)).sum())
    return {"differs": flat.digest() != two_step.digest(), "key_elements_differing": differing,
            "flat_digest": flat.digest(), "incremental_digest": two_step.digest()}


def _row_json(r: ArityRow) -> dict[str, Any]:
    return {"n": r.n, "permutations": r.permutations, "canonical_digests": sorted(r.canonical_digests),
            "bag_digests": len(r.bag_digests), "trees": r.trees, "tree_digests": len(r.tree_digests),
            "redeliveries": r.redeliveries, "redelivery_canonical_changed": r.redelivery_canonical_changed,
            "bag_redeliveries": r.bag_redeliveries, "redelivery_bag_changed": r.redelivery_bag_changed,
            "canonical_continuations": len(r.canonical_continuations),
            "bag_continuations": len(r.bag_continuations), "c6_match": r.c6_match}


def _model_table(lm: LoadedModel, settings: ReplaySettings) -> Table:
    d = lm.describe()
    rows = [[k, str(v)] for k, v in d.items()]
    rows.append(["agents / latent steps", f"{settings.agents} / {settings.latent_steps}"])
    return Table("realstate: model", ["field", "value"], rows)


def _arity_table(rows: list[ArityRow]) -> Table:
    """Per arity, what the checks that ran saw ("-" where a check did not run)."""
    def count(x: int | set[Any] | Counter[Any]) -> str:
        value = len(x) if isinstance(x, (set, Counter)) else x
        return str(value) if value else "-"

    table = Table("realstate: per arity", ["n", "perms", "canonical digests", "BagMerge digests", "trees",
                                           "tree digests", "re-deliveries (canon changed / bag changed)",
                                           "decodes canonical / BagMerge", "canonical digest"])
    for r in rows:
        digest = (next(iter(r.canonical_digests))[:16] if len(r.canonical_digests) == 1
                  else "MANY" if r.canonical_digests else "-")
        table.rows.append([str(r.n), count(r.permutations), count(r.canonical_digests), count(r.bag_digests),
                           count(r.trees), count(r.tree_digests),
                           f"{r.redeliveries} ({r.redelivery_canonical_changed} / {r.redelivery_bag_changed})",
                           f"{count(r.canonical_continuations)} / {count(r.bag_continuations)}", digest])
    return table


def _decodes_json(r: Replay) -> list[dict[str, Any]]:
    """Per arity, every distinct decode with its text and how many delivery orders gave it."""
    def listed(decodes: Counter[Continuation]) -> list[dict[str, Any]]:
        return [{"tokens": list(c.tokens), "text": r.text(c), "last_logits_sha256": c.last_logits_sha256,
                 "orders": count} for c, count in decodes.most_common()]

    return [{"n": x.n, "orders": sum(x.canonical_continuations.values()), "question": r.question,
             "final_prompt_tokens": len(r.final_prompt), "canonical": listed(x.canonical_continuations),
             "bagmerge": listed(x.bag_continuations)} for x in (r.rows[n] for n in r.arities)]


DECODES_SHOWN = 6  # distinct BagMerge continuations listed in the table (all are in --json)


def _decodes_table(r: Replay) -> Table:
    """What the final agent decoded: the canonical render's continuation (once per n: it must be
    one), and BagMerge's distinct continuations over every order with how many orders gave each."""
    title = ("realstate: final agent's greedy decodes"
             + (f" after {json.dumps(r.question)}" if r.question is not None else " (token ids)"))
    table = Table(title, ["n", "orders", "canonical render: decodes", "BagMerge: distinct",
                          "BagMerge: continuation x orders"])
    for x in (r.rows[n] for n in r.arities):
        if not x.canonical_continuations:
            continue
        canonical = (r.text(next(iter(x.canonical_continuations))) if len(x.canonical_continuations) == 1
                     else f"{len(x.canonical_continuations)} DIFFERENT")
        bag = {}
        for c, orders in x.bag_continuations.items():  # token sequences (logits may differ in the last bits)
            bag[c.tokens] = bag.get(c.tokens, 0) + orders
        ranked = sorted(bag.items(), key=lambda item: (-item[1], item[0]))
        listed = "; ".join(f"{r.text(Continuation(tokens, ''))} x{orders}" for tokens, orders in ranked[:DECODES_SHOWN])
        if len(ranked) > DECODES_SHOWN:
            listed += f"; ... {len(ranked) - DECODES_SHOWN} more (--json)"
        table.rows.append([str(x.n), str(sum(x.canonical_continuations.values())), canonical,
                           str(len(bag)) if bag else "-", listed or "-"])
    return table


def _activations_table(rows: list[LayerActivations], key_layer: int) -> Table:
    """Per layer (``realstate.replay.activations``): measurements, not a claim."""
    def number(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    table = Table(f"realstate: activations per layer (* = layer {key_layer}, the order key's; rope columns: "
                  "worst over the fidelity placements, '-' when C8 fidelity did not run)",
                  ["layer", "largest |k| channel (pre-RoPE)", "max |k|", "x median channel",
                   "rope: max abs error", "rope: min cosine", "m: min relative gap (agents)"])
    for x in rows:
        gap = "-" if x.m_min_relative_gap is None else f"{x.m_min_relative_gap:.3g} ({'/'.join(x.m_pair or ())})"
        table.rows.append([f"{x.layer}{'*' if x.layer == key_layer else ''}", f"head {x.channel[0]} dim {x.channel[1]}",
                           f"{x.channel_max:.4g}", f"{x.channel_ratio:.1f}", number(x.rope_max_abs_error, ".4g"),
                           number(x.rope_min_cosine, ".7f"), gap])
    return table


def _fidelity_table(rows: list[FidelityRow]) -> Table:
    table = Table("realstate: re-encoding fidelity (C8) on rendered caches, worst over agents and layers",
                  ["render base", "placements (agent@offset)", "rope: max abs error", "rope: min cosine",
                   "full re-prefill: min cosine"])
    by_base: dict[int, list[FidelityRow]] = {}
    for r in rows:
        by_base.setdefault(r.base, []).append(r)
    for base, group in sorted(by_base.items()):
        table.rows.append([str(base), ",".join(f"{r.agent}@{r.offset}" for r in group),
                           f"{max(max(r.rope_max_abs_error) for r in group):.4g}",
                           f"{min(min(r.rope_min_cosine) for r in group):.7f}",
                           f"{min(min(r.prefill_min_cosine) for r in group):.7f}"])
    return table
