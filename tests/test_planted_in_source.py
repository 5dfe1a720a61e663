"""Source-level planted bugs, each caught by the product's own command.

The cases are the curated catalog (``audit.curated``): bugs an outside review found slipping
through ``canonmerge check`` and ``canonmerge realstate``, mutants that survived mutation
testing, and realistic bugs the audit adds.  Each is planted in the SOURCE of a scratch copy
of the packages (``audit.ScratchCopy``: an exact patch that must apply once) and the entry's
quick command — the product's own command line, scoped with ``--only`` and small universes to
stay fast — is run on the copy; the named rows must FAIL and the command must exit 1.  An
unpatched copy passes each command (exit 0), so a failure is the bug's doing.  Entries not in
the default set run with ``-m audit`` (and every ``canonmerge audit`` plants all of them
against the full parts)."""

from __future__ import annotations

import json

import pytest

from audit import ScratchCopy
from audit.curated import CATALOG
from tests.audit_helpers import failing_rows

CASES = [c for c in CATALOG if c.part in ("check", "realstate")]
# the default tier plants the first default case of each quick command (one of each kind); the rest
# of the default set runs in CI's heavy tier, and the others with -m audit
REPRESENTATIVES = {next(c.name for c in CASES if c.in_default_tests and c.quick == q)
                   for q in {c.quick for c in CASES if c.in_default_tests}}


def _marks(case) -> tuple:
    if not case.in_default_tests:
        return (pytest.mark.audit,)
    return () if case.name in REPRESENTATIVES else (pytest.mark.heavy,)


PARAMS = [pytest.param(c, id=c.name, marks=_marks(c)) for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_the_product_catches_the_planted_bug(case, tmp_path):
    scratch = ScratchCopy(tmp_path).apply(*case.patches)
    out = scratch.run(*case.quick, "--json", timeout=900)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    assert case.caught_by <= failing_rows(out.stdout), failing_rows(out.stdout)


@pytest.mark.parametrize("command", [pytest.param(q, marks=() if any(c.in_default_tests for c in CASES if c.quick == q)
                                                  else pytest.mark.audit)
                                     for q in sorted({c.quick for c in CASES})])
def test_the_same_commands_pass_on_an_unpatched_copy(command, tmp_path):
    out = ScratchCopy(tmp_path).run(*command, "--json", timeout=900)
    assert out.returncode == 0, (failing_rows(out.stdout) if out.stdout else out.stderr[-2000:])
    if command[0] == "realstate":
        assert_the_seeded_replay_reports_every_claim(json.loads(out.stdout))


def assert_the_seeded_replay_reports_every_claim(report: dict) -> None:
    """The command line's JSON report of a seeded replay (asserted on the realstate control,
    the default suite's one unpatched ``canonmerge realstate`` process)."""
    part = report["parts"][0]
    assert part["data"]["model"]["weights_source"] == "seeded"
    assert part["data"]["model"]["geometry"] == "qwen3-tiny"
    assert {e["claim"] for e in report["claims"]} == {f"C{i}" for i in range(1, 10)}
    assert report["environment"]["packages"]["torch"]
