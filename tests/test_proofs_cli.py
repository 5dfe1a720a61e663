"""``canonmerge prove``: wired into the CLI, honest exit codes, JSON, --only/--timeout/--emit-smt2.

One test goes through a real subprocess; the rest call ``canonmerge.cli.main`` in-process,
because every CLI start imports all command modules (torch included) and costs seconds."""

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

import proofs
from canonmerge import cli
from canonmerge.commands import prove
from spec import Outcome, PartReport, no_progress
from tests.coq_helpers import rows_run


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run(capsys):
    def call(*args: str) -> Ran:
        try:
            code = cli.main(["prove", *args])
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)
    return call


def test_prove_json_in_a_subprocess(tmp_path):
    """The installed entry point, run away from the checkout (as a user would)."""
    out = subprocess.run([sys.executable, "-m", "canonmerge", "prove", "--only", "C5", "--json"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    assert document["exit_code"] == 0
    (part,) = document["parts"]
    assert part["part"] == "proofs"
    assert [r["check"] for r in part["results"]] == rows_run("C5")
    assert {r["outcome"] for r in part["results"]} == {"holds"}
    assert part["tables"][0]["columns"] == ["obligation", "claim", "expected", "result", "premises needed",
                                            "antecedents", "time"]
    naive = next(r for r in part["results"] if r["check"] == "c5_naive_float_lt_not_strict_weak")
    assert any("nan" in v for v in naive["details"]["witness"].values())
    monotone = next(r for r in part["results"] if r["check"] == "c5_key_monotone_in_m")
    assert monotone["details"]["antecedents_satisfiable"] == "1/1 sat"
    link = next(r for r in part["results"] if r["check"] == "c5_link_order_key")
    assert link["details"]["kind"] == "code link" and link["details"]["cases"] > 0


def test_prove_human_output_and_exit_zero(run):
    out = run("--only", "C4")
    assert out.returncode == 0, out.stderr
    assert "c4_bag_merge_not_commutative" in out.stdout and "<f0, f1>" in out.stdout
    assert "exit 0" in out.stdout


def test_unknown_obligation_is_a_usage_error_listing_known_names(run):
    out = run("--only", "c9_no_such_thing")
    assert out.returncode == 2
    assert "c9_no_such_thing" in out.stderr and "c1_commutative" in out.stderr


def test_non_positive_timeout_is_a_usage_error(run):
    assert run("--timeout", "0").returncode == 2
    assert run("--timeout", "soon").returncode == 2


def test_timeout_is_unknown_and_exit_one(run):
    out = run("--only", "c7_bounded_delivery_6", "--timeout", "0.001", "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    (row,) = json.loads(out.stdout)["parts"][0]["results"]
    assert row["outcome"] == "unknown" and row["details"]["result"] == "unknown"


def test_emit_smt2_writes_the_selected_obligations(run, tmp_path):
    out = run("--only", "C1", "--emit-smt2", str(tmp_path / "smt"))
    assert out.returncode == 0, out.stderr
    written = sorted(p.stem for p in (tmp_path / "smt").glob("*.smt2"))
    assert written == sorted(ob.name for ob in proofs.select("C1") if isinstance(ob, proofs.Obligation))
    assert "c1_link_fragment_set_merge" not in written  # a code check has no SMT query


def test_command_module_contract(monkeypatch):
    assert prove.PART == "proofs"
    parser = argparse.ArgumentParser()
    prove.add_arguments(parser)
    args = parser.parse_args(["--only", "c2_absorbing", "--timeout", "5"])
    report = prove.run(args, no_progress)
    assert isinstance(report, PartReport) and report.results[0].outcome == Outcome.HOLDS
    calls = []
    monkeypatch.setattr(prove, "run_proofs", lambda *a, **kw: calls.append((a, kw)) or PartReport("proofs"))
    prove.run_default(no_progress)
    # everything, under the default timeout
    assert calls == [((None, proofs.DEFAULT_TIMEOUT_S, None, no_progress), {"fail_fast": False})]


def test_prove_json_in_process(run):
    out = run("--only", "C1", "--json")
    assert out.returncode == 0
    (part,) = json.loads(out.stdout)["parts"]
    assert [r["check"] for r in part["results"]] == rows_run("C1")
    assert {r["outcome"] for r in part["results"]} == {"holds"}
