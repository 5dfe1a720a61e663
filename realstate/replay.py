"""The bit-for-bit replay: the claims checked on caches from a real transformers Qwen3 model.

For every arity n = 1..N (the first n agents' fragments) it renders every permutation, every
binary merge tree over every leaf order and every schedule with one re-delivered copy (the
enumerators are modelcheck's), decodes from every permutation, and compares SHA-256 digests of
the rendered bytes.  Each result names its claim (spec.CLAIMS).  ``engine``
is the mechanics under test: ``CANONICAL`` normally, a planted bug in the negative tests."""

from __future__ import annotations

import itertools
import math
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from modelcheck import enumerate as en
from realstate.agents import AgentRun, run_agents
from realstate.continuation import Continuation, greedy_continue
from realstate.dtypes import raw_bits
from realstate.engine import CANONICAL, Engine
from realstate.fidelity import FidelityRow, fidelity
from realstate.fragment import Fragment
from realstate.models import LoadedModel, load_checkpoint, load_named, load_seeded, model_inv_freq
from realstate.order_value import reference_order_value
from realstate.render import Placement, bag_render, canonical_render, layout, render_layout
from realstate.settings import ReplaySettings
from spec import ClaimResult, InputError, Outcome, PartReport, Progress, Table, no_progress, order_key

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
    n: int
    permutations: int = 0
    canonical_digests: set[str] = field(default_factory=set)
    bag_digests: set[str] = field(default_factory=set)
    trees: int = 0
    tree_digests: set[str] = field(default_factory=set)
    redeliveries: int = 0
    redelivery_canonical_changed: int = 0
    redelivery_bag_unchanged: int = 0
    canonical_continuations: set[Continuation] = field(default_factory=set)
    bag_continuations: set[Continuation] = field(default_factory=set)
    c6_match: bool | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def tick(self, what: str, since: float) -> float:
        """Add the time since ``since`` to ``what``; returns now."""
        now = time.perf_counter()
        self.seconds[what] = self.seconds.get(what, 0.0) + now - since
        return now


class Replay:
    def __init__(self, lm: LoadedModel, runs: list[AgentRun], settings: ReplaySettings,
                 engine: Engine, progress: Progress) -> None:
        self.lm, self.runs, self.settings, self.engine, self.progress = lm, runs, settings, engine, progress
        self.fragments = [r.fragment for r in runs]
        self.final_prompt = runs[0].prompt_ids[:5]

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

    def digest(self, state: Any) -> str:
        return canonical_render(state, engine=self.engine).digest()

    def continue_from(self, rendered: Any) -> Continuation:
        return greedy_continue(self.lm, rendered.to_cache(), self.final_prompt, self.settings.decode_tokens)

    def arity(self, n: int) -> ArityRow:
        row = ArityRow(n)
        subset = self.fragments[:n]
        perms = list(itertools.permutations(subset))
        clock = time.perf_counter
        for i, perm in enumerate(perms):
            t = clock()
            rendered = canonical_render(self.state_of(perm), engine=self.engine)
            row.canonical_digests.add(rendered.digest())
            bag = bag_render(perm, engine=self.engine)
            row.bag_digests.add(bag.digest())
            t = row.tick("permutations", t)
            row.canonical_continuations.add(self.continue_from(rendered))
            if n == len(self.fragments):
                row.bag_continuations.add(self.continue_from(bag))
            row.tick("decode", t)
            self.progress(f"realstate n={n}: permutations and decodes", i + 1, len(perms))
        row.permutations = len(perms)
        t = clock()
        for tree in en.merge_trees(n):  # every tree shape over every leaf order
            row.tree_digests.add(self.digest(self.state_of_schedule(tree, subset)))
            row.trees += 1
            self.progress(f"realstate n={n}: merge trees", row.trees, en.tree_count(n))
        t = row.tick("trees", t)
        reference = next(iter(row.canonical_digests))
        total = en.redelivery_count(n, 1)
        for schedule in en.redeliveries(n, 1):  # one repeated delivery, in every interleaving
            arrivals = [self.delivered(leaf, subset) for leaf in en.leaves(schedule)]
            first_arrivals = [subset[leaf.index] for leaf in en.leaves(schedule) if leaf.copy == 0]
            row.redeliveries += 1
            row.redelivery_canonical_changed += self.digest(self.state_of_schedule(schedule, subset)) != reference
            row.redelivery_bag_unchanged += (bag_render(arrivals, engine=self.engine).digest()
                                             == bag_render(first_arrivals, engine=self.engine).digest())
            self.progress(f"realstate n={n}: re-deliveries", row.redeliveries, total)
        row.tick("redeliveries", t)
        if n == 2:
            row.c6_match = reference in {bag_render(p, engine=self.engine).digest() for p in perms}
        return row


