"""The checker on realstate's own render (what ``canonmerge check`` runs): every claim holds,
and every planted bug is caught with a trace that ``--replay`` reproduces on the same render."""

import json

import pytest

import modelcheck
from canonmerge.cli import main
from modelcheck.mutants import MUTANTS, plant
from realstate.backend import RealstateBackend, make_backend
from realstate.engine import CANONICAL
from spec import Outcome


def test_check_command_runs_realstates_render(capsys, tmp_path):
    code = main(["check", "--json", "--max-arity", "3", "--replicas", "2", "--fragments", "2",
                 "--trace-dir", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    part = report["parts"][0]
    assert part["data"]["backend"] == "realstate"
    assert all(r["outcome"] == "holds" for r in part["results"])


def test_backend_is_the_canonical_engine():
    backend = make_backend()
    assert isinstance(backend, RealstateBackend) and backend.engine is CANONICAL


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_planted_bugs_are_caught_on_realstate_and_replay_reproduces(mutant, tmp_path, capsys):
    report = modelcheck.run(plant(make_backend(), mutant), max_arity=3,
                            universes=["ties", "specials", "duplicates"], replicas=2, fragments=2,
                            trace_dir=tmp_path)
    assert any(r.outcome is Outcome.FAILS for r in report.results)
    traces = sorted(tmp_path.glob("*.json"))
    assert traces
    capsys.readouterr()
    assert main(["check", "--json", "--replay", str(traces[0])]) == 1
    replayed = json.loads(capsys.readouterr().out)["parts"][0]["results"][0]["details"]
    assert replayed["reproduced"] is True and replayed["same_bytes"] is True


def test_gossip_finds_a_planted_merge_bug_with_a_replayable_trace(tmp_path, capsys):
    report = modelcheck.run(plant(make_backend(), "merge-keeps-duplicates"), max_arity=1,
                            universes=["ties"], trace_dir=tmp_path)
    c7 = [r for r in report.results if r.claim == "C7"]
    assert c7 and any(r.outcome is Outcome.FAILS for r in c7)
    gossip_traces = [p for p in tmp_path.glob("*.json") if json.loads(p.read_text())["kind"] == "gossip"]
    assert gossip_traces
    assert main(["check", "--replay", str(gossip_traces[0])]) == 1
