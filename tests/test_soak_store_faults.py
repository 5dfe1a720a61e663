"""The soak's hostile neighbour and power-loss model, on their own (fast): a correct directory
store passes both; the store's guards weakened in its source (a mutant of directory.py loaded
from the patched text in this process) are each reported by the neighbour's verdict, and the
directory sync skipped is reported by the power-loss model.  The crash states are checked
against states written out by hand from the POSIX rules.  The soak command itself catching
such plants is in tests/test_soak.py (``-m audit``)."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from realstate.exchange.stores import DirectoryStore, directory
from realstate.processes.soak import neighbour, power
from realstate.processes.soak.neighbour import neighbour_verdict, plant, tree_digest
from realstate.processes.soak.power import (
    NO_DIRECTORY_SYNC,
    RENAME_BEFORE_SYNC,
    SYNC_AFTER_RENAME,
    SYNC_BEFORE_RENAME,
    CrashState,
    crash_states,
    power_table,
)
from realstate.processes.soak.settings import FragmentShape
from realstate.processes.soak.synthetic import soak_fragment
from spec import content_id_hex

SHAPE = FragmentShape(min_tokens=4, max_tokens=8)
DIRECTORY = "realstate/exchange/stores/directory.py"
FOLLOWS_INTO_LINKS = ("os.fwalk(directory, follow_symlinks=False, onerror=problems.append)",
                      "os.fwalk(directory, follow_symlinks=True, onerror=problems.append)")
REMOVES_NESTED = ("                    if why is not None:\n", "                    if why is None:\n")
READS_THROUGH_LINKS = ("load_fragment(path, self.limits, follow_symlinks=False)",
                       "load_fragment(path, self.limits, follow_symlinks=True)")
SKIPS_DIRECTORY_SYNC = ('        if os.name != "posix":\n', '        if os.name == "posix":\n')


def _patched_store(patch: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> type[DirectoryStore]:
    """DirectoryStore as directory.py would define it with ``patch`` applied to its source."""
    source = Path(directory.__file__).read_text()
    assert source.count(patch[0]) == 1
    module = types.ModuleType("patched_directory")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source.replace(*patch), DIRECTORY, "exec"), module.__dict__)
    return module.DirectoryStore


def _replica(root: Path) -> tuple[DirectoryStore, list[dict[str, Any]]]:
    store = DirectoryStore(root / "replica", create=True)
    for j in range(2):
        store.put(soak_fragment(0, 0, j, SHAPE))
    return store, [{"replica": str(store.path), "ids": sorted(content_id_hex(c) for c in store.listing())}]


def _planted(root: Path, store: DirectoryStore, count: int = 1) -> list[Any]:
    return [plant(store.path, root / f"outside-{k}", soak_fragment(0, 9 + k, 0, SHAPE), str(k)) for k in range(count)]


def test_a_correct_store_ignores_the_neighbour_and_cleans_exactly_what_it_may(tmp_path: Path) -> None:
    store, rows = _replica(tmp_path)
    fragments = store.listing()
    planted = _planted(tmp_path, store, 2)
    assert store.listing() == fragments  # none of it is listed
    verdict = neighbour_verdict(planted, rows)
    assert verdict == {"planted": 2, "replicas": 1, "violations": [], "ok": True}
    for p, digest in planted:
        assert not any(os.path.lexists(e) for e in p.removable)  # clean --foreign removed them
        assert tree_digest([Path(p.nested), Path(p.outside)]) == {
            k: v for k, v in digest.items() if k.startswith((p.nested, p.outside))}
    assert store.foreign() == [(p.nested, "a directory") for p, _ in planted]
    assert store.listing() == fragments


def test_the_tree_digest_reads_links_and_never_follows_them(tmp_path: Path) -> None:
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "f").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "target", target_is_directory=True)
    found = tree_digest([tmp_path / "link", tmp_path / "gone"])
    assert found == {str(tmp_path / "link"): f"link to {tmp_path / 'target'}", str(tmp_path / "gone"): "absent"}


def test_a_neighbour_entry_changed_during_the_run_is_reported(tmp_path: Path) -> None:
    store, rows = _replica(tmp_path)
    planted = _planted(tmp_path, store)
    os.unlink(planted[0][0].file)  # what a store that deletes foreign entries by itself would do
    verdict = neighbour_verdict(planted, rows)
    assert not verdict["ok"] and any("changed during the run" in v for v in verdict["violations"])


def test_the_link_read_as_a_fragment_is_reported(tmp_path: Path) -> None:
    store, rows = _replica(tmp_path)
    planted = _planted(tmp_path, store)
    rows[0]["ids"].append(planted[0][0].link_id)  # a listing that followed the link
    verdict = neighbour_verdict(planted, rows)
    assert not verdict["ok"] and any("was read as a fragment" in v for v in verdict["violations"])


@pytest.mark.parametrize("patch, says", [
    pytest.param(FOLLOWS_INTO_LINKS, "not exactly the link, file and directory",
                 id="nested-store-search-follows-links"),
    pytest.param(REMOVES_NESTED, "touched the nested store", id="clean-foreign-removes-nested-store"),
    pytest.param(READS_THROUGH_LINKS, "get followed the link", id="read-follows-links"),
    pytest.param(("n != MARKER_NAME and not TEMP_NAME.fullmatch(n)", "n != MARKER_NAME and TEMP_NAME.fullmatch(n)"),
                 "created over a neighbour's directory", id="create-over-foreign-files"),
    pytest.param(("n != MARKER_NAME and not TEMP_NAME.fullmatch(n)", "n != MARKER_NAME or not TEMP_NAME.fullmatch(n)"),
                 "only a killed creator's temporary", id="create-refuses-a-killed-creator"),
])
def test_a_weakened_guard_is_reported_by_the_neighbour_verdict(patch: tuple[str, str], says: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neighbour, "DirectoryStore", _patched_store(patch, monkeypatch))
    store, rows = _replica(tmp_path)
    verdict = neighbour_verdict(_planted(tmp_path, store), rows)
    assert not verdict["ok"] and any(says in v for v in verdict["violations"]), verdict


PUT = ["temporary opened", "block written", "block written", "flushed", "fsynced", "renamed", "directory synced"]


def test_crash_states_follow_the_posix_rules() -> None:
    """Written out by hand: the file's blocks are durable from the fsync on, the rename from the
    directory's fsync on; before that, any prefix of the written blocks, the rename or not."""
    none, whole, lost = CrashState(False, 0), CrashState(True, 2), [CrashState(True, b) for b in (0, 1, 2)]
    assert crash_states(PUT) == [{none}, {none}, {none}, {none}, {none}, {none}, {none, whole}, {whole}]
    no_dir_sync = crash_states(PUT[:-1])
    assert no_dir_sync[-1] == {none, whole}  # the put returned, and the rename may be gone
    renamed_early = crash_states(["temporary opened", "block written", "block written", "renamed",
                                  "directory synced"])
    assert renamed_early[-2] == {none, *lost} and renamed_early[-1] == set(lost)
    sync_before_rename = crash_states(["block written", "directory synced", "renamed"])
    assert sync_before_rename[-1] == {CrashState(False, 0), CrashState(True, 0), CrashState(True, 1)}
    synced_after_rename = crash_states(["block written", "block written", "renamed", "fsynced", "directory synced"])
    assert synced_after_rename[-3:] == [{none, *lost}, {none, whole}, {whole}]  # torn only while the rename may be lost