def head_swapped_twin(fragment: Fragment) -> Fragment:
    """Same multiset of key-vector norms at every layer (so exactly the same m), other content."""
    heads = fragment.keys.shape[1]
    order = [1, 0, *range(2, heads)]
    return Fragment(fragment.fingerprint, fragment.start, fragment.keys[:, order].contiguous(),
                    fragment.values[:, order].contiguous())


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def run_replay(settings: ReplaySettings = ReplaySettings(), progress: Progress = no_progress,
               engine: Engine = CANONICAL, lm: LoadedModel | None = None) -> PartReport:
    """Build the agents' fragments and check every claim on them (see the module docstring).

    Args:
        settings: the weights source (geometry, checkpoint or named model), agents, latent steps,
            dtype, device, decode length, fidelity offsets and prompts.
        progress: called as ``progress(label, done, total)`` during long loops.
        engine: the render mechanics under test (a planted bug in the negative tests).
        lm: an already loaded model, instead of loading the one ``settings`` names.

    Example:
        >>> report = run_replay(ReplaySettings(agents=3))  # doctest: +SKIP
        >>> {r.claim for r in report.results if r.outcome is not Outcome.HOLDS}  # doctest: +SKIP
        set()
    """
    settings.validate()
    started = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str, t0: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - t0, 3)
        return now

    t = time.perf_counter()
    lm = lm or load_model(settings)
    t = lap("load_model", t)
    progress("realstate: agents", 0, settings.agents)
    runs = run_agents(lm, settings.agents, settings.latent_steps, settings.seed,
                      list(settings.prompts) if settings.prompts else None)
    t = lap("agents", t)
    replay = Replay(lm, runs, settings, engine, progress)
    ids = [f.content_id for f in replay.fragments]
    if len(set(ids)) != len(ids):
        raise InputError("two agents produced identical fragments; give them different prompts")

    rows = [replay.arity(n) for n in range(1, settings.agents + 1)]
    t = lap("arities", t)

    results: list[ClaimResult] = []
    details_by_n = [_row_json(r) for r in rows]
    total_perms = sum(r.permutations for r in rows)
    total_trees = sum(r.trees for r in rows)
    total_redeliveries = sum(r.redeliveries for r in rows)
    full = rows[-1]

    def spent(what: str) -> float:
        return sum(r.seconds.get(what, 0.0) for r in rows)

    def add(claim: str, check: str, ok: bool, figure: str, seconds: float = 0.0, **details: Any) -> None:
        results.append(ClaimResult(claim, "realstate", check, Outcome.HOLDS if ok else Outcome.FAILS,
                                   figure, seconds, details))

    add("C3", "permutations render one digest",
        all(len(r.canonical_digests) == 1 for r in rows),
        f"1 digest for each n <= {settings.agents} ({total_perms} permutations)"
        if all(len(r.canonical_digests) == 1 for r in rows)
        else f"digests per n: {[len(r.canonical_digests) for r in rows]}",
        spent("permutations"), per_arity=details_by_n)
    add("C3", "merge trees render the same digest",
        all(r.tree_digests == r.canonical_digests and len(r.tree_digests) == 1 for r in rows),
        f"{total_trees} trees x leaf orders, digests per n: {[len(r.tree_digests) for r in rows]}",
        spent("trees"))
    add("C2", "re-delivery leaves the canonical render unchanged",
        all(r.redelivery_canonical_changed == 0 for r in rows),
        f"{sum(r.redelivery_canonical_changed for r in rows)} of {total_redeliveries} re-deliveries changed it",
        spent("redeliveries"))
    bag_witness = all(len(r.bag_digests) > 1 for r in rows[1:])
    bag_redelivery = all(r.redelivery_bag_unchanged == 0 for r in rows)
    if settings.agents >= 2:  # a BagMerge order witness needs two fragments
        add("C4", "BagMerge depends on order and re-delivery", bag_witness and bag_redelivery,
            f"BagMerge digests per n: {[len(r.bag_digests) for r in rows]}; re-delivery changed "
            f"{total_redeliveries - sum(r.redelivery_bag_unchanged for r in rows)} of {total_redeliveries}",
            bag_digests_per_n=[len(r.bag_digests) for r in rows],
            factorials=[math.factorial(r.n) for r in rows])
        add("C6", "n = 2 canonical render equals one BagMerge order", bool(rows[1].c6_match),
            "equal to one of the 2 orders" if rows[1].c6_match else "equal to neither order")
    add("C8", "greedy decode identical for every permutation",
        all(len(r.canonical_continuations) == 1 for r in rows),
        f"{[len(r.canonical_continuations) for r in rows]} distinct per n; BagMerge at n={full.n}: "
        f"{len({c.tokens for c in full.bag_continuations})} token sequences, "
        f"{len({c.last_logits_sha256 for c in full.bag_continuations})} logits digests",
        spent("decode"), canonical_tokens=[list(next(iter(r.canonical_continuations)).tokens) for r in rows
                          if len(r.canonical_continuations) == 1])

    # C5: the key is exact and totally orders tied fragments
    t = time.perf_counter()
    twin_report = _tie_check(replay)
    key_mismatches = [f.content_id.hex()[:12] for f in [*replay.fragments, twin_report["twin"]]
                      if engine.key(f) != order_key(reference_order_value(f.middle_layer_keys()), f.content_id)]
    add("C5", "order key equals the exact reference", not key_mismatches,
        "all keys bit-exact" if not key_mismatches else f"mismatch: {key_mismatches}",
        order_values=[{"id": f.content_id.hex(), "m": f.order_value.hex()} for f in replay.fragments])
    add("C5", "tied m (head-swapped twin) still orders uniquely", twin_report["ok"], twin_report["figure"],
        time.perf_counter() - t, **{k: v for k, v in twin_report.items() if k not in ("twin", "ok", "figure")})

    # C8: re-encoding reads the model's own frequencies, and matches direct encoding
    t = time.perf_counter()
    model_freqs = [_f64_bits(f) for f in model_inv_freq(lm.model)]
    used = [_f64_bits(float(f)) for f in engine.frequencies(lm.fingerprint)]
    add("C8", "re-encoding uses the model's own rotary frequencies", model_freqs == used,
        f"{sum(a != b for a, b in zip(model_freqs, used))} of {len(used)} frequencies differ from the model's")
    fidelity_rows = _fidelity(replay, settings)
    floor = MIN_COSINE[lm.dtype]
    worst_cos = min(min(r.rope_min_cosine) for r in fidelity_rows)
    worst_err = max(max(r.rope_max_abs_error) for r in fidelity_rows)
    prefill_cos = min(min(r.prefill_min_cosine) for r in fidelity_rows)
    add("C8", f"re-encoding fidelity: min cosine >= {floor} at offsets <= "
        f"{max(r.offset for r in fidelity_rows)}",
        worst_cos >= floor, f"min cosine {worst_cos:.7f}, max abs error {worst_err:.4g} "
        f"(full re-prefill: min cosine {prefill_cos:.7f}, not thresholded)",
        time.perf_counter() - t, rows=[r.to_json() for r in fidelity_rows])
    t = lap("claims_c5_c8", t)

    incremental = _incremental(replay)
    cross_device = _cross_device(replay) if lm.device.type != "cpu" else None
    if cross_device is not None:
        add("C3", "canonical render has the same SHA-256 on CPU and the device", cross_device["equal"],
            f"{lm.device.type} {cross_device['device_digest'][:16]} vs cpu {cross_device['cpu_digest'][:16]}",
            **cross_device)

    tables = [_model_table(lm, settings), _arity_table(rows), _fidelity_table(fidelity_rows)]
    notes = [
        f"weights: {lm.source} ({lm.source_detail})"
        + ("; seeded weights are not real weights: the bit-level claims C3, C6, C7 do not depend on "
           "weight values, the decode figures do" if lm.source == "seeded" else ""),
        f"incremental re-encoding (render of a render) gives {'DIFFERENT' if incremental['differs'] else 'the same'}"
        f" bytes from the flat render ({incremental['key_elements_differing']} key elements differ); "
        "canonmerge always renders flat from stored positions",
    ]
    data = {
        "model": lm.describe(),
        "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items()},
        "engine": engine.name,
        "fragments": [{"agent": r.name, "id": r.fragment.content_id.hex(), "tokens": r.fragment.tokens,
                       "prompt_tokens": len(r.prompt_ids), "latent_steps": r.latent_steps,
                       "m": r.fragment.order_value} for r in runs],
        "canonical_digest_full_set": next(iter(full.canonical_digests)),
        "counts": {"permutations": total_perms, "merge_trees": total_trees,
                   "redeliveries": total_redeliveries},
        "incremental": incremental,
        "cross_device": cross_device,
        "timings_s": {**timings, "total": round(time.perf_counter() - started, 3)},
    }
    return PartReport("realstate", results, tables, data, notes)


