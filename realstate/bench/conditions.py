"""Every condition of one problem at one latent budget, built from the SAME per-agent fragments
(computed once per problem: the fragments are the state), decoded in one batch.

Rows: BagMerge in each of the k! input orders; CanonicalMerge fed each of the k! input orders
(answer uniqueness is checked on these, not inferred from the digests); naive concatenation in
arrival order; each agent alone (its own cache at its own positions); the causal-audit controls
in the CanonicalMerge layout; and, in the 0-step regime, the text-level references: all documents
in one prompt in the CanonicalMerge order, no context, and PackLLM's separately prompted contexts.
Re-delivery is checked on bytes and states (it must change nothing, so it is not decoded)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from realstate.bench import controls
from realstate.bench.decoding import BatchResult, Row, decode_rows, empty_context
from realstate.bench.problems import Problem
from realstate.bench.prompts import TextCodec
from realstate.bench.scoring import answer_text, is_correct
from realstate.kernel.engine import Engine
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import Placement, Rendered, bag_render, canonical_render, naive_render, render_layout
from realstate.models.loaded import LoadedModel

PACKLLM = "packllm"


def order_name(order: Sequence[int]) -> str:
    return "bag[" + ",".join(map(str, order)) + "]"


@dataclass
class Cell:
    """One problem at one latent budget: its fragments (agent order) and what the decode found."""

    problem: Problem
    latent_steps: int
    fragments: list[Fragment]
    record: dict[str, Any] = field(default_factory=dict)


# what a re-delivery of one fragment appends to the arrivals (a copy; a canary appends other things)
Redeliver = Callable[[Fragment], list[Fragment]]


def redeliver_copy(fragment: Fragment) -> list[Fragment]:
    return [fragment.copy()]


@dataclass(frozen=True)
class Plan:
    """What a cell renders: the input orders (agent indices), what each re-delivery appends, and
    whether the non-structural rows (naive, alone, controls, references) are decoded too.  A real
    cell renders all k! orders (``None``); the canaries (``realstate.bench.canaries``) feed
    others through the same pipeline."""

    orders: tuple[tuple[int, ...], ...] | None = None
    redeliver: Redeliver = redeliver_copy
    full: bool = True

    def orders_for(self, k: int) -> list[tuple[int, ...]]:
        return list(itertools.permutations(range(k))) if self.orders is None else list(self.orders)


ALL_ORDERS = Plan()


@dataclass
class Structure:
    """The byte- and state-level facts of a cell (claim evidence, not accuracy), as measured: the
    renders' digests and the orders actually fed to them, never a verdict computed here."""

    orders_rendered: int  # distinct input orders fed to the renders, each a permutation of the cell's fragments
    canonical_digests: list[str]  # per input order fed
    bag_digests: list[str]
    redelivery_digests: list[str]  # CanonicalMerge of the first order's arrivals plus one re-delivery, per fragment
    redelivery_layouts: list[list[int]]  # where each of those renders put the fragments (agent indices)
    redelivery_bag_digests: list[str]
    redeliveries_rendered: int  # fragments whose re-delivery was rendered
    redelivery_state_unchanged: bool
    layout: list[int]  # agent indices in the CanonicalMerge order


def _same_ids(a: Any, b: Any) -> bool:
    ids_a, ids_b = [f.content_id for f in a], [f.content_id for f in b]
    return len(ids_a) == len(ids_b) and sorted(ids_a) == sorted(ids_b)


def _orders_fed(fragments: list[Fragment], inputs: list[list[Fragment]]) -> int:
    """How many distinct input orders were fed, counting only those that are permutations of the
    cell's fragments: a count of what was rendered, not of the loop that meant to render it."""
    members = sorted(f.content_id for f in fragments)
    return len({tuple(f.content_id for f in fed) for fed in inputs if sorted(f.content_id for f in fed) == members})


