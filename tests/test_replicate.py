"""``canonmerge replicate``: torch.distributed ranks (gloo on loopback) each deliver the same
fragments in their own order with re-deliveries and drops, and agree on one render digest; with
the render ordering by arrival (planted in the engine's source, on a scratch copy) they do not,
and the command fails.  Every run also proves its instruments could see: a canary rank that
renders differently must be reported by the same comparison of ranks, and the ranks' delivery
orders must differ, and faulty gathers built from the run's own data must each be rejected; a
comparison that checks each rank against itself, a schedule that gives every rank one order and
a comparison that no longer requires one set digest once the render digests agree (planted in
the source) are caught by those rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.scratch import Patch, ScratchCopy
from canonmerge.cli import main
from realstate.exchange.stores import DirectoryStore
from realstate.processes.replicate.faulty_gathers import NOT_FAULTY
from realstate.processes.replicate.rank import DROPPED, FIRST, REDELIVERY, RESENT, first_orders, schedule
from spec import CLAIMS
from tests.realstate_helpers import random_fragment, tiny_fingerprint

ARRIVAL_ORDER = Patch(  # the render keeps arrival order: a replica's bytes depend on its history
    "realstate/kernel/engine.py",
    "    sort=canonical_order,\n    frequencies=model_frequencies,\n    reencode=reencode_into,\n"
    "    collect=fragment_set,\n)",
    "    sort=lambda items, key: list(items),\n    frequencies=model_frequencies,\n    reencode=reencode_into,\n"
    "    collect=lambda fs: _Arrival({f.content_id: f for f in fs}.values()),\n)\n\n\n"
    "class _Arrival(list):\n"
    "    def merge(self, other):\n"
    "        return _Arrival({f.content_id: f for f in [*self, *other]}.values())\n")

BLIND_COMPARISON = Patch(  # each rank's verdict against itself, merged per rank: a disagreement never shows
    "realstate/processes/replicate/agreement.py",
    "    agree = len(digests) == 1 and len(sets) == 1 and len(gathered) == 1 and set(next(iter(gathered))) == digests\n"
    "    matches_launcher = digests == {launcher_digest}\n",
    "    agree = all(r[\"digest\"] == r[\"gathered_digests\"][r[\"rank\"]] for r in results)\n"
    "    matches_launcher = launcher_digest in digests\n")
SETS_OPTIONAL = Patch(  # one render digest suffices: the set and gather cross-checks become optional
    "realstate/processes/replicate/agreement.py",
    "    agree = len(digests) == 1 and len(sets) == 1 and",
    "    agree = len(digests) == 1 or len(sets) == 1 and")
ONE_ORDER = Patch(  # every rank delivers in rank 0's order
    "realstate/processes/replicate/rank.py",
    "order = first_orders(count, max(world, rank + 1), seed)[rank]",
    "order = first_orders(count, max(world, rank + 1), seed)[0]")


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = DirectoryStore(tmp_path_factory.mktemp("replicate") / "store", create=True)
    fp = tiny_fingerprint()
    for n in range(1, 7):
        store.put(random_fragment(fp, n, seed=70 + n, start=3 * n))
    return store.path


def test_every_rank_schedule_delivers_every_fragment_with_faults() -> None:
    for rank in range(4):
        deliveries = schedule(6, rank, seed=0, redeliveries=2, drops=1, world=4)
        kinds = [k for _, k in deliveries]
        assert sorted({i for i, k in deliveries if k in (FIRST, RESENT)}) == list(range(6))
        assert kinds.count(REDELIVERY) == 2 and kinds.count(DROPPED) == kinds.count(RESENT) == 1
        dropped = next(i for i, k in deliveries if k == DROPPED)
        assert kinds.index(DROPPED) < [i for i, _ in deliveries].index(dropped, kinds.index(DROPPED) + 1)
    orders = {tuple(i for i, k in schedule(6, r, 0, 0, 0, world=4)) for r in range(4)}
    assert len(orders) == 4  # the ranks really receive in different orders
    for count, world in ((1, 3), (2, 4), (3, 6), (3, 7)):  # as many distinct orders as there can be
        orders = first_orders(count, world, seed=5)
        assert len({tuple(o) for o in orders}) == min(world, [1, 1, 2, 6][count])
        assert all(sorted(o) == list(range(count)) for o in orders)
    assert "realstate" in CLAIMS["C7"].checked_by


def test_ranks_agree_on_real_model_caches_and_a_planted_bug_is_caught(
        synthetic_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replicate", "--ranks", "3", "--agents", "3", "--latent-steps", "0", "--json"])
    report = json.loads(capsys.readouterr().out)
    part = report["parts"][0]
    assert code == 0, part["data"]["problems"]
    (result,) = part["results"]
    assert (result["claim"], result["part"], result["outcome"]) == ("C7", "realstate", "holds")
    seen = part["data"]["instruments"]
    assert seen["canary"]["ok"] and len(seen["canary"]["digests"]) == 2
    assert (seen["delivery orders"]["distinct"], seen["delivery orders"]["needed"]) == (3, 3)
    ranks = part["data"]["ranks"]
    assert len(ranks) == 3 and len({r["digest"] for r in ranks}) == 1
    assert ranks[0]["digest"] == part["data"]["launcher_digest"]
    assert len({tuple(r["arrivals"]) for r in ranks}) > 1 and all(sorted(r["arrivals"]) == [0, 1, 2] for r in ranks)
    assert all(r["redeliveries"] == 2 and r["drops"] == 1 and r["backend"] == "gloo" for r in ranks)
    assert "SEEDED" in part["data"]["source"]
    code = main(["replicate", "--ranks", "2", "--store", str(synthetic_store), "--plant", "order-by-arrival",
                 "--json"])  # the engine preset, as data
    planted = json.loads(capsys.readouterr().out)["parts"][0]
    assert code == 1 and planted["results"][0]["outcome"] == "fails"
    assert planted["results"][0]["details"]["agree"] is False  # the ranks disagree; the canary is seen too
    assert planted["data"]["instruments"]["canary"]["ok"]


@pytest.mark.heavy  # the default tier's replicate run: test_ranks_agree_on_real_model_caches_...
def test_a_render_that_orders_by_arrival_makes_the_command_fail(synthetic_store: Path, tmp_path: Path) -> None:
    scratch = ScratchCopy(tmp_path / "scratch").apply(ARRIVAL_ORDER)
    out = scratch.run("replicate", "--ranks", "2", "--store", str(synthetic_store), "--json", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    (result,) = json.loads(out.stdout)["parts"][0]["results"]
    assert result["claim"] == "C7" and result["outcome"] == "fails"
    assert "2 render digest(s)" in result["figure"]
    assert "Traceback" not in out.stderr


@pytest.mark.heavy  # the default tier's replicate run: test_ranks_agree_on_real_model_caches_...
def test_a_blind_comparison_and_ranks_in_one_order_are_caught(synthetic_store: Path, tmp_path: Path) -> None:
    """Two plants in one scratch run, each seen by its own instrument (the ranks' verdict alone passes)."""
    scratch = ScratchCopy(tmp_path / "scratch").apply(BLIND_COMPARISON, ONE_ORDER)
    out = scratch.run("replicate", "--ranks", "2", "--store", str(synthetic_store), "--json", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    (result,) = json.loads(out.stdout)["parts"][0]["results"]
    assert result["outcome"] == "fails" and result["details"]["agree"] is True  # what the plants let through
    assert "blind instrument: the comparison of ranks" in result["figure"]
    assert "blind instrument: the delivery schedule" in result["figure"]
    orders = result["details"]["instruments"]["delivery orders"]
    assert (orders["distinct"], orders["needed"]) == (1, 2)
    assert "Traceback" not in out.stderr


@pytest.mark.heavy  # the default tier's replicate run: test_ranks_agree_on_real_model_caches_...
def test_a_comparison_that_skips_its_cross_checks_is_caught_by_the_faulty_gathers(
        synthetic_store: Path, tmp_path: Path) -> None:
    scratch = ScratchCopy(tmp_path / "scratch").apply(SETS_OPTIONAL)
    out = scratch.run("replicate", "--ranks", "2", "--store", str(synthetic_store), "--json", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    (result,) = json.loads(out.stdout)["parts"][0]["results"]
    seen = result["details"]["instruments"]
    assert result["outcome"] == "fails" and result["details"]["agree"] is True
    assert seen["canary"]["ok"] and seen["delivery orders"]["ok"]  # neither of the others sees it
    faulty = {n: f for n, f in seen["faulty gathers"]["controls"].items() if n != NOT_FAULTY}
    assert not seen["faulty gathers"]["ok"] and "accepted" in faulty.values()
    assert "blind instrument: the comparison of ranks (did not reject a faulty gather" in result["figure"]
    assert "Traceback" not in out.stderr


def test_bad_replicate_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [(["--ranks", "0"], "--ranks"), (["--backend", "nccl"], "--backend nccl: needs device cuda"),
             (["--plant", "nonsense"], "is not one of"), (["--store", str(tmp_path / "none")], "no such store"),
             (["--redeliveries", "-1"], "--redeliveries -1: must be an integer in 0..100")]
    for argv, says in cases:
        assert main(["replicate", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err
