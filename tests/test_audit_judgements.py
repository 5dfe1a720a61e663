"""Judgements follow their patch when its line moves, never another patch; the instruments'
targets run against the commands that exercise them, each with flags it accepts."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from audit.generate import _regions, mutants_of_file
from audit.mutants import Mutant
from audit.run import KILLED, SURVIVED, RunConfig, classify, run_mutant
from audit.scratch import Patch, project_root
from audit.settings import ALL_PARTS, FAIL_FAST_PARTS, GROUP_PARTS
from audit.summary import attach, entry_key
from audit.targets import GROUPS, INSTRUMENT_TARGETS, TARGETS, Target

ROOT = project_root()


def test_an_entry_follows_its_patch_to_a_moved_line():
    got = attach({"spec/x.py:10:operator_number:abcd1234": "why"}, ["spec/x.py:12:operator_number:abcd1234"])
    assert got.judged == {"spec/x.py:12:operator_number:abcd1234": "why"}
    assert got.moved == {"spec/x.py:10:operator_number:abcd1234": "spec/x.py:12:operator_number:abcd1234"}
    assert got.stale == []


def test_an_entry_never_attaches_to_another_patch_operator_or_file():
    generated = ["spec/x.py:12:operator_number:00000000", "spec/x.py:12:operator_name:abcd1234",
                 "spec/y.py:10:operator_number:abcd1234"]
    got = attach({"spec/x.py:10:operator_number:abcd1234": "why", "not an id": "why"}, generated)
    assert got.judged == {} and got.moved == {}
    assert got.stale == ["not an id", "spec/x.py:10:operator_number:abcd1234"]


def test_an_exact_entry_wins_and_a_second_entry_for_one_patch_stays_stale():
    now = "spec/x.py:12:curated:a name:abcd1234"
    got = attach({"spec/x.py:10:curated:a name:abcd1234": "old", now: "new"}, [now])
    assert got.judged == {now: "new"} and got.stale == ["spec/x.py:10:curated:a name:abcd1234"]
    assert entry_key(now) == ("spec/x.py", "curated:a name", "abcd1234")


def test_judgements_follow_real_mutants_when_lines_are_inserted_above(tmp_path):
    """Generate spec/ordering.py's mutants, shift the file by two lines, generate again: every
    old id attaches to the mutant with the same patch, now two lines lower."""
    (tmp_path / "spec").mkdir()
    text = (ROOT / "spec/ordering.py").read_text(encoding="utf-8")
    (tmp_path / "spec/ordering.py").write_text(text, encoding="utf-8")
    before = mutants_of_file(tmp_path, Target("spec/ordering.py"))
    (tmp_path / "spec/ordering.py").write_text("# one\n# two\n" + text, encoding="utf-8")
    after = mutants_of_file(tmp_path, Target("spec/ordering.py"))
    got = attach({m.id: m.description for m in before}, [m.id for m in after])
    assert before and got.stale == [] and len(got.moved) == len(before)
    by_id = {m.id: m for m in after}
    for m in before:
        moved = by_id[got.moved[m.id]]
        assert (moved.line, moved.patches) == (m.line + 2, m.patches)


def test_each_part_gets_flags_its_command_has():
    config = RunConfig(parts=GROUP_PARTS["instruments"], parts_by_path={"a.py": ("soak",)})
    assert config.command("check") == ["check", "--fail-fast", "--json"]
    soak = config.command("soak")
    assert soak[0] == "soak" and soak[-1] == "--json" and "--fail-fast" not in soak
    for part in ALL_PARTS:  # --fail-fast only where the command's parser has it
        if part not in FAIL_FAST_PARTS:
            assert "--fail-fast" not in config.command(part)
    assert config.parts_for("a.py") == ("soak",)
    assert config.parts_for("b.py") == config.parts


def test_the_bench_document_is_read_by_its_claim_rows():
    rows = [{"claim": "C3", "part": "realstate", "check": "bench: one digest", "outcome": "holds"},
            {"claim": "C2", "part": "realstate", "check": "bench: absorbed", "outcome": "fails"}]
    doc = {"benchmark": "canonmerge-bench", "claims": rows}
    cell = classify("bench", 1, json.dumps(doc), "", 1.0)
    assert cell.outcome == KILLED and cell.failing == ["C2/bench: absorbed"]
    doc["claims"] = rows[:1]
    assert classify("bench", 0, json.dumps(doc), "", 1.0).outcome == SURVIVED


def test_instrument_targets_exist_name_real_scopes_and_run_known_parts():
    assert not {t.path for t in TARGETS} & {t.path for t in INSTRUMENT_TARGETS}
    assert set(GROUPS) == set(GROUP_PARTS)
    for t in INSTRUMENT_TARGETS:
        scopes, _ = _regions(ast.parse((ROOT / t.path).read_text(encoding="utf-8")))
        assert set(t.skip) <= {s.name for s in scopes}, t.path
        assert t.parts and set(t.parts) <= set(GROUP_PARTS["instruments"]), t.path


def test_list_names_the_group_and_reports_stale_entries():
    run = subprocess.run([sys.executable, "-m", "canonmerge", "audit", "--targets", "instruments", "--list", "--json",
                          "--file", "realstate/processes/replicate/agreement.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["mutants"] and {m["path"] for m in out["mutants"]} == {"realstate/processes/replicate/agreement.py"}
    assert out["stale_equivalent_entries"] == [] and out["stale_gap_entries"] == []
    bad = subprocess.run([sys.executable, "-m", "canonmerge", "audit", "--targets", "nothing", "--list"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.mark.audit  # one replicate run and one soak run on planted copies (about a minute)
def test_planted_instrument_bugs_are_caught_by_the_commands_that_exercise_them(tmp_path):
    """A blind rank comparison (every comparison holds) and a soak judge that loses nothing are
    caught by `replicate` and `soak` run as the audit runs them: their canaries go unseen."""
    agreement = "realstate/processes/replicate/agreement.py"
    judge = "realstate/processes/soak/judge.py"
    plants = [
        (agreement, "replicate", "return self.agree and self.matches_launcher", "return True"),
        (judge, "soak", '"lost": sorted(acknowledged - everywhere)', '"lost": sorted(set())'),
    ]
    for path, part, old, new in plants:
        assert (ROOT / path).read_text(encoding="utf-8").count(old) == 1
        mutant = Mutant(f"{path}:0:curated:test:00000000", "curated", path, 0, "curated:test",
                        (Patch(path, old, new),), "planted by the test")
        config = RunConfig(parts=(part,), timeout_s=600, workdir=tmp_path)
        result = run_mutant(mutant, config)
        assert result.detected, (part, [c.to_json() for c in result.cells])
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_each_mutant_is_judged_once() -> None:
    """A dict literal keeps the last of two equal keys silently: a mutant judged twice (two reasons,
    perhaps one of them stale) is refused here instead."""
    tree = ast.parse(Path("audit/equivalent.py").read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    twice = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and ":operator_" in key.value:
                    if key.value in seen:
                        twice.append(key.value)
                    seen[key.value] = key.lineno
    assert not twice, twice
