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
from collections.abc import Sequence
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


@dataclass
class Structure:
    """The byte- and state-level facts of a cell (claim evidence, not accuracy)."""

    canonical_digests: set[str]
    bag_digests: set[str]
    redelivery_canonical_equal: bool
    redelivery_state_unchanged: bool
    redelivery_bag_changed: bool
    layout: list[int]  # agent indices in the CanonicalMerge order


def _same_ids(a: Any, b: Any) -> bool:
    ids_a, ids_b = [f.content_id for f in a], [f.content_id for f in b]
    return len(ids_a) == len(ids_b) and sorted(ids_a) == sorted(ids_b)


def structure_of(fragments: list[Fragment], engine: Engine,
                 orders: list[tuple[int, ...]]) -> tuple[Structure, list[Rendered], list[Rendered]]:
    canonical = [canonical_render([fragments[i] for i in o], engine=engine) for o in orders]
    bags = [bag_render([fragments[i] for i in o]) for o in orders]
    reference = canonical[0].digest()
    redelivered = all(canonical_render([*fragments, fragments[j].copy()], engine=engine).digest() == reference
                      for j in range(len(fragments)))
    state = engine.collect(fragments)
    absorbed = all(_same_ids(state.merge(engine.collect([fragments[j].copy()])), state)
                   for j in range(len(fragments)))
    bag_changed = all(bag_render([*fragments, fragments[j].copy()]).digest() != bags[0].digest()
                      for j in range(len(fragments)))
    by_id = {f.content_id: i for i, f in enumerate(fragments)}
    layout = [by_id.get(p.fragment.content_id, -1) for p in canonical[0].layout]
    return (Structure({r.digest() for r in canonical}, {r.digest() for r in bags}, redelivered, absorbed,
                      bag_changed, layout), canonical, bags)


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
              references: References | None) -> tuple[list[Row], Structure, dict[str, Any]]:
    k = len(cell.fragments)
    orders = list(itertools.permutations(range(k)))
    structure, canonical, bags = structure_of(cell.fragments, engine, orders)
    rows = [_row(order_name(o), r) for o, r in zip(orders, bags)]
    rows += [_row(f"canonical<{','.join(map(str, o))}>", r) for o, r in zip(orders, canonical)]
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
                max_new_tokens: int) -> tuple[Structure, BatchResult, list[Row]]:
    rows, structure, info = cell_rows(lm, cell, engine, donors, seed, references)
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
        "canonical_orders": {"orders": sum(1 for r in rows if r.condition.startswith("canonical<")),
                             "distinct_answers": len(canonical_answers),
                             "distinct_first_logits": len(canonical_logits)},
        "structure": {"canonical_layout": structure.layout,
                      "canonical_digest": sorted(structure.canonical_digests)[0],
                      "canonical_distinct_digests": len(structure.canonical_digests),
                      "bag_distinct_digests": len(structure.bag_digests),
                      "redelivery_canonical_equal": structure.redelivery_canonical_equal,
                      "redelivery_state_unchanged": structure.redelivery_state_unchanged,
                      "redelivery_bag_changed": structure.redelivery_bag_changed},
        "controls": info,
        "packllm": None if fusion is None else {"log_perplexity": [round(x, 6) for x in fusion.log_perplexities],
                                                "weights": [round(w, 6) for w in fusion.weights]},
    }