def structure_of(fragments: list[Fragment], engine: Engine, orders: list[tuple[int, ...]],
                 redeliver: Redeliver = redeliver_copy) -> tuple[Structure, list[list[Fragment]], list[Rendered],
                                                                 list[Rendered]]:
    inputs = [[fragments[i] for i in o] for o in orders]
    canonical = [canonical_render(fed, engine=engine) for fed in inputs]
    bags = [bag_render(fed) for fed in inputs]
    by_id = {f.content_id: i for i, f in enumerate(fragments)}
    first = inputs[0]
    redelivered, layouts, bag_redelivered, rendered = [], [], [], 0
    for j in range(len(fragments)):
        extra = redeliver(fragments[j])
        rendered += bool(extra)
        again = canonical_render([*first, *extra], engine=engine)
        redelivered.append(again.digest())
        layouts.append([by_id.get(p.fragment.content_id, -1) for p in again.layout])
        bag_redelivered.append(bag_render([*first, *extra]).digest())
    state = engine.collect(fragments)
    absorbed = all(_same_ids(state.merge(engine.collect(redeliver(f))), state) for f in fragments)
    layout = [by_id.get(p.fragment.content_id, -1) for p in canonical[0].layout]
    return (Structure(_orders_fed(fragments, inputs), [r.digest() for r in canonical], [r.digest() for r in bags],
                      redelivered, layouts, bag_redelivered, rendered, absorbed, layout), inputs, canonical, bags)


@dataclass
class ControlSet:
    rows: list[Row]
    info: dict[str, Any]


def control_rows(cell: Cell, canonical: Rendered, engine: Engine, donors: dict[int, controls.Donor | None],
                 seed: int) -> ControlSet:
    """The three controls in the CanonicalMerge layout, each checked against its definition."""
    index = {f.content_id: i for i, f in enumerate(cell.fragments)}
    placements = canonical.layout
    problem = cell.problem
    zero = {}
    noise = {}
    for p in placements:
        i = index[p.fragment.content_id]
        zero[i] = controls.zeroed(p.fragment)
        controls.check_zeroed(p.fragment, zero[i])
        noise[i] = controls.moment_matched(p.fragment, controls.control_seed(seed, problem.id, i, cell.latent_steps))
        controls.check_moment_matched(p.fragment, noise[i])

    def swapped(replacement: dict[int, Fragment]) -> Rendered:
        moved = [Placement(replacement[index[p.fragment.content_id]], p.offset) for p in placements]
        return render_layout(moved, canonical.base, engine)

    rows = [_row("zeroed", swapped(zero)), _row("moment-matched", swapped(noise))]
    info: dict[str, Any] = {"deranged_donors": {}}
    if all(donors.get(i) is not None for i in range(len(cell.fragments))):
        deranged = {}
        for i, donor in donors.items():
            assert donor is not None
            controls.check_deranged(cell.fragments[i], donor.fragment, problem.id, problem.family,
                                    donor.problem, problem.family)
            deranged[i] = donor.fragment
            info["deranged_donors"][str(i)] = {"problem": donor.problem, "agent": donor.agent,
                                               "donor_tokens": donor.tokens, "match": donor.match}
        rows.append(_row("deranged", swapped(deranged)))
    else:
        info["deranged_donors"] = None  # no donor at least as long for some fragment: control skipped
    return ControlSet(rows, info)


def _row(condition: str, rendered: Rendered, group: str | None = None) -> Row:
    return Row(condition, rendered.keys, rendered.values, group)


@dataclass
class References:
    """The 0-step text-level references of a problem (computed once, decoded in the 0-step cell)."""

    full_prompt: Fragment  # all documents in one prompt, CanonicalMerge order
    text_fragments: list[Fragment]  # each agent's 0-step fragment (PackLLM's contexts)


def cell_rows(lm: LoadedModel, cell: Cell, engine: Engine, donors: dict[int, controls.Donor | None], seed: int,
              references: References | None, plan: Plan = ALL_ORDERS) -> tuple[list[Row], Structure, dict[str, Any]]:
    """Every row of a cell.  A CanonicalMerge row is named by the order it was actually fed (agent
    indices of the fragments passed to the render), so the decoded orders are counted from what ran."""
    k = len(cell.fragments)
    orders = plan.orders_for(k)
    structure, inputs, canonical, bags = structure_of(cell.fragments, engine, orders, plan.redeliver)
    index = {f.content_id: i for i, f in enumerate(cell.fragments)}
    rows = [_row(order_name(o), r) for o, r in zip(orders, bags)]
    rows += [_row(f"canonical<{','.join(str(index[f.content_id]) for f in fed)}>", r)
             for fed, r in zip(inputs, canonical)]
    if not plan.full:
        return rows, structure, {"deranged_donors": None}
    rows.append(_row("naive", naive_render(cell.fragments)))
    rows += [Row(f"alone[{i}]", f.keys, f.values) for i, f in enumerate(cell.fragments)]
    control_set = control_rows(cell, canonical[0], engine, donors, seed)
    rows += control_set.rows
    if references is not None:
        rows.append(Row("full-prompt", references.full_prompt.keys, references.full_prompt.values))
        rows.append(Row("no-context", *empty_context(lm)))
        rows += [Row(f"{PACKLLM}[{i}]", f.keys, f.values, group=PACKLLM)
                 for i, f in enumerate(references.text_fragments)]
    return rows, structure, control_set.info


