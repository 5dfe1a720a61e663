"""The replay's decode report (batched decodes, the canonical text once, BagMerge diversity with
counts), the per-layer activation table and agents at non-zero starts, on the tiny seeded model
(fast); the same on real SmolLM2 weights is in test_realstate_arch_smollm2.py."""

import itertools
import json
import math

import pytest

from audit import Patch, ScratchCopy
from realstate.kernel.render import bag_render
from realstate.models.agents import run_agents
from realstate.models.continuation import greedy_continue, greedy_continue_many
from realstate.models.seeded import load_seeded
from realstate.replay import properties as P
from realstate.replay.activations import layer_activations, relative_gap
from realstate.replay.runner import run_replay
from realstate.replay.settings import ReplaySettings
from spec import InputError, Outcome

DECODE = "greedy decode identical for every permutation"


@pytest.fixture(scope="module")
def tiny():
    return load_seeded("qwen3-tiny")


@pytest.fixture(scope="module")
def runs(tiny):
    return run_agents(tiny, 3, latent_steps=1, starts=(0, 5, 40))


def test_a_batch_row_decodes_like_its_render_alone(tiny, runs):
    renders = [bag_render(p) for p in itertools.permutations([r.fragment for r in runs])]
    prompt = runs[0].prompt_ids[:5]
    alone = [greedy_continue(tiny, x.to_cache(), prompt, 3) for x in renders]
    batched = greedy_continue_many(tiny, [x.keys for x in renders], [x.values for x in renders], prompt, 3)
    assert batched == alone  # tokens and last-step logits bytes, row by row
    assert len(set(alone)) > 1  # the rows really differ: a batch that mixed rows would show


def test_batch_of_renders_of_different_lengths_is_refused(tiny, runs):
    a, b = runs[0].fragment, runs[1].fragment
    with pytest.raises(InputError, match="one shape"):
        greedy_continue_many(tiny, [a.keys, b.keys], [a.values, b.values], [1], 1)


def test_agents_encode_from_their_starts(tiny, runs):
    assert [r.fragment.start for r in runs] == [0, 5, 40]
    with pytest.raises(InputError, match="starts"):
        run_agents(tiny, 2, starts=(0, tiny.fingerprint.max_positions))


def test_replay_reports_decodes_with_counts_and_activations_per_layer(tiny):
    settings = ReplaySettings(agents=3, latent_steps=1, decode_tokens=2, fidelity_offsets=(100,),
                              agent_starts=(0, 5, 40))
    report = run_replay(settings, lm=tiny, checks=[P.DECODE, P.FIDELITY])
    assert all(r.outcome is Outcome.HOLDS for r in report.results), [r.figure for r in report.results]
    decode = next(r for r in report.results if r.check == DECODE)
    per_n = decode.details["decodes"]
    assert [x["orders"] for x in per_n] == [1, 2, 6]
    assert all(len(x["canonical"]) == 1 for x in per_n)
    assert sum(c["orders"] for c in per_n[-1]["bagmerge"]) == 6 and per_n[-1]["bagmerge"][0]["text"].startswith("ids ")
    tables = {t.title.split(" (")[0].split(" after")[0]: t for t in report.tables}
    decodes = tables["realstate: final agent's greedy decodes"]
    assert [row[0] for row in decodes.rows] == ["1", "2", "3"]
    assert sum(int(x.rsplit(" x", 1)[1]) for x in decodes.rows[-1][4].split("; ")) == 6
    layers = report.data["activations_per_layer"]
    assert len(layers) == tiny.fingerprint.layers
    assert all(x["rope_min_cosine"] >= 0.9999 and x["m_min_relative_gap"] > 0 for x in layers)
    assert [f["start"] for f in report.data["fragments"]] == [0, 5, 40]
    json.dumps(report.data)  # the --json report can carry it


def test_activations_find_a_planted_outlier_channel_and_the_closest_m(tiny, runs):
    planted = list(runs)
    keys = planted[1].pre_rope_keys.clone()
    keys[0, 1, 2, 3] = 1000.0  # layer 0, head 1, position 2, dim 3
    planted[1] = type(planted[1])(**{**planted[1].__dict__, "pre_rope_keys": keys})
    rows = layer_activations(planted)
    assert rows[0].channel == (1, 3) and rows[0].channel_max == 1000.0 and rows[0].channel_ratio > 10
    assert rows[0].rope_min_cosine is None  # no fidelity rows given: shown as '-', never as a pass
    m = [(r.name, r.fragment.order_value) for r in runs]
    middle = rows[tiny.fingerprint.layers // 2]
    assert middle.m_min_relative_gap == min(relative_gap(a, b) for (_, a), (_, b) in itertools.combinations(m, 2))
    assert relative_gap(0.0, 0.0) == 0.0 and relative_gap(1.0, 2.0) == 0.5 and math.isnan(relative_gap(1.0, math.nan))


def test_the_product_catches_a_batch_that_mixes_rows(tmp_path):
    """Planted in the source: every row of a batched decode reports row 0's decode.  The
    canonical decodes would all still agree; the rows decoded beside other renders catch it."""
    scratch = ScratchCopy(tmp_path)
    scratch.apply(Patch("realstate/models/continuation.py", "for t in tokens[b])", "for t in tokens[0])"))
    scratch.apply(Patch("realstate/models/continuation.py", "tensor_bytes(logits[b])", "tensor_bytes(logits[0])"))
    out = scratch.run("realstate", "--agents", "3", "--latent-steps", "0", "--decode-tokens", "2",
                      "--only", DECODE, "--json", timeout=600)
    assert out.returncode == 1, out.stderr[-2000:]
    rows = [r for c in json.loads(out.stdout)["claims"] for r in c["results"]]
    failing = [r for r in rows if r["outcome"] == "fails"]
    assert [r["check"] for r in failing] == [DECODE] and "DIFFER from the render decoded beside" in failing[0]["figure"]


def test_the_replay_decodes_every_render_of_an_arity_in_batches_of_one_row_count(tiny, monkeypatch):
    """At real sizes a batched decode's logits bytes can depend on the batch's row count (seen at
    the qwen3-1.7b geometry: 18 rows and 102 rows gave other bytes for one render), so every batch
    of an arity has the same row count: the last one is filled up with copies whose decodes are
    dropped, and the mixing check decodes its render in a batch of that count too."""
    import realstate.models.continuation as continuation
    import realstate.replay.context as replay

    calls: list[int] = []
    real = continuation.greedy_continue_many

    def counting(lm, keys, values, prompt, k):
        calls.append(len(keys))
        return real(lm, keys, values, prompt, k)

    monkeypatch.setattr(replay, "greedy_continue_many", counting)
    render = bag_render([r.fragment for r in run_agents(tiny, 3, latent_steps=0)])
    monkeypatch.setattr(replay, "DECODE_BATCH_BYTES", 4 * 2 * render.keys.nbytes)  # 4 rows a batch
    settings = ReplaySettings(agents=3, latent_steps=0, decode_tokens=2)
    report = run_replay(settings, lm=tiny, checks=[P.DECODE])
    assert [r.outcome for r in report.results] == [Outcome.HOLDS]
    # n = 1, 2: one batch of 1 and of 2 rows; n = 3: 6 orders in batches of 4 (the second filled
    # up), for the canonical and the BagMerge renders, then the two mixing checks at 4 rows
    assert calls == [1, 2, 4, 4, 4, 4, 4, 4]
