"""The command line's contract: four part commands, valid JSON from verify, honest exit codes."""

import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "canonmerge", *args], capture_output=True, text=True)


def test_help_lists_the_four_subcommands():
    out = run("--help")
    assert out.returncode == 0
    for name in ("prove", "check", "realstate", "verify"):
        assert name in out.stdout


def test_unknown_subcommand_is_a_usage_error():
    assert run("frobnicate").returncode == 2


def test_exit_code_precedence():
    from spec import ClaimResult, Outcome, exit_code_for

    def r(o):
        return ClaimResult("C1", "p", "x", o)

    assert exit_code_for([r(Outcome.HOLDS)]) == 0
    assert exit_code_for([r(Outcome.HOLDS), r(Outcome.NOT_BUILT)]) == 2
    assert exit_code_for([r(Outcome.FAILS), r(Outcome.NOT_BUILT)]) == 1
    assert exit_code_for([r(Outcome.UNKNOWN)]) == 1
    assert exit_code_for([]) == 2


def test_claims_summary_has_one_entry_per_claim_and_never_invents_a_pass():
    from canonmerge.printing import claims_summary
    from spec import CLAIMS, ClaimResult, Outcome

    summary = claims_summary([ClaimResult("C1", "proofs", "x", Outcome.HOLDS)])
    assert [e["claim"] for e in summary] == list(CLAIMS)
    by_id = {e["claim"]: e["outcome"] for e in summary}
    assert by_id["C1"] == "holds" and by_id["C8"] == "not built"


def test_a_part_without_its_command_module_reports_not_built(monkeypatch, capsys):
    import json

    from canonmerge import cli

    monkeypatch.setitem(cli.PART_COMMANDS, "prove", ("canonmerge.commands.no_such_part", "x"))
    assert cli.main(["prove", "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    outcomes = {r["outcome"] for p in report["parts"] for r in p["results"]}
    assert outcomes == {"not built"}


@pytest.mark.heavy  # CI's first step runs `canonmerge verify` itself, as the README's main job
def test_verify_json_runs_every_part_and_every_claim_holds(monkeypatch, capsys):
    """The main job, end to end in one process: one JSON document, one entry per claim, all three
    parts. ``realstate`` runs its embedded defaults; ``check`` runs a smaller enumeration
    (N <= 3, a 2 x 2 gossip) so the suite stays fast -- the default-size check is the README's
    main command, measured in docs/RESULTS.md, and its wiring is the same.  ``prove`` runs the
    obligations of C1 and C2 under the default timeout: every obligation under that timeout is
    discharged by tests/test_proofs_runner.py::test_every_obligation_meets_its_expectation, so
    discharging them all here again would only repeat that work."""
    import json

    import canonmerge.commands.check as check
    import canonmerge.commands.prove as prove
    from canonmerge.cli import main

    def small(progress, fail_fast=False):
        args = check.defaults()
        args.max_arity, args.replicas, args.fragments, args.workers = 3, 2, 2, 1
        args.fail_fast = fail_fast
        return check.run(args, progress)

    def few_proofs(progress, fail_fast=False):
        return prove.run_proofs("C1,C2", prove.DEFAULT_TIMEOUT_S, None, progress, fail_fast=fail_fast)

    monkeypatch.setattr(check, "run_default", small)
    monkeypatch.setattr(prove, "run_default", few_proofs)
    assert main(["verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["part"] for p in report["parts"]] == ["proofs", "modelcheck", "realstate"]
    assert [c["claim"] for c in report["claims"]] == [f"C{i}" for i in range(1, 10)]
    assert {c["outcome"] for c in report["claims"]} == {"holds"}
    assert all(c["results"] for c in report["claims"])
