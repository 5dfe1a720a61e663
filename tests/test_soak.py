"""``canonmerge soak``: a tiny run with every fault kind converges (exit 0); the same harness run
on a scratch copy whose anti-entropy skips a fragment fails (exit 1) — the check can fail.
The default-size run is behind the ``soak`` marker (``python -m pytest -m soak``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.scratch import Patch, ScratchCopy
from canonmerge.cli import main
from realstate.processes.soak.nemesis import plan_faults
from realstate.processes.soak.settings import FAULT_KINDS, SoakSettings
from realstate.processes.soak.synthetic import soak_fragment

TINY = ["--replicas", "2", "--s3-replicas", "1", "--agents", "1", "--fragments", "3", "--gossipers", "1",
        "--merges", "4", "--faults", "6", "--tokens", "4", "16", "--max-seconds", "240"]


def test_the_fault_plan_is_seeded_bounded_and_spread_over_the_kinds() -> None:
    settings = SoakSettings(faults=12, merges=10)
    plan = plan_faults(settings)
    assert plan == plan_faults(settings)  # reproducible from the seed
    assert plan.counts == {k: 2 for k in FAULT_KINDS}
    assert len(plan.schedule) == 10 + 2  # the duplicates are extra deliveries
    assert all(dst != src for dst, src in plan.schedule)
    assert len(plan.kill_puts) == 2 and max(plan.kill_puts) < settings.agents * settings.fragments
    no_s3 = plan_faults(SoakSettings(s3_replicas=0, faults=10))
    assert "restart-endpoint" not in no_s3.counts and sum(no_s3.counts.values()) == 10
    a, b = soak_fragment(0, 1, 2), soak_fragment(0, 1, 2)
    assert a.content_id == b.content_id != soak_fragment(1, 1, 2).content_id  # same bits everywhere


def test_bad_soak_flags_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, says in ((["--replicas", "1"], "--replicas"), (["--s3-replicas", "5"], "--s3-replicas"),
                       (["--tokens", "9", "3"], "--tokens 3: must be an integer in 9.."), (["--fault", "meteor"], "invalid choice")):
        assert main(["soak", *argv, "--json"]) == 2
        document = json.loads(capsys.readouterr().out)
        assert document["exit_code"] == 2 and says in document["error"]["message"]


def test_a_tiny_soak_with_every_fault_kind_converges(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["soak", *TINY, "--json"])
    report = json.loads(capsys.readouterr().out)
    data = report["parts"][0]["data"]
    assert code == 0, (data["errors"], data.get("verdict"))
    assert {r["claim"]: r["outcome"] for r in report["parts"][0]["results"]} == {"C7": "holds", "C2": "holds"}
    assert data["faults"] == {k: 1 for k in FAULT_KINDS}  # every kind injected
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
    results = {r["claim"]: r for r in json.loads(out.stdout)["parts"][0]["results"]}
    assert results["C7"]["outcome"] == "fails" and "2 set(s)" in results["C7"]["figure"]
    assert results["C2"]["outcome"] == "fails"  # acknowledged puts never reached the other replica
    assert "Traceback" not in out.stderr


@pytest.mark.soak
def test_the_default_soak_converges() -> None:
    """The default run (about a minute on 2 cores): ``python -m pytest -m soak``."""
    assert main(["soak"]) == 0
