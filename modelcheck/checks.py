"""The exhaustive checks on one fragment universe: C3, C4, C6, the laws C1/C2 on concrete
states, and the refinement of the abstract model by the backend, run in the pieces the shards
plan (``run_c3``, ``run_bag``, ``run_universe``).

The search is split by law: ``order_checks`` (C3's orderings and the engine's sort),
``bag_checks`` (C4, C6), ``law_checks`` (C1, C2, the refinement), on the shared machinery of
``universe_search``; the counts are ``tallies``' records.  What each check claims is declared in
``modelcheck.properties``; the search only counts cases against those declarations.  A violation
on a universe of data is minimized and compiled into a replayable program trace; the replay runs
the same search on a ``HeldUniverse`` of its real fragments."""

from __future__ import annotations

from collections.abc import Sequence

from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.bag_checks import BagChecks
from modelcheck.law_checks import LawChecks
from modelcheck.order_checks import RENDER_BATCH, OrderChecks, head_swapped_twin
from modelcheck.tallies import Row, Tallies, Tally, digests_per_set
from modelcheck.universe_search import APPENDED, INTERLEAVED, HeldUniverse

__all__ = ["APPENDED", "INTERLEAVED", "RENDER_BATCH", "HeldUniverse", "Row", "Tallies", "Tally", "UniverseCheck",
           "digests_per_set", "head_swapped_twin"]


class UniverseCheck(OrderChecks, BagChecks, LawChecks):
    """Runs the selected checks on one universe for one backend."""

    # --- the work, in the pieces the shards run -------------------------------------------------

    def top(self, max_arity: int) -> int:
        """The largest arity checked on this universe: its first ``top`` fragments."""
        return min(max_arity, self.size)

    def run_c3(self, n: int, prefix: Sequence[int] = ()) -> Row:
        """C3 (and the oracle) on the schedules of arity n that start with ``prefix``."""
        row = Row(n)
        if self.wants(P.PERMUTATIONS, P.MERGE_TREES, P.REDELIVERIES) or self.use_oracle:
            self.c3(n, row, prefix)
        return row

    def run_bag(self, n: int) -> Row:
        """C4 on arity n (n >= 2)."""
        row = Row(n)
        if n >= 2 and self.wants(P.BAG_ORDER, P.BAG_REDELIVERY):
            self.c4(n, row)
        return row

    def run_universe(self, top: int) -> None:
        """The checks over the whole universe: the engine's sort, C6, the laws, the refinement."""
        if self.wants(P.ENGINE_ORDER):
            self.engine_order(top)
        if self.wants(P.PAIRS):
            self.c6()
        if self.wants(P.LAWS_C1, P.LAWS_C2):
            self.laws()
        if self.wants(P.REFINEMENT_UNION, P.REFINEMENT_ORDER, P.REFINEMENT_BAG):
            self.refinement(en.permutations(top))

    def run(self, max_arity: int) -> list[Row]:
        """Everything on this universe in one process, arity by arity (what one shard plan run
        in order does; kept for direct use)."""
        top = self.top(max_arity)
        for n in range(1, top + 1):
            row = self.run_c3(n)
            row.bag_digests = self.run_bag(n).bag_digests
            self.rows.append(row)
            self.progress(f"universe {self.universe.name}", n, top)
        self.run_universe(top)
        return self.rows
