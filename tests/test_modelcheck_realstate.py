"""The checker on realstate's own render (what ``canonmerge check`` runs): every claim holds,
and a planted bug in realstate's engine (``--plant``, one mechanic swapped, the real render
path otherwise) is caught with a trace that ``--replay`` reproduces on the same render."""

import json

import pytest

import modelcheck
from canonmerge.cli import main
from canonmerge.commands.check import PLANTED
from realstate.evidence.checker_backend import RealstateBackend, make_backend
from realstate.evidence.planted import MUTANTS
from realstate.kernel.engine import CANONICAL
from spec import Outcome


def test_check_command_runs_realstates_render(capsys, tmp_path):
    code = main(["check", "--json", "--max-arity", "3", "--replicas", "2", "--fragments", "2",
                 "--trace-dir", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    part = report["parts"][0]
    assert part["data"]["backend"] == "realstate" and part["data"]["iteration"] == "arrival"
    assert all(r["outcome"] == "holds" for r in part["results"])


def test_backend_is_the_canonical_engine():
    backend = make_backend()
    assert isinstance(backend, RealstateBackend) and backend.engine is CANONICAL and backend.mutant is None


def test_the_cli_knows_every_engine_preset_by_name():
    assert tuple(MUTANTS) == PLANTED


# planted engine -> a check of ``canonmerge check`` that must fail on it
CAUGHT_BY = {
    "unstable-sort": ("C3", "engine order over every input order"),
    "value-returning-sort": ("C3", "engine order over every input order"),
    "no-tie-break": ("C3", "permutations"),
    "identity-dedup": ("C3", "re-deliveries"),
    "order-by-arrival": ("C3", "permutations"),
}


@pytest.mark.parametrize("mutant", sorted(CAUGHT_BY))
def test_planted_engines_are_caught_and_replay_reproduces(mutant, tmp_path, capsys):
    report = modelcheck.run(make_backend(mutant), max_arity=3, universes=["ties", "specials", "duplicates"],
                            gossip=False, trace_dir=tmp_path)
    failing = {(r.claim, r.check) for r in report.results if r.outcome is Outcome.FAILS}
    assert CAUGHT_BY[mutant] in failing, failing
    traces = sorted(tmp_path.glob("*.json"))
    assert traces and all(json.loads(p.read_text())["mutant"] == mutant for p in traces)
    capsys.readouterr()
    assert main(["check", "--json", "--replay", str(traces[0])]) == 1
    replayed = json.loads(capsys.readouterr().out)["parts"][0]["results"][0]["details"]
    assert replayed["reproduced"] is True and replayed["same_bytes"] is True


def test_gossip_finds_a_planted_arrival_order_bug_with_a_replayable_trace(tmp_path, capsys):
    report = modelcheck.run(make_backend("order-by-arrival"), max_arity=1, universes=["ties"], trace_dir=tmp_path,
                            replicas=2, fragments=2)
    c7 = [r for r in report.results if r.claim == "C7"]
    assert c7 and any(r.outcome is Outcome.FAILS for r in c7)
    gossip_traces = [p for p in tmp_path.glob("*.json") if json.loads(p.read_text())["kind"] == "gossip"]
    assert gossip_traces
    assert main(["check", "--replay", str(gossip_traces[0])]) == 1
