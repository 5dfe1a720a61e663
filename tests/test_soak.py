"""``canonmerge soak``: a tiny run with every fault kind converges (exit 0), every fault kind
lands mid-operation, and its instruments (the canary, the crash table, the power-loss model)
report that they could see; the same harness run on scratch copies with bugs planted in the
source fails (exit 1): anti-entropy that skips a fragment, a judge that reads the acknowledged
set back from the stores (seen by the canary), stores that write under the final name or clean
live temporaries (seen by the crash table), a clean of foreign entries that deletes a nested
store (seen by the hostile neighbour's verdict) and a store that skips its directory fsync (seen
by the power-loss model).  The default-size run is behind the ``soak`` marker (``python -m
pytest -m soak``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.scratch import Patch, ScratchCopy
from canonmerge.cli import main
from realstate.processes.soak.neighbour import (
    EVERY_REPLICA,
    HEADER_THROUGH_LINK,
    ODD_NESTED_STORE,
    LISTED_THEN_GONE,
    MISSING_STORE,
    ODD_MARKER,
)
from realstate.processes.soak.nemesis import plan_faults
from realstate.processes.soak.settings import FAULT_KINDS, SoakSettings
from realstate.processes.soak.synthetic import soak_fragment
from tests.test_store_crash import FINAL_NAME, INVERTED_CLEAN

JUDGE_FROM_STORES = Patch(  # the acknowledged set read back from the stores after the fact
    "realstate/processes/soak/judge.py",
    "    books = read_ledger(ledger)\n",
    "    books = {r[\"replica\"]: set(r[\"ids\"]) for r in rows}\n")
SMALL = ["--replicas", "2", "--s3-replicas", "0", "--agents", "2", "--fragments", "2", "--gossipers", "1",
         "--merges", "2", "--tokens", "4", "8", "--json"]
NEIGHBOUR_CONTROLS = (MISSING_STORE, ODD_MARKER, EVERY_REPLICA, LISTED_THEN_GONE, HEADER_THROUGH_LINK, ODD_NESTED_STORE)
TINY = ["--replicas", "2", "--s3-replicas", "1", "--agents", "1", "--fragments", "3", "--gossipers", "1",
        "--merges", "4", "--faults", "7", "--tokens", "4", "16", "--max-seconds", "240"]


def test_the_fault_plan_is_seeded_bounded_and_spread_over_the_kinds() -> None:
    settings = SoakSettings(faults=14, merges=10)
    plan = plan_faults(settings)
    assert plan == plan_faults(settings)  # reproducible from the seed
    assert plan.counts == {k: 2 for k in FAULT_KINDS}
    assert len(plan.planted_at) == 2 and max(plan.planted_at) < settings.agents * settings.fragments + 12
    assert len(plan.schedule) == 10 + 2  # the duplicates are extra deliveries
    assert all(dst != src for dst, src in plan.schedule)
    assert len(plan.kill_puts) == 2 and max(plan.kill_puts) < settings.agents * settings.fragments
    first = min(plan.kill_puts.values())  # kills spread over the steps of a write, from a seeded step
    assert sorted(plan.kill_puts.values()) == [first, first + 1] and 1 <= first <= 6
    assert len({min(plan_faults(SoakSettings(seed=n)).kill_puts.values()) for n in range(12)}) > 1
    assert len(plan.marks) == len(plan.schedule)
    assert sum(m.count("duplicate-merge") for m in plan.marks) == 2
    assert sum(m.count("reorder-merges") for m in plan.marks) == 2
    no_s3 = plan_faults(SoakSettings(s3_replicas=0, faults=10))
    assert "restart-endpoint" not in no_s3.counts and sum(no_s3.counts.values()) == 10
    all_s3 = plan_faults(SoakSettings(replicas=2, s3_replicas=2, faults=10))
    assert "hostile-neighbour" not in all_s3.counts and sum(all_s3.counts.values()) == 10
    a, b = soak_fragment(0, 1, 2), soak_fragment(0, 1, 2)
    assert a.content_id == b.content_id != soak_fragment(1, 1, 2).content_id  # same bits everywhere


def test_bad_soak_flags_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, says in ((["--replicas", "1"], "--replicas"), (["--s3-replicas", "5"], "--s3-replicas"),
                       (["--tokens", "9", "3"], "--tokens 3: must be an integer in 9.."),
                       (["--fault", "meteor"], "--fault meteor: must be one of"),
                       (["--replicas", "2", "--s3-replicas", "2", "--fault", "hostile-neighbour"],
                        "needs at least one directory replica")):
        assert main(["soak", *argv, "--json"]) == 2
        document = json.loads(capsys.readouterr().out)
        assert document["exit_code"] == 2 and says in document["error"]["message"]


def test_a_tiny_soak_with_every_fault_kind_converges(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["soak", *TINY, "--json"])
    report = json.loads(capsys.readouterr().out)
    data = report["parts"][0]["data"]
    assert code == 0, (data["errors"], data.get("verdict"))
    assert {r["claim"]: r["outcome"] for r in report["parts"][0]["results"]} == {"C7": "holds", "C2": "holds"}
    assert all(i["ok"] for i in data["instruments"].values()), data["instruments"]
    assert data["faults"] == {k: 1 for k in FAULT_KINDS}  # every kind injected
    assert data["faults_mid_operation"] == {k: 1 for k in FAULT_KINDS}  # and each landed mid-operation
    assert data["canary"]["seen"] and data["canary"]["reported_lost"] == [data["canary"]["lost_write"]]
    assert data["ledger_entries"] == 3 and data["crash_table"]["blind"] == []
    assert data["power_loss"]["blind"] == [] and data["power_loss"]["violations"] == []
    assert data["neighbour"] == {"planted": 1, "replicas": 1, "violations": [], "ok": True,
                                 "controls": {name: "seen" for name in NEIGHBOUR_CONTROLS}}
    assert data["verdict"]["sets"] == data["verdict"]["digests"] == 1
    assert data["verdict"]["acknowledged"] == 3 and data["verdict"]["lost"] == []
    assert data["operations"]["put acknowledged"] == 3
    assert {r["kind"] for r in data["replicas"]} == {"directory", "s3"}


def test_the_soak_fails_when_anti_entropy_skips_a_fragment(tmp_path: Path) -> None:
    scratch = ScratchCopy(tmp_path / "scratch").apply(Patch(
        "realstate/exchange/stores/anti_entropy.py",
        "missing = sorted((cid, size) for cid, size in listed.items() if cid not in present)",
        "missing = sorted((cid, size) for cid, size in listed.items() if cid not in present)[1:]"))
    out = scratch.run("soak", "--replicas", "2", "--s3-replicas", "0", "--agents", "2", "--fragments", "2",
                      "--gossipers", "1", "--merges", "2", "--faults", "0", "--tokens", "4", "8", "--json",
                      timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    rows = _rows(out.stdout)
    converge = rows["soak: real processes converge under faults"]
    assert converge["outcome"] == "fails" and "2 set(s)" in converge["figure"]
    # acknowledged puts never reached the other replica
    assert rows["soak: every acknowledged put is present on every replica"]["outcome"] == "fails"
    assert "Traceback" not in out.stderr


def _rows(stdout: str) -> dict[str, dict]:
    return {r["check"]: r for r in json.loads(stdout)["parts"][0]["results"]}


DURABLE = "soak: every acknowledged put is present on every replica"


def test_a_judge_without_books_and_planted_stores_are_caught_by_the_instruments(tmp_path: Path) -> None:
    """Three plants in one scratch run, each seen by its own instrument: the judge reading the
    acknowledged set from the stores (the canary), a store writing under the final name and a
    clean with its age test inverted (the crash table, by the invariant each one breaks)."""
    scratch = ScratchCopy(tmp_path / "scratch").apply(JUDGE_FROM_STORES, FINAL_NAME, INVERTED_CLEAN)
    out = scratch.run("soak", *SMALL, "--faults", "0", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    durable = _rows(out.stdout)[DURABLE]
    assert durable["outcome"] == "fails" and "blind instrument: the soak judge" in durable["figure"]
    assert durable["details"]["canary"]["reported_lost"] == []
    assert durable["details"]["lost"] == []  # without the canary the planted judge finds nothing lost
    crashes = durable["details"]["crash_table"]
    assert not crashes["ok"] and "crash table:" in durable["figure"]
    for says in ("torn file under the final name", "a live writer's temporary was removed"):
        assert any(says in v for v in crashes["violations"]), (says, crashes)
    assert "Traceback" not in out.stderr


@pytest.mark.audit
@pytest.mark.parametrize("patch, says", [
    pytest.param(FINAL_NAME, "torn file under the final name", id="write-under-final-name"),
    pytest.param(INVERTED_CLEAN, "a live writer's temporary was removed", id="inverted-clean-age")])
def test_the_soak_catches_a_planted_store(patch: Patch, says: str, tmp_path: Path) -> None:
    scratch = ScratchCopy(tmp_path / "scratch").apply(patch)
    out = scratch.run("soak", *SMALL, "--faults", "2", "--fault", "kill-put", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    durable = _rows(out.stdout)[DURABLE]
    crashes = durable["details"]["crash_table"]
    assert durable["outcome"] == "fails" and any(says in v for v in crashes["violations"])
    assert "Traceback" not in out.stderr


REMOVES_NESTED = Patch("realstate/exchange/stores/directory.py",  # clean --foreign deletes a nested store
                       "                    if nested is not None:\n", "                    if nested is None:\n")
SKIPS_DIRECTORY_SYNC = Patch("realstate/exchange/stores/directory.py",  # no directory fsync on POSIX
                             '        if os.name != "posix":\n', '        if os.name == "posix":\n')


@pytest.mark.audit
def test_a_weakened_foreign_clean_and_a_skipped_directory_sync_are_caught(tmp_path: Path) -> None:
    """Two plants in one scratch run, each seen by its own check: the neighbour's verdict (C7)
    and the power-loss model (C2, where the crash table also finds the step never reported)."""
    scratch = ScratchCopy(tmp_path / "scratch").apply(REMOVES_NESTED, SKIPS_DIRECTORY_SYNC)
    out = scratch.run("soak", *SMALL, "--faults", "1", "--fault", "hostile-neighbour", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    rows = _rows(out.stdout)
    converge = rows["soak: real processes converge under faults"]
    assert converge["outcome"] == "fails" and "hostile neighbour:" in converge["figure"]
    assert any("clean --foreign" in v for v in converge["details"]["neighbour"]["violations"])
    durable = rows[DURABLE]
    assert durable["outcome"] == "fails" and "power loss: power lost after the put returned" in durable["figure"]
    assert not durable["details"]["power_loss"]["ok"]
    assert "Traceback" not in out.stderr


@pytest.mark.soak
def test_the_default_soak_converges() -> None:
    """The default run (about a minute on 2 cores): ``python -m pytest -m soak``."""
    assert main(["soak"]) == 0