def _tie_check(replay: Replay) -> dict[str, Any]:
    """A real fragment and its head-swapped twin tie on m; the key must still order them.

    The sort is driven directly with every input order (a set's own iteration order must not
    be what makes the render deterministic), and the render is checked over every arrival order."""
    base = replay.fragments[0]
    twin = head_swapped_twin(base)
    tie = _f64_bits(twin.order_value) == _f64_bits(base.order_value)
    distinct = twin.content_id != base.content_id
    members = [base, twin, *replay.fragments[1:3]]
    perms = list(itertools.permutations(members))
    orders = {tuple(f.content_id for f in replay.engine.order(list(p))) for p in perms}
    digests = {canonical_render(replay.state_of(p), engine=replay.engine).digest() for p in perms}
    ok = tie and distinct and len(orders) == 1 and len(digests) == 1
    figure = (f"m equal: {tie}, ids differ: {distinct}; over {len(perms)} input orders: "
              f"{len(orders)} sort result(s), {len(digests)} render digest(s)")
    return {"twin": twin, "ok": ok, "figure": figure, "m_equal": tie, "ids_differ": distinct,
            "sort_results": len(orders), "digests": len(digests)}


def _fidelity(replay: Replay, settings: ReplaySettings) -> list[FidelityRow]:
    ordered = replay.engine.order(replay.fragments)
    placed = {p.fragment.content_id: p.offset for p in layout(ordered)}
    rows: list[FidelityRow] = []
    for i, run in enumerate(replay.runs):
        limit = run.fragment.fingerprint.max_positions - run.fragment.tokens
        offsets = sorted({placed[run.fragment.content_id], *(min(o, limit) for o in settings.fidelity_offsets)})
        rows.extend(fidelity(replay.lm, run, offsets, replay.engine))
        replay.progress("realstate: fidelity", i + 1, len(replay.runs))
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


