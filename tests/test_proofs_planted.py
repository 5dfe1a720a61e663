"""Source-level planted bugs, caught by ``python -m canonmerge prove`` on a scratch copy.

The cases are the ``prove`` entries of the curated catalog (``audit.curated``): one realistic
bug each in the SOURCE of ``spec`` (the code) or ``proofs`` (the encoding).  Each runs the
product's own command with ``--only`` the rows that must catch it and asserts exit 1 with those
rows failing.  Both sides are covered because the code links compare code and encoding in both
directions: a wrong encoding fails them as surely as wrong code."""

import json

import pytest

from audit import ScratchCopy
from audit.curated import CATALOG

CASES = [c for c in CATALOG if c.part == "prove"]
PARAMS = [pytest.param(c, id=c.name, marks=() if c.in_default_tests else pytest.mark.audit) for c in CASES]


def failing_rows(scratch: ScratchCopy, only: str) -> tuple[int, dict[str, dict]]:
    out = scratch.run("prove", "--only", only, "--json", timeout=120)
    assert out.stdout, out.stderr
    rows = {r["check"]: r for r in json.loads(out.stdout)["parts"][0]["results"]}
    return out.returncode, {name: r for name, r in rows.items() if r["outcome"] != "holds"}


@pytest.mark.parametrize("case", PARAMS)
def test_prove_catches_a_planted_bug(case, tmp_path):
    scratch = ScratchCopy(tmp_path).apply(*case.patches)
    code, failing = failing_rows(scratch, case.quick[2])
    assert code == 1, failing
    assert {name for _, name in case.caught_by} <= set(failing), (case.name, sorted(failing))
    for row in failing.values():
        assert row["outcome"] == "fails" and row["details"]["result"] != "proved"


def test_the_unpatched_copy_passes_the_same_selections(tmp_path):
    """Control: every selection above holds on the unpatched copy, so a failure is the bug's."""
    scratch = ScratchCopy(tmp_path)
    selections = sorted({c.quick[2] for c in CASES})
    code, failing = failing_rows(scratch, ",".join(selections))
    assert code == 0 and not failing, failing
