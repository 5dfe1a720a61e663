"""``canonmerge check`` wiring: flags, exit codes, traces and --replay.

These tests run the command on the reference backend (monkeypatched into ``_backend``); the
realstate-backed run is in ``tests/test_modelcheck_realstate.py``."""

import argparse
import json

import pytest

import canonmerge.commands.check as check
from canonmerge.cli import main
from modelcheck.shards import BackendRecipe
from spec import Outcome, no_progress
from tests.broken_backends import planted_reference


@pytest.fixture
def reference(monkeypatch):
    """The reference backend (with a test-only planted bug, if named) in this process and, for a
    process pool, in its workers."""
    monkeypatch.setattr(check, "_backend", planted_reference)
    monkeypatch.setattr(check, "_recipe", lambda mutant=None: BackendRecipe(
        "tests.broken_backends:planted_reference", (mutant,), name="reference", mutant=mutant))


SMALL = ["--max-arity", "3", "--universe", "ties", "--universe", "specials", "--replicas", "2",
         "--fragments", "2", "--workers", "1"]


def test_check_holds_and_prints_json(reference, capsys, tmp_path):
    code = main(["check", "--json", *SMALL, "--trace-dir", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["exit_code"] == 0
    part = out["parts"][0]
    assert part["part"] == "modelcheck" and part["data"]["orderings_checked"] > 0
    assert {t["title"].split("'")[1] for t in part["tables"][:2]} == {"ties", "specials"}
    assert not list(tmp_path.iterdir())  # nothing saved when nothing fails


def test_plant_fails_saves_traces_and_replay_reproduces(reference, capsys, tmp_path):
    assert main(["check", *SMALL, "--plant", "no-tie-break", "--trace-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "planted bug 'no-tie-break'" in out
    saved = sorted(tmp_path.glob("*.json"))
    assert saved and all("no-tie-break" in p.name for p in saved)
    for path in saved:
        assert main(["check", "--replay", str(path)]) == 1
    # the same operations without the planted bug: the violation no longer reproduces -> exit 0
    data = json.loads(saved[0].read_text())
    data["mutant"] = None
    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(data))
    assert main(["check", "--replay", str(fixed)]) == 0
    capsys.readouterr()
    assert main(["check", "--json", "--replay", str(saved[0])]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["parts"][0]["results"][0]["details"]["same_bytes"] is True


def test_bad_input_exits_2(reference, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "canonmerge-modelcheck-trace"}')
    assert main(["check", "--replay", str(bad)]) == 2
    assert "malformed trace" in capsys.readouterr().err
    assert main(["check", "--replay", str(tmp_path / "missing.json")]) == 2
    assert main(["check", "--universe", "nope"]) == 2
    assert "known: random, ties" in capsys.readouterr().err
    assert main(["check", "--plant", "nope", *SMALL]) == 2
    assert main(["check", "--max-arity", "9"]) == 2
    assert main(["check", "--workers", "-1", *SMALL[:-2]]) == 2
    assert main(["check", "--ray-address", "auto", *SMALL]) == 2
    assert main(["check", "--max-arity", "0"]) == 2
    assert main(["check", "--in-flight", "0"]) == 2
    assert main(["check", "--replay", str(bad), "--plant", "no-tie-break"]) == 2
    assert main(["check", "--max-arity", "five"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "canonmerge check: error: --max-arity five: must be an integer"


def test_run_and_run_default_return_part_reports(reference, monkeypatch):
    args = check.defaults()
    assert (args.max_arity, args.replicas, args.fragments, args.in_flight, args.randomized) == (5, 3, 3, 2, 0)
    assert args.universe is None and args.replay is None and args.plant is None
    assert args.workers == 0 and args.engine == "local" and args.ray_address is None
    args = argparse.Namespace(**{**vars(args), "max_arity": 2, "universe": ["random"], "no_gossip": True,
                                 "randomized": 3, "workers": 1})
    report = check.run(args, no_progress)
    assert report.part == check.PART == "modelcheck"
    assert all(r.outcome is Outcome.HOLDS for r in report.results)
    assert any("randomized" in r.check for r in report.results)
    seen = []
    monkeypatch.setattr(check, "run", lambda a, progress: seen.append(a) or report)
    assert check.run_default(no_progress, fail_fast=True) is report
    assert vars(seen[0]) == {**vars(check.defaults()), "fail_fast": True}


@pytest.mark.full
def test_the_default_size_run_holds_on_the_reference(reference):
    """The default-size enumeration (7 universes, N <= 5, 3 x 3 gossip) on a pool of two workers,
    on the reference backend: about half a minute of both cores, so ``-m full``.  The README's
    main command runs the same size on realstate's backend (docs/RESULTS.md has its figure)."""
    report = check.run_default(no_progress)
    assert all(r.outcome is Outcome.HOLDS for r in report.results)
    assert len(report.tables) == 8
