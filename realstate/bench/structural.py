"""The benchmark's structural guarantees as claim evidence (``spec.ClaimResult``, part "realstate").

Accuracy is data; these are not estimated: every cell is checked, and one counterexample fails
the row.  Each row names the claim it supports, and counts what was actually rendered and decoded
beside its closed form (k! input orders and k single re-deliveries per cell of k fragments): a
cell short of its count fails the row, since "every order" was then not checked.

- C8 — CanonicalMerge, fed every one of the k! input orders, decodes ONE answer per problem and
  budget (identical greedy tokens and identical first-step logits bytes; decoded, not inferred);
- C3 — CanonicalMerge renders one digest over all k! input orders, and the same digest (compared
  as bytes: SHA-256 of the render, never as content ids) with any one fragment re-delivered;
- C2 — merging a re-delivered fragment into the state leaves its set of content ids unchanged;
- C4 — BagMerge's input orders give different bytes (a witness), and a re-delivery changes them.

The rows' details name each instrument's findings (``INSTRUMENTS``), which is what the canaries
(``realstate.bench.canaries``) read to show that every instrument could see.

Two findings no decoded canary can show on their own are shown, in every call, by synthetic cells
fed through the same rows (``CONTROLS``): answers that differ while the first-step logits agree
(every real order-dependent cell also differs in its logits and digests, which other findings
flag), and a run in which no cell has a BagMerge witness (every real run has witnesses).  Each
control cell is a correct cell but for its one fault; of the rows over it, its row alone must
fail, and that finding alone must name the cell.  A control its row does not flag fails that row in the real results,
its figure starting ``BLIND:``; so does a control a row carries whose cell another row's findings name (that
row's control, which this row's passing would vouch for without having seen it)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from realstate.bench import properties as P
from spec import ClaimResult, Outcome

UNIQUENESS_CHECK = P.BENCH_UNIQUENESS.name
RENDER_CHECK = P.BENCH_RENDER.name
ABSORB_CHECK = P.BENCH_ABSORB.name
BAG_CHECK = P.BENCH_BAG.name

# instrument -> (the row it sits in, the detail listing the cells where it found something)
INSTRUMENTS: dict[str, tuple[str, str]] = {
    "answers over orders": (UNIQUENESS_CHECK, "cells_with_several_logits"),
    "decoded-order coverage": (UNIQUENESS_CHECK, "cells_short_of_k_factorial_decodes"),
    "digests over orders": (RENDER_CHECK, "cells_with_several_digests"),
    "rendered-order coverage": (RENDER_CHECK, "cells_short_of_k_factorial_orders"),
    "re-delivery coverage": (RENDER_CHECK, "cells_short_of_k_redeliveries"),
    "re-delivery bytes": (RENDER_CHECK, "cells_where_redelivery_changed_bytes"),
    "re-delivery absorbed": (ABSORB_CHECK, "cells_not_absorbed"),
    "BagMerge order witness": (BAG_CHECK, "cells_without_order_witness"),
    "BagMerge re-delivery bytes": (BAG_CHECK, "redelivery_unchanged"),
}
SHOWN = 20  # cells listed per finding


def _outcome(ok: bool) -> Outcome:
    return Outcome.HOLDS if ok else Outcome.FAILS


def _name(r: dict[str, Any]) -> str:
    return f"{r['problem']}@L{r['latent_steps']}"


def _cells(records: Sequence[dict[str, Any]], found: Any) -> list[str]:
    return [_name(r) for r in records if found(r)]


def _rows(records: Sequence[dict[str, Any]], model: str, seconds: float) -> list[ClaimResult]:
    cells = len(records)
    if cells == 0:
        return []
    where = f"{cells} problem-budget cells, {model}"
    orders_due = sum(math.factorial(r["k"]) for r in records)  # closed form: k! per cell
    redeliveries_due = sum(r["k"] for r in records)  # one re-delivery of each fragment per cell
    decoded = sum(r["canonical_orders"]["orders"] for r in records)
    rendered = sum(r["structure"]["orders_rendered"] for r in records)
    redelivered = sum(r["structure"]["redeliveries_rendered"] for r in records)
    short_decodes = _cells(records, lambda r: r["canonical_orders"]["orders"] != math.factorial(r["k"]))
    short_orders = _cells(records, lambda r: r["structure"]["orders_rendered"] != math.factorial(r["k"]))
    short_redeliveries = _cells(records, lambda r: r["structure"]["redeliveries_rendered"] != r["k"])
    many_answers = _cells(records, lambda r: r["canonical_orders"]["distinct_answers"] != 1)
    many_logits = _cells(records, lambda r: r["canonical_orders"]["distinct_first_logits"] != 1)
    many_digests = _cells(records, lambda r: r["structure"]["canonical_distinct_digests"] != 1)
    s = "structure"
    redelivery_differs = _cells(records, lambda r: any(d != r[s]["canonical_digest"]
                                                       for d in r[s]["redelivery_digests"]))
    not_absorbed = _cells(records, lambda r: not r[s]["redelivery_state_unchanged"])
    no_witness = _cells(records, lambda r: r[s]["bag_distinct_digests"] < 2)
    bag_unchanged = _cells(records, lambda r: any(d == r[s]["bag_digest"] for d in r[s]["redelivery_bag_digests"])
                           or r[s]["redeliveries_rendered"] == 0)
    decodes = f"{decoded} of Σk! = {orders_due} input orders decoded"
    orders = f"{rendered} of Σk! = {orders_due} input orders rendered"
    copies = f"{redelivered} of Σk = {redeliveries_due} re-deliveries rendered"
    share = seconds / 4
    return [
        P.BENCH_UNIQUENESS.result(
            _outcome(not many_answers and not many_logits and not short_decodes),
            f"{decodes} in {where}: {len(many_answers)} cells with >1 answer, {len(many_logits)} with >1 "
            f"first-step logits, {len(short_decodes)} short of k! orders", share,
            cells=cells, decodes=decoded, decodes_due=orders_due, cells_with_several_answers=many_answers[:SHOWN],
            cells_with_several_logits=many_logits[:SHOWN], cells_short_of_k_factorial_decodes=short_decodes[:SHOWN]),
        P.BENCH_RENDER.result(
            _outcome(not many_digests and not redelivery_differs and not short_orders and not short_redeliveries),
            f"{orders}, {copies} in {where}: {len(many_digests)} with >1 digest, {len(redelivery_differs)} where a "
            f"re-delivery changed the bytes, {len(short_orders) + len(short_redeliveries)} short of their count",
            share, cells=cells, orders_rendered=rendered, orders_due=orders_due, redeliveries_rendered=redelivered,
            redeliveries_due=redeliveries_due, cells_with_several_digests=many_digests[:SHOWN],
            cells_where_redelivery_changed_bytes=redelivery_differs[:SHOWN],
            cells_short_of_k_factorial_orders=short_orders[:SHOWN],
            cells_short_of_k_redeliveries=short_redeliveries[:SHOWN]),
        P.BENCH_ABSORB.result(
            _outcome(not not_absorbed), f"{where}: {len(not_absorbed)} where a re-delivery grew the state", share,
            cells=cells, cells_not_absorbed=not_absorbed[:SHOWN]),
        P.BENCH_BAG.result(
            _outcome(len(no_witness) < cells and not bag_unchanged),
            f"{orders} in {where}: {cells - len(no_witness)} with >1 BagMerge digest; {len(bag_unchanged)} where a "
            "re-delivery left BagMerge's bytes unchanged", share,
            cells=cells, order_witness_cells=cells - len(no_witness), cells_without_order_witness=no_witness[:SHOWN],
            redelivery_unchanged=bag_unchanged[:SHOWN]),
    ]


def _control_cell(name: str) -> dict[str, Any]:
    """A cell of k = 2 fragments with every field a real record has (``conditions.assemble``), as a
    correct run records it: 2! orders decoded and rendered, one answer, one logits, one digest and
    one layout, 2 re-deliveries absorbed byte for byte, BagMerge's two orders and its re-deliveries
    each giving other bytes."""
    layout = ["f0", "f1"]
    return {"problem": f"control: {name}", "latent_steps": 0, "k": 2,
            "canonical_orders": {"orders": 2, "rows": 2, "distinct_answers": 1, "distinct_first_logits": 1},
            "structure": {"canonical_layout": layout, "orders_rendered": 2, "canonical_digest": "c",
                          "canonical_distinct_digests": 1, "bag_digest": "b0", "bag_distinct_digests": 2,
                          "redeliveries_rendered": 2, "redelivery_digests": ["c", "c"],
                          "redelivery_layouts": [layout, layout], "redelivery_bag_digests": ["b1", "b2"],
                          "redelivery_state_unchanged": True}}


def _answers_differ() -> dict[str, Any]:
    cell = _control_cell("answers differ, logits equal")
    cell["canonical_orders"]["distinct_answers"] = 2
    return cell


def _no_witness() -> dict[str, Any]:
    cell = _control_cell("no BagMerge witness")
    cell["structure"]["bag_distinct_digests"] = 1
    return cell


# control -> (its one-cell run, the row that must fail, the only finding of that row naming the cell)
CONTROLS: dict[str, tuple[dict[str, Any], str, str]] = {
    "answers differ with equal logits": (_answers_differ(), UNIQUENESS_CHECK, "cells_with_several_answers"),
    "no cell with a BagMerge witness": (_no_witness(), BAG_CHECK, "cells_without_order_witness"),
}


def _flagged(rows: Sequence[ClaimResult], record: dict[str, Any], check: str, finding: str) -> bool:
    """Whether, of the ``rows`` over the one control cell, exactly ``check`` fails and exactly
    ``finding`` names the cell: a control cell that broke another row too would not show this row could see."""
    failing = {r.check for r in rows if r.outcome is Outcome.FAILS}
    named = {k for r in rows for k, v in r.details.items() if isinstance(v, list) and _name(record) in v}
    return (failing, named) == ({check}, {finding})  # one comparison, no part can drop out


def _naming_rows(rows: Sequence[ClaimResult], record: dict[str, Any]) -> set[str]:
    """The ``rows`` (their checks) over the one control cell whose findings name the cell: where the
    control belongs, read from what the rows report rather than from the row ``CONTROLS`` files it under."""
    return {r.check for r in rows for v in r.details.values() if isinstance(v, list) and _name(record) in v}


def structural_results(records: Sequence[dict[str, Any]], model: str, seconds: float) -> list[ClaimResult]:
    """The four rows over ``records`` (module doc), each failed and marked ``BLIND:`` where a control
    of it (``CONTROLS``) went unflagged; ``controls`` in each row's details says what each showed."""
    rows = _rows(records, model, seconds)
    # each control cell's rows, made once: the rows read a record, never change it
    control_rows = {name: _rows([record], "control", 0.0) for name, (record, _, _) in CONTROLS.items()}
    seen = {name: (check, _flagged(control_rows[name], record, check, finding))
            for name, (record, check, finding) in CONTROLS.items()}
    owners = {name: _naming_rows(control_rows[name], record) for name, (record, _, _) in CONTROLS.items()}
    amended = []
    for row in rows:
        mine = {name: ok for name, (check, ok) in seen.items() if check == row.check}
        details = {**row.details, "controls": mine} if mine else row.details
        # each control carried must be this row's own: one whose cell no other row's findings name
        strays = [f"{name} (another row's control)" for name in mine if owners[name] - {row.check}]
        blind = [name for name, ok in mine.items() if not ok] + strays
        if blind:
            figure = f"BLIND: {', '.join(blind)} not flagged (synthetic control cell); {row.figure}"
            amended.append(dataclasses.replace(row, outcome=Outcome.FAILS, figure=figure, details=details))
        else:
            amended.append(dataclasses.replace(row, details=details))
    return amended