def _cross_device(replay: Replay) -> dict[str, Any]:
    device_digest = canonical_render(replay.fragments, engine=replay.engine).digest()
    cpu_digest = canonical_render([f.to("cpu") for f in replay.fragments], engine=replay.engine).digest()
    return {"equal": device_digest == cpu_digest, "device_digest": device_digest, "cpu_digest": cpu_digest}


def _row_json(r: ArityRow) -> dict[str, Any]:
    return {"n": r.n, "permutations": r.permutations, "canonical_digests": sorted(r.canonical_digests),
            "bag_digests": len(r.bag_digests), "trees": r.trees, "tree_digests": len(r.tree_digests),
            "redeliveries": r.redeliveries, "redelivery_canonical_changed": r.redelivery_canonical_changed,
            "redelivery_bag_unchanged": r.redelivery_bag_unchanged,
            "canonical_continuations": len(r.canonical_continuations),
            "bag_continuations": len(r.bag_continuations), "c6_match": r.c6_match}


def _model_table(lm: LoadedModel, settings: ReplaySettings) -> Table:
    d = lm.describe()
    rows = [[k, str(v)] for k, v in d.items()]
    rows.append(["agents / latent steps", f"{settings.agents} / {settings.latent_steps}"])
    return Table("realstate: model", ["field", "value"], rows)


def _arity_table(rows: list[ArityRow]) -> Table:
    table = Table("realstate: per arity", ["n", "perms", "canonical digests", "BagMerge digests", "trees",
                                           "tree digests", "re-deliveries (canon changed / bag unchanged)",
                                           "decodes canonical / BagMerge", "canonical digest"])
    for r in rows:
        table.rows.append([str(r.n), str(r.permutations), str(len(r.canonical_digests)), str(len(r.bag_digests)),
                           str(r.trees), str(len(r.tree_digests)),
                           f"{r.redeliveries} ({r.redelivery_canonical_changed} / {r.redelivery_bag_unchanged})",
                           f"{len(r.canonical_continuations)} / "
                           f"{len(r.bag_continuations) if r.bag_continuations else '-'}",
                           (next(iter(r.canonical_digests))[:16] if len(r.canonical_digests) == 1 else "MANY")])
    return table


def _fidelity_table(rows: list[FidelityRow]) -> Table:
    table = Table("realstate: re-encoding fidelity (C8), worst over agents and layers",
                  ["offset", "agents", "rope: max abs error", "rope: min cosine", "full re-prefill: min cosine"])
    by_offset: dict[int, list[FidelityRow]] = {}
    for r in rows:
        by_offset.setdefault(r.offset, []).append(r)
    for offset, group in sorted(by_offset.items()):
        table.rows.append([str(offset), ",".join(r.agent for r in group),
                           f"{max(max(r.rope_max_abs_error) for r in group):.4g}",
                           f"{min(min(r.rope_min_cosine) for r in group):.7f}",
                           f"{min(min(r.prefill_min_cosine) for r in group):.7f}"])
    return table
