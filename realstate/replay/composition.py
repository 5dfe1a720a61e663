"""The replay's checks of composition (C9): every schedule of one set composes one render, one
selection and one answer; the two gates that tie composition to what is already trusted (nothing
recomputed is CanonicalMerge, everything recomputed is one prefill); and the control that shows
an arrival-order selection is seen.

Schedules come from modelcheck's enumerators (``modelcheck.schedules``), states are built through
the engine's collection and merge as replicas build them (``realstate.evidence.checker_backend``'s
evaluation), and the replay's iteration order (``arrival`` by default) is in force, so a
composition that read the order fragments arrived in would see a different one per schedule."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from modelcheck import schedules as en
from realstate.composition.compose import Composed, compose_render
from realstate.composition.ranking import CANONICAL_SELECTOR, Selector
from realstate.composition.settings import ComposeSettings
from realstate.evidence.planted import selector_named
from realstate.kernel.adapter import tensors_from_cache
from realstate.kernel.dtypes import raw_bits
from realstate.kernel.fragment import Fragment, fragment_set
from realstate.kernel.render import canonical_merge
from realstate.models.agents import run_agent
from realstate.models.continuation import Continuation, greedy_continue_many
from realstate.replay import properties as P
from realstate.replay.context import Replay
from spec import Check, ClaimResult, Outcome, exit_code_for, no_progress
from spec.fragment_set import iteration_order, reseed_shuffle

ORDERS_NEED = "one fragment has one schedule (needs at least 2 agents)"


@dataclass
class Composition:
    """What the composition checks found, per arity n (kept on the replay for the JSON)."""

    settings: ComposeSettings
    top: int  # the full set's arity: the only one whose schedules are decoded
    schedules: int = 0
    per_kind: dict[str, int] = field(default_factory=dict)
    digests: dict[int, set[str]] = field(default_factory=dict)
    selections: dict[int, set[tuple[int, ...]]] = field(default_factory=dict)
    answers: set[Continuation] = field(default_factory=set)
    first_steps: set[str] = field(default_factory=set)
    decoded: int = 0  # the full set's schedules decoded

    def record(self, n: int, kind: str, composed: Composed) -> None:
        self.schedules += 1
        self.per_kind[kind] = self.per_kind.get(kind, 0) + 1
        self.digests.setdefault(n, set()).add(composed.digest())
        self.selections.setdefault(n, set()).add(tuple(composed.selected))

    def to_json(self) -> dict[str, Any]:
        return {"settings": dict(self.settings.__dict__), "schedules": self.schedules, "per_kind": self.per_kind,
                "per_arity": [{"n": n, "digests": sorted(self.digests[n]),
                               "selected_positions": sorted(list(s) for s in self.selections[n])}
                              for n in sorted(self.digests)],
                "answers": sorted([list(a.tokens), a.last_logits_sha256] for a in self.answers),
                "first_step_logits": sorted(self.first_steps)}


def _evaluate(r: Replay, expr: en.Expr, copies: dict[tuple[int, int], Fragment]) -> Any:
    """The state a replica reaches by ``expr`` (a re-delivered copy is a distinct object)."""
    if isinstance(expr, en.Leaf):
        key = (expr.index, expr.copy)
        if key not in copies:
            first = r.fragments[expr.index]
            copies[key] = first if expr.copy == 0 else first.copy()
        return r.engine.collect([copies[key]])
    return _evaluate(r, expr.left, copies).merge(_evaluate(r, expr.right, copies))


def schedules(n: int) -> Iterator[tuple[str, en.Expr]]:
    """(kind, schedule) over fragments 0..n-1: every permutation; every merge tree over the index
    order and over its reverse; every single re-delivery of fragment i after its first arrival in
    the index order; the n rotations of the index order (a subset of the permutations, for the
    control)."""
    for expr in en.permutations(n):
        yield "permutations", expr
    for order in (list(range(n)), list(range(n))[::-1]):
        for expr in en.tree_shapes([en.Leaf(i) for i in order]):
            yield "merge trees", expr
    for i in range(n):
        for at in range(i + 1, n + 1):
            sequence = list(range(n))
            sequence.insert(at, i)
            yield "re-deliveries", en.sequence(sequence)
    for first in range(n):  # the control's schedules: n arrival orders, each fragment arriving first once
        yield "rotations", en.sequence([*range(first, n), *range(first)])


ALL_KINDS = ("permutations", "merge trees", "re-deliveries")


def composed_schedules(r: Replay, n: int, settings: ComposeSettings, selector: Selector,
                       kinds: Sequence[str] = ALL_KINDS) -> Iterator[tuple[str, Composed]]:
    """Each schedule's state composed, one call per state (never memoised by set)."""
    for kind, expr in schedules(n):
        if kind not in kinds or (kind not in ("permutations", "rotations") and n < len(r.fragments)):
            continue
        reseed_shuffle(en.render_expr(expr))  # a schedule sees the same shuffles wherever it is replayed
        state = _evaluate(r, expr, {})
        yield kind, compose_render(state, r.lm, settings, selector, r.engine)


