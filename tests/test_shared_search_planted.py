"""One search decides C3, C4 and C6 for both commands: a bug planted in the SOURCE of
modelcheck's search (a scratch copy, ``audit.ScratchCopy``) is caught by ``canonmerge check``
and by ``canonmerge realstate``, each through its own command line.

The BagMerge order search that BagMerges the index order for every permutation finds no
witness, and a 'sometimes' check without a witness fails in both reports.  The C3 comparison
that compares each render with itself passes every law, so it is caught by the replay's negative
control (the permutations check run on an arrival-order render must fail), which runs the same
search."""

from __future__ import annotations

import pytest

from audit import ScratchCopy
from audit.curated import REALSTATE, scoped_check
from audit.scratch import Patch
from tests.audit_helpers import failing_rows

BAG_CHECKS, ORDER_CHECKS = "modelcheck/bag_checks.py", "modelcheck/order_checks.py"
CHECK_C4 = scoped_check("--only", "C4", "--no-gossip", "--universe", "ties", "--max-arity", "3")
REALSTATE_C4 = (*REALSTATE, "--only", "C4")
REALSTATE_C3 = (*REALSTATE, "--only", "C3")
BAG_ORDER = ("C4", "BagMerge order dependence")

BAG_IGNORES_ORDER = Patch(BAG_CHECKS, "bags.setdefault(self.bag([objs[i] for i in order]), order)",
                          "bags.setdefault(self.bag(objs), order)")
C3_SELF_COMPARISON = Patch(ORDER_CHECKS, "                    if digest != ref:\n",
                           "                    if digest != digest:\n")


@pytest.mark.parametrize("command, caught_by", [
    pytest.param(CHECK_C4, {BAG_ORDER}, id="check"),
    pytest.param(REALSTATE_C4, {BAG_ORDER}, id="realstate"),
    pytest.param(REALSTATE_C3, {("C3", "control: an arrival-order render fails the permutations check")},
                 id="realstate-control"),
])
def test_a_bug_in_the_shared_search_is_caught_by_the_command(command, caught_by, tmp_path):
    patch = C3_SELF_COMPARISON if command is REALSTATE_C3 else BAG_IGNORES_ORDER
    out = ScratchCopy(tmp_path / "planted").apply(patch).run(*command, "--json", timeout=900)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    assert caught_by <= failing_rows(out.stdout), failing_rows(out.stdout)
    clean = ScratchCopy(tmp_path / "clean").run(*command, "--json", timeout=900)
    assert clean.returncode == 0, (failing_rows(clean.stdout) if clean.stdout else clean.stderr[-2000:])
