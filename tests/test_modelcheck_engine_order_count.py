"""The engine-order check holds its own count of sorted input orders to a closed form: a loop that
stops short of the top arity (or skips the twin set) fails the row instead of passing fewer orders."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import modelcheck
from modelcheck import order_checks
from modelcheck import properties as P
from modelcheck.order_checks import engine_order_count
from modelcheck.reference import ReferenceBackend
from spec import Outcome

SMALL = dict(max_arity=3, universes=["ties"], gossip=False, trace_dir=None, workers=1)


def test_the_closed_form_counts_every_order_of_every_set():
    for top in range(1, 6):
        for distinct in range(1, top + 1):
            sizes = [min(n, distinct) for n in range(1, top + 1)]
            for twin in (sizes[-1], sizes[-1] + 1):
                enumerated = sum(1 for s in [*sizes, twin] for _ in itertools.permutations(range(s)))
                assert engine_order_count(top, distinct, twin) == enumerated
    assert engine_order_count(3, 3, 4) == 1 + 2 + 6 + math.factorial(4)


def test_a_healthy_run_sorts_exactly_the_closed_form():
    report = modelcheck.run(ReferenceBackend(), **SMALL, checks=[P.ENGINE_ORDER])
    row = {r.check: r for r in report.results}[P.ENGINE_ORDER.name]
    assert row.outcome is Outcome.HOLDS and row.details.get("input orders beside the closed form") is None


def test_orders_left_unsorted_fail_the_row(monkeypatch):
    short = SimpleNamespace(permutations=lambda xs: list(itertools.permutations(xs))[:-1], islice=itertools.islice)
    monkeypatch.setattr(order_checks, "itertools", short)
    report = modelcheck.run(ReferenceBackend(), **SMALL, checks=[P.ENGINE_ORDER])
    row = {r.check: r for r in report.results}[P.ENGINE_ORDER.name]
    assert row.outcome is Outcome.FAILS
    assert "of" in row.details["input orders beside the closed form"]


def _desc(heads):
    from modelcheck.backend import FragmentDesc
    layer = tuple(((h,),) for h in heads)          # [H][n=1][D=1]
    return FragmentDesc(0, (layer, layer), (layer, layer))


def test_the_twin_set_size_reads_the_descriptions():
    from modelcheck.order_checks import twin_set_size
    assert twin_set_size([], [0, 1]) == 2                                     # a held universe: no twin
    assert twin_set_size([_desc([1])], [0]) == 1                              # one head
    assert twin_set_size([_desc([1, 1])], [0]) == 1                           # the exchange changes nothing
    assert twin_set_size([_desc([1, 2, 3])], [0]) == 2
    assert twin_set_size([_desc([1, 2]), _desc([2, 1])], [0, 1]) == 2          # already a member


def test_an_engine_order_check_without_its_twin_fails_the_row(monkeypatch):
    """Two-head fragments without their head-swapped twin: the tie case is gone, and the count
    held to the descriptions' closed form shows it."""
    monkeypatch.setattr(order_checks, "head_swapped_twin", lambda d: None)
    report = modelcheck.run(ReferenceBackend(), **SMALL, checks=[P.ENGINE_ORDER])
    row = {r.check: r for r in report.results}[P.ENGINE_ORDER.name]
    assert row.outcome is Outcome.FAILS and "input orders beside the closed form" in row.details


def test_a_twin_filed_under_another_number_fails_the_row(monkeypatch):
    real = order_checks.OrderChecks._with_twin

    def misfiled(self, members):
        out = real(self, members)
        added = [i for i in out if i >= self.size]
        if added and added[0] + 1 not in self.objects:
            self.objects[added[0] + 1] = self.objects.pop(added[0])
            out = [i + 1 if i == added[0] else i for i in out]
        return out

    monkeypatch.setattr(order_checks.OrderChecks, "_with_twin", misfiled)
    report = modelcheck.run(ReferenceBackend(), **SMALL, checks=[P.ENGINE_ORDER])
    row = {r.check: r for r in report.results}[P.ENGINE_ORDER.name]
    assert row.outcome is Outcome.FAILS and "fragments not built from their description" in row.details


def test_a_twin_filed_under_an_originals_number_fails_the_row(monkeypatch):
    """The twin numbered one before its place takes the last original's number and replaces its
    object: the count still matches (the set is one larger), so only rebuilding the originals from
    their descriptions shows it."""
    from tests.test_gossip_reference import _mutated

    planted = _mutated(order_checks, order_checks.OrderChecks, "_with_twin",
                       "index = len(self.descs) - 1", "index = len(self.descs) - 2")
    monkeypatch.setattr(order_checks.OrderChecks, "_with_twin", planted)
    report = modelcheck.run(ReferenceBackend(), **SMALL, checks=[P.ENGINE_ORDER])
    row = {r.check: r for r in report.results}[P.ENGINE_ORDER.name]
    assert row.outcome is Outcome.FAILS, row.details
