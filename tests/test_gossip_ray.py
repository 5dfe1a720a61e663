"""The sharded gossip search with Ray actors as the owners of the hash partitions
(``gossip_ray``): its counts equal one process's on plain, reduced and folded configurations,
and an actor that dies is one line naming it.  On a local Ray (loopback): a two-node
``ray.cluster_utils.Cluster`` is not tested here (see docs/MODELCHECK.md)."""

import pytest

from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_search import search
from modelcheck.gossip_sharded import WorkerSpec, sharded_search
from modelcheck.reference import ReferenceBackend
from modelcheck.shards import BackendRecipe
from modelcheck.universes import universe

pytestmark = [pytest.mark.ray, pytest.mark.heavy]
RECIPE = BackendRecipe("modelcheck.reference:ReferenceBackend", (), name="reference")
TIES = universe("ties")


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False,
             log_to_driver=False)
    yield ray
    ray.shutdown()


def test_counts_equal_one_process_on_plain_reduced_and_folded(local_ray):
    from modelcheck.gossip_ray import RayWorkers

    for config in (GossipConfig(replicas=3, fragments=2, in_flight=1),
                   GossipConfig(replicas=3, fragments=2, in_flight=2, symmetry=True),
                   GossipConfig(replicas=3, fragments=2, in_flight=2, symmetry=True, fold_drops=True)):
        ray_run = sharded_search(RECIPE, TIES, config, 2, pool_of=RayWorkers)
        one = search(ReferenceBackend(), TIES, config)
        assert (ray_run.states, ray_run.transitions, ray_run.depth, ray_run.exhaustive) == \
               (one.states, one.transitions, one.depth, one.exhaustive)
        assert ray_run.violation is None and ray_run.fair_exchanges == one.fair_exchanges


def test_a_dead_actor_is_one_line_naming_it(local_ray):
    from modelcheck.gossip_ray import RayWorkers

    config = GossipConfig(replicas=2, fragments=1, in_flight=1)
    pool = RayWorkers([WorkerSpec(RECIPE, False, TIES, config, True, i, 2, None, None) for i in range(2)])
    try:
        local_ray.kill(pool.actors[1], no_restart=True)
        with pytest.raises(ChildProcessError, match="gossip shard actor 1 died"):
            pool.all("root")
    finally:
        pool.stop(at_once=True)