def decode_composed(r: Replay, composed: Iterable[Composed], total: int) -> Iterator[tuple[Continuation, str]]:
    """Each composed render's greedy answer and first-step logits digest, in batches of one row
    count (``Replay.decode_rows``); the last batch filled up with copies of its first render."""
    batch: list[Composed] = []
    rows = 0

    def flush(items: list[Composed], keep: int) -> list[tuple[Continuation, str]]:
        keys, values = [c.keys for c in items], [c.values for c in items]
        answers = greedy_continue_many(r.lm, keys, values, r.final_prompt, r.settings.decode_tokens)
        firsts = greedy_continue_many(r.lm, keys, values, r.final_prompt, 1)
        return list(zip(answers, (f.last_logits_sha256 for f in firsts)))[:keep]

    for c in composed:
        rows = rows or r.decode_rows(c.as_rendered(), total)
        batch.append(c)
        if len(batch) == rows:
            yield from flush(batch, rows)
            batch = []
    if batch:
        yield from flush(batch + [batch[0]] * (rows - len(batch)), len(batch))


def run_composition(r: Replay, settings: ComposeSettings, selector: Selector = CANONICAL_SELECTOR,
                    decode: bool = True, arities: Sequence[int] | None = None,
                    kinds: Sequence[str] = ALL_KINDS) -> Composition:
    """Every schedule of every arity in ``arities`` (default 2..N) composed and recorded; the full
    set's also decoded where ``decode``."""
    top = len(r.fragments)
    found = Composition(settings, top)
    for n in arities or range(2, top + 1):
        def each(n: int = n) -> Iterator[Composed]:
            for kind, composed in composed_schedules(r, n, settings, selector, kinds):
                found.record(n, kind, composed)
                yield composed

        if decode and n == top:
            total = sum(1 for kind, _ in schedules(n) if kind in kinds)
            for answer, first in decode_composed(r, each(), total):
                found.answers.add(answer)
                found.first_steps.add(first)
                found.decoded += 1
        else:
            for _ in each():
                pass
        r.progress("realstate: composition", n, top)
    return found


def c9_orders(r: Replay) -> ClaimResult:
    """One composed digest and one selection per arity over every schedule."""
    started = time.perf_counter()
    if len(r.fragments) < 2:
        return P.COMPOSE_ORDERS.not_applicable(ORDERS_NEED)
    found = r.composition = run_composition(r, r.settings.composition)
    return orders_row(P.COMPOSE_ORDERS, found, range(2, len(r.fragments) + 1), time.perf_counter() - started)


def orders_row(check: Check, found: Composition, arities: Sequence[int], seconds: float) -> ClaimResult:
    """The row: an arity whose schedules composed to several digests or selections (or to none) is
    a violation."""
    digests = [len(found.digests.get(n, ())) for n in arities]
    selections = [len(found.selections.get(n, ())) for n in arities]
    bad = sum(d != 1 or s != 1 for d, s in zip(digests, selections))
    shown = ", ".join(f"{v} {k}" for k, v in found.per_kind.items())
    chosen = next(iter(found.selections.get(found.top, ())), ())
    s = found.settings
    return check.tally(len(digests), bad, "arities", seconds,
                       figure=f"digests per n {digests}, selections per n {selections} over {found.schedules} "
                              f"schedules ({shown}); the full set re-runs {len(chosen)} tokens "
                              f"(r={s.recompute:g}, s={s.anchors}, c={s.layers})",
                       composition=found.to_json())


def c9_decode(r: Replay) -> ClaimResult:
    """One greedy answer and one first-step logits digest over every full-set schedule."""
    started = time.perf_counter()
    if len(r.fragments) < 2:
        return P.COMPOSE_DECODE.not_applicable(ORDERS_NEED)
    found = r.composition
    if found is None or found.settings != r.settings.composition or not found.answers:
        found = r.composition = run_composition(r, r.settings.composition)
    answers, firsts = len(found.answers), len(found.first_steps)
    said = f"decodes {r.text(next(iter(found.answers)))}" if answers == 1 else f"{answers} different answers"
    if not found.decoded:
        return P.COMPOSE_DECODE.tally(0, 0, "figures (answer, first-step logits)", time.perf_counter() - started)
    return P.COMPOSE_DECODE.tally(2, (answers != 1) + (firsts != 1), "figures (answer, first-step logits)",
                                  time.perf_counter() - started,
                                  figure=f"{said}, {firsts} first-step logits digest(s) over the "
                                         f"{found.decoded} schedules "
                                         f"of n={found.top}",
                                  answers=[list(a.tokens) for a in found.answers],
                                  first_step_logits=sorted(found.first_steps))


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.equal(raw_bits(a.cpu()), raw_bits(b.cpu()))


