"""The benchmark's structural guarantees as claim evidence (``spec.ClaimResult``, part "realstate").

Accuracy is data; these are not estimated: every cell is checked, and one counterexample fails
the row.  Each row names the claim it supports:

- C8 — CanonicalMerge, fed every one of the k! input orders, decodes ONE answer per problem and
  budget (identical greedy tokens and identical first-step logits bytes; decoded, not inferred);
- C3 — CanonicalMerge renders one digest over all k! input orders, and the same digest with any
  one fragment re-delivered;
- C2 — merging a re-delivered fragment into the state leaves its set of content ids unchanged;
- C4 — BagMerge's input orders give different bytes (a witness), and a re-delivery changes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from realstate.bench import properties as P
from spec import ClaimResult, Outcome

UNIQUENESS_CHECK = P.BENCH_UNIQUENESS.name
RENDER_CHECK = P.BENCH_RENDER.name
ABSORB_CHECK = P.BENCH_ABSORB.name
BAG_CHECK = P.BENCH_BAG.name


def _outcome(ok: bool) -> Outcome:
    return Outcome.HOLDS if ok else Outcome.FAILS


def structural_results(records: Sequence[dict[str, Any]], model: str, seconds: float) -> list[ClaimResult]:
    cells = len(records)
    if cells == 0:
        return []
    where = f"{cells} problem-budget cells, {model}"
    many_answers = [r["problem"] + f"@L{r['latent_steps']}" for r in records
                    if r["canonical_orders"]["distinct_answers"] != 1]
    many_logits = [r["problem"] + f"@L{r['latent_steps']}" for r in records
                   if r["canonical_orders"]["distinct_first_logits"] != 1]
    decodes = sum(r["canonical_orders"]["orders"] for r in records)
    many_digests = [r["problem"] + f"@L{r['latent_steps']}" for r in records
                    if r["structure"]["canonical_distinct_digests"] != 1]
    redelivery_differs = [r["problem"] + f"@L{r['latent_steps']}" for r in records
                          if not r["structure"]["redelivery_canonical_equal"]]
    not_absorbed = [r["problem"] + f"@L{r['latent_steps']}" for r in records
                    if not r["structure"]["redelivery_state_unchanged"]]
    bag_witnesses = sum(1 for r in records if r["structure"]["bag_distinct_digests"] > 1)
    bag_unchanged = [r["problem"] + f"@L{r['latent_steps']}" for r in records
                     if not r["structure"]["redelivery_bag_changed"]]
    share = seconds / 4
    return [
        P.BENCH_UNIQUENESS.result(
            _outcome(not many_answers and not many_logits),
            f"{decodes} decodes in {where}: {len(many_answers)} cells with >1 answer, "
            f"{len(many_logits)} with >1 first-step logits", share,
            cells=cells, decodes=decodes, cells_with_several_answers=many_answers[:20],
            cells_with_several_logits=many_logits[:20]),
        P.BENCH_RENDER.result(
            _outcome(not many_digests and not redelivery_differs),
            f"{where}: {len(many_digests)} with >1 digest, {len(redelivery_differs)} where a re-delivery "
            "changed the bytes", share,
            cells=cells, cells_with_several_digests=many_digests[:20],
            cells_where_redelivery_changed_bytes=redelivery_differs[:20]),
        P.BENCH_ABSORB.result(
            _outcome(not not_absorbed), f"{where}: {len(not_absorbed)} where a re-delivery grew the state", share,
            cells=cells, cells_not_absorbed=not_absorbed[:20]),
        P.BENCH_BAG.result(
            _outcome(bag_witnesses > 0 and not bag_unchanged),
            f"{where}: {bag_witnesses} with >1 BagMerge digest; {len(bag_unchanged)} where a re-delivery "
            "left BagMerge's bytes unchanged", share,
            cells=cells, order_witness_cells=bag_witnesses, redelivery_unchanged=bag_unchanged[:20]),
    ]
