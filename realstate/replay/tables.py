"""The replay's human tables and per-arity JSON.  Nothing here decides a result."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from realstate.models.continuation import Continuation
from realstate.models.loaded import LoadedModel
from realstate.replay.activations import LayerActivations
from realstate.replay.context import ArityRow, Replay
from realstate.replay.fidelity import FidelityRow
from realstate.replay.settings import ReplaySettings
from spec import (
    Table,
)


def row_json(r: ArityRow) -> dict[str, Any]:
    return {"n": r.n, "permutations": r.permutations, "canonical_digests": sorted(r.canonical_digests),
            "bag_digests": r.bag_digests, "trees": r.trees, "tree_digests": len(r.tree_digests),
            "redeliveries": r.redeliveries, "redelivery_canonical_changed": r.redelivery_canonical_changed,
            "bag_redeliveries": r.bag_redeliveries, "redelivery_bag_changed": r.redelivery_bag_changed,
            "canonical_continuations": len(r.canonical_continuations),
            "bag_continuations": len(r.bag_continuations), "c6_match": r.c6_match}


def model_table(lm: LoadedModel, settings: ReplaySettings) -> Table:
    d = lm.describe()
    rows = [[k, str(v)] for k, v in d.items()]
    rows.append(["agents / latent steps", f"{settings.agents} / {settings.latent_steps}"])
    return Table("realstate: model", ["field", "value"], rows)


def arity_table(rows: list[ArityRow]) -> Table:
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


def decodes_json(r: Replay) -> list[dict[str, Any]]:
    """Per arity, every distinct decode with its text and how many delivery orders gave it."""
    def listed(decodes: Counter[Continuation]) -> list[dict[str, Any]]:
        return [{"tokens": list(c.tokens), "text": r.text(c), "last_logits_sha256": c.last_logits_sha256,
                 "orders": count} for c, count in decodes.most_common()]

    return [{"n": x.n, "orders": sum(x.canonical_continuations.values()), "question": r.question,
             "final_prompt_tokens": len(r.final_prompt), "canonical": listed(x.canonical_continuations),
             "bagmerge": listed(x.bag_continuations)} for x in (r.rows[n] for n in r.arities)]


DECODES_SHOWN = 6  # distinct BagMerge continuations listed in the table (all are in --json)


def decodes_table(r: Replay) -> Table:
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


def activations_table(rows: list[LayerActivations], key_layer: int) -> Table:
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


def fidelity_table(rows: list[FidelityRow]) -> Table:
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