def c9_gate_zero(r: Replay) -> ClaimResult:
    """r = 0, s = 0: the composed bytes of the first n fragments are canonical_merge's, every n."""
    started = time.perf_counter()
    zero = replace(r.settings.composition, recompute=0.0, anchors=0)
    differ = 0
    for n in r.arities:
        state = r.state_of(r.fragments[:n])
        composed = compose_render(state, r.lm, zero, engine=r.engine)
        keys, values = tensors_from_cache(canonical_merge(state), r.lm.fingerprint.layers)
        differ += bool(composed.selected) or not (_bits_equal(composed.keys, keys)
                                                   and _bits_equal(composed.values, values))
    return P.COMPOSE_GATE_ZERO.tally(len(r.fragments), differ, "arities", time.perf_counter() - started,
                                     figure=f"{differ} of {len(r.fragments)} arities differ from canonical_merge")


def _prefill(r: Replay, **inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One prefill at positions 0.. through the model's own forward, as an agent prefills."""
    from transformers import DynamicCache

    tokens = next(iter(inputs.values())).shape[1]
    cache = DynamicCache()
    with torch.no_grad():
        r.lm.decoder(position_ids=torch.arange(tokens, device=r.lm.device).unsqueeze(0), cache=cache,
                     use_cache=True, **inputs)
    return tensors_from_cache(cache, r.lm.fingerprint.layers)


def c9_gate_full(r: Replay) -> ClaimResult:
    """r = 1: the composed bytes are one prefill's, for text-only agents (the same prompts with
    no latent steps; the prefill takes the canonical token ids) and for the replay's own agents
    (the prefill takes the canonical sequence of their inputs, fed-back hidden states included)."""
    started = time.perf_counter()
    full = replace(r.settings.composition, recompute=1.0)
    text = [run_agent(r.lm, run.name, run.prompt_ids, 0, 0, keep_inputs=True) for run in r.runs]
    by_id = {run.fragment.content_id: run for run in text}
    cases = []
    composed = compose_render(fragment_set([t.fragment for t in text]), r.lm, full, engine=r.engine)
    ids = [t for p in composed.layout for t in by_id[p.fragment.content_id].prompt_ids]
    cases.append(("text-only, input ids", composed,
                  _prefill(r, input_ids=torch.tensor([ids], device=r.lm.device))))
    if r.settings.latent_steps:
        composed = compose_render(r.state_of(r.fragments), r.lm, full, engine=r.engine)
        inputs = torch.cat([p.fragment.inputs for p in composed.layout]).unsqueeze(0).to(r.lm.device)
        cases.append(("latent agents, inputs", composed, _prefill(r, inputs_embeds=inputs)))
    differ = [name for name, c, (k, v) in cases
              if len(c.selected) != c.tokens or not (_bits_equal(c.keys, k) and _bits_equal(c.values, v))]
    return P.COMPOSE_GATE_FULL.tally(len(cases), len(differ), "prefills", time.perf_counter() - started,
                                     figure=(f"byte-identical to one prefill: {', '.join(n for n, _, _ in cases)}"
                                             if not differ else f"DIFFER from one prefill: {', '.join(differ)}"),
                                     digests={n: c.digest() for n, c, _ in cases})


def control_compose(r: Replay) -> ClaimResult:
    """Negative control: the composition check, on the same fragments with the planted selection
    that anchors by arrival (anchors at least 1, decodes skipped), over the n arrival orders that
    each put another fragment first, must fail with exit code 1.  The states iterate in arrival
    order here whatever ``--iteration`` says: in id order the planted bug would read the set."""
    started = time.perf_counter()
    if len(r.fragments) < 2:
        return P.CONTROL_COMPOSE.not_applicable("an arrival-order selection cannot misorder one fragment "
                                                "(needs at least 2 agents)")
    settings = replace(r.settings.composition, anchors=max(1, r.settings.composition.anchors))
    control = Replay(r.lm, r.runs, r.settings, r.engine, no_progress)
    top = len(r.fragments)
    with iteration_order("arrival"):  # the bug reads arrival order: states must iterate in it
        found = run_composition(control, settings, selector_named("select-by-arrival"), decode=False,
                                arities=(top,), kinds=("rotations",))
    inner = orders_row(P.COMPOSE_ORDERS, found, (top,), time.perf_counter() - started)
    caught = inner.outcome is Outcome.FAILS and exit_code_for([inner]) == 1
    return P.CONTROL_COMPOSE.holds_if(caught, f"select-by-arrival: {inner.outcome.value}, exit "
                                      f"{exit_code_for([inner])} ({inner.figure})", time.perf_counter() - started)

