"""The check and soak controls that close the instruments audit's last gaps, each planted in the
source of a scratch copy and caught by the product's own command (``canonmerge check`` or
``canonmerge soak``).  Product runs, so they run with ``-m audit``; the in-process unit tests
beside each control (tests/test_modelcheck_instruments.py, tests/test_modelcheck_engine_order_count.py,
tests/test_soak_neighbour_controls.py) plant the same text."""

from __future__ import annotations

import json

import pytest

from audit.scratch import Patch, ScratchCopy
from modelcheck import properties as P
from tests.audit_helpers import failing_rows
from tests.test_soak import SMALL

CHECK = ("check", "--universe", "ties", "--max-arity", "3", "--no-gossip", "--workers", "1", "--json")
PLANTS = {
    "a C3 tally that subtracts what it checked": (
        Patch("modelcheck/order_checks.py", "            tally.checked += count\n            tally.seconds",
              "            tally.checked -= count\n            tally.seconds"),
        ("C3", P.COVERAGE_COUNTS.name)),
    "a twin filed under the last original's number": (
        Patch("modelcheck/order_checks.py", "index = len(self.descs) - 1", "index = len(self.descs) - 2"),
        ("C3", P.ENGINE_ORDER.name)),
    "the misfiled-twin scan run over the originals alone": (
        Patch("modelcheck/order_checks.py", "scanned = sets[-1]", "scanned = sets[-2]"),
        ("C3", P.ENGINE_ORDER.name)),
    "the copy control renumbering copies down (a copy made an original)": (
        Patch("modelcheck/coverage.py", "expr.copy + 1", "expr.copy - 1"),
        ("C3", P.COVERAGE_ARRIVAL.name)),
    "a split across shards counted only from three digests": (
        Patch("modelcheck/shards.py", "return len(digests) > 1 and not found", "return len(digests) > 2 and not found"),
        ("C3", P.CANARY_SHARDS.name)),
    "a plan without a prefix length for N = 6": (
        Patch("modelcheck/shards.py", "5: 1, 6: 2, 7: 2,", "5: 1, 7: 2,"),
        ("C3", P.COVERAGE_PLAN.name)),
    "a plan without a prefix length for N = 9, the cap": (
        Patch("modelcheck/shards.py", "8: 3, 9: 4}", "8: 3}"),
        ("C3", P.COVERAGE_PLAN.name)),
    "the plan control leaving out two shards": (
        Patch("modelcheck/plan_coverage.py", "sums(shards[:-1], n, redeliveries)", "sums(shards[:-2], n, redeliveries)"),
        ("C3", P.COVERAGE_PLAN.name)),
    "the selection ignored inside a shard": (
        Patch("modelcheck/universe_search.py", "self.selected = frozenset(selected)\n",
              "self.selected = frozenset(P.ALL)\n"),
        ("C3", P.COVERAGE_SELECTION.name)),
}


@pytest.mark.audit
@pytest.mark.parametrize("name", PLANTS)
def test_canonmerge_check_catches_the_planted_instrument(name: str, tmp_path) -> None:
    patch, row = PLANTS[name]
    out = ScratchCopy(tmp_path).apply(patch).run(*CHECK, timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert row in failing_rows(out.stdout)


@pytest.mark.audit
def test_canonmerge_soak_catches_a_nested_store_seen_by_its_listing_only(tmp_path) -> None:
    patch = Patch("realstate/exchange/stores/directory.py", "if MARKER_NAME in files or os.path.lexists(",
                  "if MARKER_NAME in files and os.path.lexists(")
    out = ScratchCopy(tmp_path / "scratch").apply(patch).run("soak", *SMALL, "--faults", "1", "--fault",
                                                             "hostile-neighbour", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    rows = {r["check"]: r for r in json.loads(out.stdout)["parts"][0]["results"]}
    converge = rows["soak: real processes converge under faults"]
    assert converge["outcome"] == "fails"
    assert any("a nested store whose marker is not a regular file" in v
               for v in converge["details"]["neighbour"]["violations"])


@pytest.mark.audit
def test_canonmerge_soak_catches_a_power_loss_model_that_drops_a_rename_not_yet_durable(tmp_path) -> None:
    """Only the store that fsyncs its file after the rename is torn in the states this model drops."""
    patch = Patch("realstate/processes/soak/power.py", "else {False, True} if renamed else",
                  "else {False} if renamed else")
    out = ScratchCopy(tmp_path / "scratch").apply(patch).run("soak", *SMALL, "--faults", "0", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    rows = {r["check"]: r for r in json.loads(out.stdout)["parts"][0]["results"]}
    durable = rows["soak: every acknowledged put is present on every replica"]
    assert durable["outcome"] == "fails"
    assert ("blind instrument: the power-loss model (negative control 'a store that fsyncs the file only after "
            "renaming it' was not reported by the invariants)") in durable["figure"]


@pytest.mark.audit
def test_canonmerge_soak_catches_a_power_loss_control_that_breaks_more_than_its_own_invariant(tmp_path) -> None:
    """The sync-before-rename store also leaving its file unsynced is still reported, torn as well
    as lost; the run says the control no longer shows its own wrong order."""
    patch = Patch("realstate/processes/soak/power.py", "temp = self._write_temp(chunks, fsync=True)",
                  "temp = self._write_temp(chunks, fsync=False)")
    out = ScratchCopy(tmp_path / "scratch").apply(patch).run("soak", *SMALL, "--faults", "0", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    rows = {r["check"]: r for r in json.loads(out.stdout)["parts"][0]["results"]}
    durable = rows["soak: every acknowledged put is present on every replica"]
    assert durable["outcome"] == "fails"
    assert ("negative control 'a store that fsyncs its directory before the rename' was reported lost and torn, "
            "where its wrong order is lost alone") in durable["figure"]
