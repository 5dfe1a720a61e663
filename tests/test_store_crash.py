"""Crash consistency of the directory store, table-driven over every step of a put and a clean
(``realstate.processes.soak.crashes``): a child process SIGKILLed at step k, for every k, then the
invariants.  The real store keeps them; stores planted in the SOURCE of a scratch copy (a write
under the final name instead of a temporary and a rename; a clean whose age test is inverted)
break them, and the table says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.scratch import Patch, ScratchCopy
from realstate.exchange.stores import DirectoryStore
from realstate.processes.soak.crashes import CLEAN_STEPS, PUT_STEPS, crash_table
from realstate.processes.soak.synthetic import soak_fragment

FINAL_NAME = Patch(  # the fragment is written in place: a killed writer leaves a torn fragment file
    "realstate/exchange/stores/directory.py",
    "replace_atomically(temp, self.path / name, chunks, self.step)",
    "replace_atomically(self.path / name, self.path / name, chunks, self.step)")
INVERTED_CLEAN = Patch(  # young temporaries (live writers') go, stale ones stay
    "realstate/exchange/stores/directory.py",
    "now - info.st_mtime >= older_than_s",
    "now - info.st_mtime < older_than_s")
TABLE = ("import json, pathlib, sys\n"
         "from realstate.processes.soak.crashes import crash_table\n"
         "from realstate.processes.soak.synthetic import soak_fragment\n"
         "if __name__ == '__main__':\n"
         "    table = crash_table(pathlib.Path(sys.argv[1]), soak_fragment(0, 0, 0))\n"
         "    print(json.dumps(table.to_json()))\n")


def test_a_put_and_a_clean_crashed_at_every_step_keep_the_invariants(tmp_path: Path) -> None:
    table = crash_table(tmp_path / "table", soak_fragment(0, 0, 0))
    assert table.blind == [] and table.violations == []
    assert set(table.steps["put"]) == set(PUT_STEPS) and table.steps["put"].count("block written") >= 2
    assert set(table.steps["clean"]) == set(CLEAN_STEPS)
    put = [c for c in table.crashes if c.operation == "put"]
    assert [c.number for c in put] == [*range(1, len(table.steps["put"]) + 1), 0] and all(c.killed for c in put)
    # a crash before the rename leaves the killed writer's temporary, after it none
    assert {c.step: c.temporaries_left for c in put} == {
        "temporary opened": 1, "block written": 1, "flushed": 1, "fsynced": 1, "renamed": 0,
        "directory synced": 0, "ran to completion": 0}
    controls = {c.operation: c.violations for c in table.controls}
    assert any("torn file under the final name" in v for v in controls["put under the final name"])
    assert controls["clean with age 0"] == ["a live writer's temporary was removed"]


def test_a_store_step_hook_sees_every_write_and_rename(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s", create=True)
    steps: list[str] = []
    store.step, store.write_block = steps.append, 1000
    assert store.put(soak_fragment(0, 0, 1))
    assert steps[0] == "temporary opened" and steps[-3:] == ["fsynced", "renamed", "directory synced"]
    assert steps.count("block written") >= 2


@pytest.mark.audit  # the soak command catches both in a default test (tests/test_soak.py)
@pytest.mark.parametrize("patch, says", [
    pytest.param(FINAL_NAME, "torn file under the final name", id="write-under-final-name"),
    pytest.param(INVERTED_CLEAN, "a live writer's temporary was removed", id="inverted-clean-age")])
def test_the_crash_table_catches_a_planted_store(patch: Patch, says: str, tmp_path: Path) -> None:
    scratch = ScratchCopy(tmp_path / "scratch").apply(patch)
    out = scratch.python(TABLE.replace("sys.argv[1]", repr(str(tmp_path / "table"))), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    table = json.loads(out.stdout.splitlines()[-1])
    assert any(says in v for v in table["violations"]), table