def decode_cell(lm: LoadedModel, codec: TextCodec, cell: Cell, engine: Engine,
                donors: dict[int, controls.Donor | None], seed: int, references: References | None,
                max_new_tokens: int, plan: Plan = ALL_ORDERS) -> tuple[Structure, BatchResult, list[Row]]:
    rows, structure, info = cell_rows(lm, cell, engine, donors, seed, references, plan)
    prompt = codec.encode(codec.final_text(cell.problem))
    result = decode_rows(lm, codec, rows, prompt, max_new_tokens)
    cell.record = assemble(cell, rows, result, structure, info, len(prompt))
    return structure, result, rows


def assemble(cell: Cell, rows: list[Row], result: BatchResult, structure: Structure, info: dict[str, Any],
             prompt_tokens: int) -> dict[str, Any]:
    """The cell's JSON record: per condition the answer and whether it is right, plus structure."""
    golds = cell.problem.golds()
    answers: dict[str, dict[str, Any]] = {}
    canonical_answers: set[tuple[int, ...]] = set()
    canonical_logits: set[str] = set()
    canonical_rows = [row.condition for row in rows if row.condition.startswith("canonical<")]
    canonical_orders = set(canonical_rows)  # rows are named by the order they were fed
    for row, decoded in zip(rows, result.rows):
        if row.condition.startswith("canonical<"):
            canonical_answers.add(decoded.tokens)
            canonical_logits.add(decoded.first_logits_sha256)
            if row.condition != "canonical<" + ",".join(map(str, range(len(cell.fragments)))) + ">":
                continue  # the identity-order row stands for CanonicalMerge in the accuracy tables
            name = "canonical"
        elif row.group == PACKLLM:
            name = PACKLLM  # every row of the group carries the same fused answer
        else:
            name = row.condition
        answers[name] = {"answer": answer_text(decoded.text), "correct": is_correct(decoded.text, golds)}
    fusion = result.fusions.get(PACKLLM)
    return {
        "problem": cell.problem.id, "family": cell.problem.family, "k": len(cell.fragments),
        "latent_steps": cell.latent_steps, "context_tokens": max(r.tokens for r in rows),
        "fragment_tokens": [f.tokens for f in cell.fragments], "prompt_tokens": prompt_tokens,
        "batch_rows": len(rows), "decode_steps": result.steps, "answers": answers,
        "canonical_orders": {"orders": len(canonical_orders), "rows": len(canonical_rows),
                             "distinct_answers": len(canonical_answers),
                             "distinct_first_logits": len(canonical_logits)},
        "structure": {"canonical_layout": structure.layout,
                      "orders_rendered": structure.orders_rendered,
                      "canonical_digest": structure.canonical_digests[0],
                      "canonical_distinct_digests": len(set(structure.canonical_digests)),
                      "bag_digest": structure.bag_digests[0],
                      "bag_distinct_digests": len(set(structure.bag_digests)),
                      "redeliveries_rendered": structure.redeliveries_rendered,
                      "redelivery_digests": structure.redelivery_digests,
                      "redelivery_layouts": structure.redelivery_layouts,
                      "redelivery_bag_digests": structure.redelivery_bag_digests,
                      "redelivery_state_unchanged": structure.redelivery_state_unchanged},
        "controls": info,
        "packllm": None if fusion is None else {"log_perplexity": [round(x, 6) for x in fusion.log_perplexities],
                                                "weights": [round(w, 6) for w in fusion.weights]},
    }
