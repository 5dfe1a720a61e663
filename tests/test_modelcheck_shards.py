"""Sharded checking: the prefixes partition the schedules, and a run split over a process pool
(or Ray) gives the same verdict, counts and traces as the single-process run — also when a
planted bug is found in a worker, whose trace replays.

Kept small (the reference backend, one universe, N <= 4 with shards split by prefix where the
test forces it); the one Ray test starts a local Ray on loopback with two CPUs."""

from __future__ import annotations

from typing import Any

import pytest

import modelcheck
from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck import shards
from modelcheck.checks import Tallies, UniverseCheck
from modelcheck.reference import ReferenceBackend
from modelcheck.shards import BackendRecipe, Settings, c3_orderings, merge, perform, plan, prefixes
from modelcheck.trace_replay import replay
from modelcheck.universes import universe
from spec import Outcome
from tests.broken_backends import planted_reference

SMALL: dict[str, Any] = dict(max_arity=4, universes=["ties"], gossip=False, trace_dir=None)


def recipe(mutant: str | None = None) -> BackendRecipe:
    return BackendRecipe("tests.broken_backends:planted_reference", (mutant,), name="reference", mutant=mutant)


def verdict(report) -> list[tuple[Any, ...]]:
    """What must not depend on the engine: outcomes, counts, traces, tables."""
    results = [(r.claim, r.check, r.outcome, {k: v for k, v in r.details.items() if k != "traces"},
                [(t["universe"], t["ops"], t["expect"], t["expected"], t["observed"])
                 for t in r.details.get("traces", [])]) for r in report.results]
    keep = ("orderings_checked", "renders", "shards", "counts_per_n")
    return [results, [t.rows for t in report.tables], {k: report.data[k] for k in keep}]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_prefixes_partition_every_family_and_match_the_closed_forms(n):
    for length in range(0, min(n, 3) + 1):
        ps = prefixes(n, length, 2)
        perms = [en.render_expr(e) for p in ps for e in en.permutations(n, p)]
        trees = [en.render_expr(e) for p in ps for e in en.merge_trees(n, p)]
        redel = [en.render_expr(e) for p in ps for e in en.redeliveries(n, 2, p)]
        assert sorted(perms) == sorted(en.render_expr(e) for e in en.permutations(n))
        assert sorted(trees) == sorted(en.render_expr(e) for e in en.merge_trees(n))
        assert sorted(redel) == sorted(en.render_expr(e) for e in en.redeliveries(n, 2))
        assert len(set(perms)) == len(perms) and len(set(redel)) == len(redel)
        for p in ps:
            assert c3_orderings(n, 2, p) == (sum(1 for _ in en.permutations(n, p))
                                             + sum(1 for _ in en.merge_trees(n, p))
                                             + sum(1 for _ in en.redeliveries(n, 2, p)))


def test_shards_split_by_prefix_sum_to_the_whole_arity():
    """C3 at N = 4 run as one shard and as the shards of every 2-arrival prefix: same counts,
    same digests per family (the merge unites digests across shards)."""
    u = universe("ties")
    whole = UniverseCheck(ReferenceBackend(), u, Tallies(), backend_name="reference", mutant=None, redeliveries=1,
                          selected=P.ALL)
    row = whole.run_c3(4)
    settings = Settings(4, 1, "arrival", tuple(c.name for c in P.ALL), "reference", None)
    parts = [shards.Shard(k, "ties", "c3", 4, p, c3_orderings(4, 1, p)) for k, p in enumerate(prefixes(4, 2, 1))]
    results = [perform(ReferenceBackend(), shards.ShardTask(settings, s)) for s in parts]
    merged = merge(reversed(results), ["ties"])        # completion order does not matter
    (split,) = merged.rows["ties"]
    assert (split.permutations, split.trees, split.redeliveries) == (row.permutations, row.trees, row.redeliveries)
    assert sum(s.orderings for s in parts) == row.permutations + row.trees + row.redeliveries
    assert split.canonical_digests == row.canonical_digests == 1
    for check in (P.PERMUTATIONS, P.MERGE_TREES, P.REDELIVERIES):
        assert merged.tallies[check].checked == whole.tallies[check].checked


def test_the_plan_does_not_depend_on_the_engine_and_shards_are_ordered():
    settings = Settings(6, 1, "arrival", tuple(c.name for c in P.ALL), "reference", None)
    a, b = plan(["ties", "random"], settings), plan(["ties", "random"], settings)
    assert a == b and [s.index for s in a] == list(range(len(a)))
    six = [s for s in a if s.universe == "random" and s.kind == "c3" and s.n == 6]
    assert len(six) == 36 and sum(s.orderings for s in six) == c3_orderings(6, 1)


def test_process_pool_equals_single_process(tmp_path):
    one = modelcheck.run(ReferenceBackend(), **SMALL, workers=1)
    pool = modelcheck.run(None, **SMALL, workers=2, recipe=recipe())
    assert pool.data["engine"] == "process pool" and pool.data["workers"] == 2
    assert all(r.outcome is Outcome.HOLDS for r in one.results)
    assert verdict(pool) == verdict(one)


def test_a_planted_bug_found_in_a_worker_comes_back_as_the_same_replayable_trace():
    bug = "no-tie-break"
    one = modelcheck.run(planted_reference(bug), **SMALL, workers=1)
    pool = modelcheck.run(None, **SMALL, workers=2, recipe=recipe(bug))
    failed = [r for r in pool.results if r.outcome is Outcome.FAILS]
    assert failed and verdict(pool) == verdict(one)
    # every failing law row carries its traces; an instrument row has none (this test backend's
    # states iterate as (id, fragment) pairs, so its builds cannot be held to their schedules)
    traces = [t for r in failed if r.check not in {c.name for c in P.INSTRUMENTS} for t in r.details["traces"]]
    assert traces and all(t["mutant"] == bug for t in traces)
    for t in traces:
        assert replay(t, planted_reference(bug)).same_bytes
        assert not replay(t, ReferenceBackend()).reproduced     # the bug, not the trace, fails


def test_a_worker_running_other_code_is_refused(monkeypatch):
    from spec import InputError

    pinned = recipe().pinned()
    assert pinned.code == shards.code_digest(pinned.packages)
    forged = BackendRecipe(pinned.factory, pinned.args, "reference", None, ("spec",), "0" * 64)
    shards._BACKENDS.pop(forged, None)
    with pytest.raises(InputError, match="other code than the driver"):
        shards.perform_remote(forged, shards.GossipTask(Settings(1, 0, "arrival", (), "reference", None),
                                                        "ties", modelcheck.gossip.GossipConfig()))


@pytest.mark.parametrize("name", ["canonmerge_no_such_package", "math"])
def test_code_digest_refuses_what_is_not_an_importable_package(name):
    """Not importable, or a module without a package's folder: an input error naming it."""
    from spec import InputError

    with pytest.raises(InputError, match=f"package '{name}' is not importable here"):
        shards.code_digest([name])


@pytest.mark.ray
def test_ray_local_equals_single_process(monkeypatch):
    """Also: the local engine starts its own Ray, whatever cluster the environment names (ray.init()
    would otherwise join RAY_ADDRESS's, here one that does not answer)."""
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")
    one = modelcheck.run(planted_reference("no-tie-break"), **SMALL, workers=1)
    ray_run = modelcheck.run(None, **SMALL, engine="ray", workers=2, recipe=recipe("no-tie-break"))
    assert ray_run.data["engine"] == "ray"
    assert verdict(ray_run) == verdict(one)
    assert any(r.outcome is Outcome.FAILS for r in ray_run.results)
