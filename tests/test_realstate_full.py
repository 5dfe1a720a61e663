"""Full published geometries with seeded weights: slow (tens of seconds to minutes, GBs of RAM).

Not run by default; run with ``python -m pytest -m full``."""

import pytest

from realstate.replay.runner import run_replay
from realstate.replay.settings import ReplaySettings
from spec import Outcome

pytestmark = pytest.mark.full


@pytest.mark.parametrize("geometry", ["qwen3-1.7b", "qwen3-4b"])
def test_replay_on_published_geometry(geometry):
    report = run_replay(ReplaySettings(geometry=geometry, agents=2, latent_steps=1, decode_tokens=1,
                                       fidelity_offsets=(1, 30000)))
    assert [r.check for r in report.results if r.outcome is not Outcome.HOLDS] == []
    model = report.data["model"]
    assert model["weights_source"] == "seeded" and model["head_dim"] == 128 and model["kv_heads"] == 8