def test_the_directory_put_survives_power_loss_and_the_controls_are_reported(tmp_path: Path) -> None:
    table = power_table(tmp_path, soak_fragment(0, 3, 0, SHAPE))
    assert table.violations == [] and table.blind == []
    assert table.put.trace[-2:] == ["renamed", "directory synced"] and table.put.trace.count("block written") == 4
    controls = {c.store: c.violations for c in table.controls}
    assert any("acknowledged fragment is gone" in v for v in controls[NO_DIRECTORY_SYNC])
    assert any("acknowledged fragment is gone" in v for v in controls[SYNC_BEFORE_RENAME])
    assert any("torn file under the final name" in v for v in controls[RENAME_BEFORE_SYNC])
    assert all("after step 7 (renamed): torn file" in v for v in controls[SYNC_AFTER_RENAME])
    assert len(controls[SYNC_AFTER_RENAME]) == 4  # 0 to 3 of 4 blocks, in the states the rename may yet be lost


def test_a_control_that_breaks_more_than_its_own_invariant_is_blind(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The sync-before-rename control also leaving its file unsynced is still reported (torn as
    well as lost), but no longer shows only what it is there for: the table says so."""
    monkeypatch.setattr(power._SyncBeforeRenameStore, "_write_atomic", _unsynced_write_atomic)
    table = power_table(tmp_path, soak_fragment(0, 3, 0, SHAPE))
    assert table.violations == []
    assert table.blind == [f"negative control '{SYNC_BEFORE_RENAME}' was reported lost and torn, where its wrong "
                           "order is lost alone"]


def _unsynced_write_atomic(self: Any, name: str, chunks: Any) -> None:
    temp = self._write_temp(chunks, fsync=False)
    self._fsync_directory()
    os.replace(temp, self.path / name)
    self.step("renamed")


RENAMED_BRANCH_DROPPED = ("else {False, True} if renamed else", "else {False} if renamed else")


def test_a_model_that_drops_a_rename_not_yet_durable_is_blind_to_a_late_file_sync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = Path(power.__file__).read_text()
    assert source.count(RENAMED_BRANCH_DROPPED[0]) == 1
    module = types.ModuleType("patched_power")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source.replace(*RENAMED_BRANCH_DROPPED), power.__file__, "exec"), module.__dict__)
    table = module.power_table(tmp_path, soak_fragment(0, 3, 0, SHAPE))
    assert table.violations == []
    assert table.blind == [f"negative control '{SYNC_AFTER_RENAME}' was not reported by the invariants"]


def test_a_skipped_directory_sync_is_reported_by_the_power_loss_model(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    store_class = _patched_store(SKIPS_DIRECTORY_SYNC, monkeypatch)
    result = power.check_put(tmp_path, "patched", store_class, soak_fragment(0, 3, 0, SHAPE))
    assert "directory synced" not in result.trace
    assert any("acknowledged fragment is gone" in v for v in result.violations)


def test_a_violation_in_one_replica_is_kept_when_another_is_clean(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, rows = _replica(tmp_path / "a")
    second, more = _replica(tmp_path / "b")
    planted = _planted(tmp_path / "a", first) + _planted(tmp_path / "b", second)
    os.unlink(planted[0][0].file)  # the first replica judged breaks, the second is clean
    verdict = neighbour_verdict(planted, rows + more)
    assert verdict["replicas"] == 2 and not verdict["ok"]
    assert [v.split(":")[0] for v in verdict["violations"]] == [str(first.path)] * len(verdict["violations"])
