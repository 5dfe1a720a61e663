"""The RoPE decoder family: every supported architecture on a tiny seeded instance (agents,
render, decode == generate, fidelity), static rope scalings read as the model applies them, the
refused configs (exit 2 naming the field, through the command line), the cache adapter, and
planted bugs in the architecture table caught by the product's own command."""

import re

import pytest
import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from audit.scratch import Patch, ScratchCopy
from canonmerge.cli import main
from realstate.kernel.adapter import cache_from_tensors
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import canonical_render
from realstate.models.agents import run_agents
from realstate.models.architectures import ARCHITECTURES, architecture_of, probe_positions
from realstate.models.continuation import greedy_continue
from realstate.models.geometry import GEOMETRIES
from realstate.models.loaded import from_model
from realstate.models.seeded import load_seeded
from realstate.replay.fidelity import fidelity
from spec import InputError
from tests.realstate_helpers import bits, random_fragment, tiny_fingerprint

TINY_BY_ARCH = {g.architecture: g.name for g in GEOMETRIES.values() if g.name.endswith("-tiny")}


def test_every_supported_architecture_has_a_tiny_geometry():
    assert set(TINY_BY_ARCH) == set(ARCHITECTURES)


def _decode_equals_generate(lm, rendered, prompt, k=4):
    ours = greedy_continue(lm, rendered.to_cache(), prompt, k)
    total = rendered.tokens + len(prompt)
    ids = torch.cat([torch.zeros(1, rendered.tokens, dtype=torch.long), torch.tensor([prompt])], dim=1)
    generated = lm.model.generate(input_ids=ids, cache=rendered.to_cache(), max_new_tokens=k, do_sample=False,
                                  attention_mask=torch.ones(1, total, dtype=torch.long), pad_token_id=0)
    return tuple(generated[0, total:].tolist()) == ours.tokens


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_tiny_seeded_instance_runs_agents_renders_and_decodes_like_generate(arch):
    lm = load_seeded(TINY_BY_ARCH[arch])
    assert lm.fingerprint.architecture == arch and type(lm.model).__name__ == arch
    assert lm.fingerprint.inv_freq == tuple(lm.rotary.inv_freq.double().tolist())
    runs = run_agents(lm, 2, latent_steps=1)  # each run checks its captured pre-RoPE keys
    a, b = (r.fragment for r in runs)
    rendered = canonical_render([a, b])
    assert rendered.digest() == canonical_render([b, a]).digest()
    assert _decode_equals_generate(lm, rendered, [11, 12, 13])
    row = fidelity(lm, runs[1], [1000])[0]
    assert min(row.rope_min_cosine) >= 0.9999


def _tiny_llama(rope_parameters, max_positions=256):
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, vocab_size=100, head_dim=32, max_position_embeddings=max_positions,
                         rope_parameters=rope_parameters)
    return LlamaForCausalLM(config).to(torch.bfloat16)


STATIC = {
    "linear": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e4},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64, "rope_theta": 1e4},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "rope_theta": 1e4},
}


@pytest.mark.parametrize("rope_type", sorted(STATIC))
def test_static_rope_scaling_is_recorded_as_the_model_applies_it(rope_type):
    model = _tiny_llama(STATIC[rope_type])
    plain = _tiny_llama({"rope_type": "default", "rope_theta": 1e4})
    default = tuple(plain.model.rotary_emb.inv_freq.double().tolist())
    lm = from_model(model)
    fp = lm.fingerprint
    assert fp.inv_freq == tuple(model.model.rotary_emb.inv_freq.double().tolist()) != default
    scaling = model.model.rotary_emb.attention_scaling
    assert fp.architecture == f"LlamaForCausalLM rope={rope_type} attention_scaling={scaling!r}"
    assert (scaling != 1.0) == (rope_type == "yarn")
    runs = run_agents(lm, 1, latent_steps=0)
    assert min(fidelity(lm, runs[0], [200])[0].rope_min_cosine) >= 0.9999


def test_default_rope_keeps_the_plain_class_name_so_existing_fingerprints_do_not_change():
    assert load_seeded("qwen3-tiny").fingerprint.architecture == "Qwen3ForCausalLM"


def test_probe_positions_reach_the_last_position():
    assert probe_positions(8192)[-1] == 8191 and {0, 1, 4095} <= set(probe_positions(8192))


# --- refusals: exit 2 through the command line, naming the config field --------------------------

def _llama(**fields):
    base = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, vocab_size=100, head_dim=32, max_position_embeddings=256)
    return LlamaConfig(**{**base, **fields})


def _auto(model_type, **fields):
    from transformers import AutoConfig

    return AutoConfig.for_model(model_type, **fields)


REFUSED = {
    "dynamic-ntk": (lambda: _llama(rope_parameters={"rope_type": "dynamic", "factor": 2.0}),
                    "rope_parameters.rope_type='dynamic'"),
    "longrope": (lambda: _llama(rope_parameters={"rope_type": "longrope", "short_factor": [1.0] * 16,
                                                 "long_factor": [4.0] * 16, "original_max_position_embeddings": 64}),
                 "rope_parameters.rope_type='longrope'"),
    "partial-rotary": (lambda: _llama(partial_rotary_factor=0.5), "rope_parameters.partial_rotary_factor=0.5"),
    "mrope": (lambda: _llama(rope_parameters={"rope_type": "default", "mrope_section": [4, 6, 6]}),
              "rope_parameters.mrope_section"),
    "qwen2-sliding": (lambda: _auto("qwen2", use_sliding_window=True, max_window_layers=1, num_hidden_layers=2),
                      "use_sliding_window=True"),
    "qwen3-mixed-layers": (lambda: _auto("qwen3", use_sliding_window=True, max_window_layers=1, num_hidden_layers=2),
                           "layer_types=['full_attention', 'sliding_attention']"),
    "mistral-window": (lambda: _auto("mistral"), "sliding_window=4096"),
    "gptj-interleaved": (lambda: _auto("gptj"), "rotary_dim=64"),
    "falcon-alibi": (lambda: _auto("falcon", alibi=True), "alibi=True"),
    "gpt2-absolute": (lambda: _auto("gpt2"), "is not a supported decoder"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_config_exits_2_through_the_cli_naming_the_field(case, tmp_path, capsys):
    make, field = REFUSED[case]
    make().save_pretrained(tmp_path)
    code = main(["realstate", "--checkpoint", str(tmp_path), "--agents", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--checkpoint {tmp_path}: does not fit" in err and field in err


def test_refusal_lists_every_field_that_does_not_fit():
    with pytest.raises(InputError, match="use_sliding_window=True.*sliding_window=4096.*layer_types="):
        architecture_of(_auto("qwen3", use_sliding_window=True, max_window_layers=1, num_hidden_layers=2))


def test_library_errors_name_the_argument_and_the_cli_names_the_flag(capsys):
    from realstate.replay.settings import ReplaySettings
    from spec import ArgumentError

    with pytest.raises(ArgumentError, match=r"^agents=7 must be an integer in 1\.\.6"):
        ReplaySettings(agents=7).validate()
    assert main(["realstate", "--agents", "7"]) == 2
    assert "--agents 7: must be an integer in 1..6" in capsys.readouterr().err


# --- the cache adapter: both directions, public cache API only -----------------------------------

def test_adapter_round_trips_bits_and_never_aliases_the_render():
    fp = tiny_fingerprint()
    rendered = canonical_render([random_fragment(fp, 3, seed=1), random_fragment(fp, 2, seed=2)])
    cache = cache_from_tensors(rendered.keys, rendered.values)
    assert isinstance(cache, DynamicCache) and cache.get_seq_length() == 5 and len(cache.layers) == fp.layers
    back = Fragment.from_cache(cache, fp, start=0)
    assert torch.equal(bits(back.keys), bits(rendered.keys)) and torch.equal(bits(back.values), bits(rendered.values))
    cache.layers[0].keys.zero_()
    assert rendered.digest() == canonical_render([random_fragment(fp, 3, seed=1),
                                                  random_fragment(fp, 2, seed=2)]).digest()


def test_adapter_refuses_sliding_layers_and_mismatched_values():
    from transformers.cache_utils import DynamicSlidingWindowLayer

    fp = tiny_fingerprint()
    frag = random_fragment(fp, 3, seed=1)
    cache = cache_from_tensors(frag.keys, frag.values)
    cache.layers[1].values = cache.layers[1].values[:, :, :2]
    with pytest.raises(InputError, match="layer 1: values"):
        Fragment.from_cache(cache, fp)
    sliding = DynamicCache()
    sliding.layers = [DynamicSlidingWindowLayer(sliding_window=2) for _ in range(fp.layers)]
    for i, layer in enumerate(sliding.layers):
        layer.update(frag.keys[i].unsqueeze(0), frag.values[i].unsqueeze(0))
    with pytest.raises(InputError, match="sliding-window layer"):
        Fragment.from_cache(sliding, fp)


# --- planted bugs in the architecture code, caught by the product's own command ------------------

def test_wrong_pre_rope_module_in_the_table_is_caught_by_canonmerge_realstate(tmp_path):
    copy = ScratchCopy(tmp_path / "copy").apply(Patch(
        "realstate/models/architectures.py",
        'Architecture("LlamaForCausalLM", "llama", "LlamaConfig", "transformers.models.llama.modeling_llama",\n'
        '                     pre_rope_keys="k_proj")',
        'Architecture("LlamaForCausalLM", "llama", "LlamaConfig", "transformers.models.llama.modeling_llama",\n'
        '                     pre_rope_keys="v_proj")'))
    out = copy.run("realstate", "--geometry", "llama-tiny", "--agents", "1", "--latent-steps", "0")
    assert out.returncode == 2, out.stderr
    assert "captured from self_attn.v_proj of LlamaForCausalLM" in out.stderr and "do not reproduce" in out.stderr


def test_a_length_dependent_rope_past_the_field_table_is_caught_by_the_rotary_probe(tmp_path):
    """Planted: 'longrope' listed as a fixed-frequency type; loading must still refuse it."""
    model = _tiny_llama({"rope_type": "longrope", "short_factor": [1.0] * 16, "long_factor": [4.0] * 16,
                         "original_max_position_embeddings": 64, "rope_theta": 1e4})
    model.save_pretrained(tmp_path / "ckpt")
    copy = ScratchCopy(tmp_path / "copy").apply(Patch(
        "realstate/models/architectures.py", 'STATIC_ROPE_TYPES = ("default", "linear", "llama3", "yarn")',
        'STATIC_ROPE_TYPES = ("default", "linear", "llama3", "yarn", "longrope")'))
    out = copy.run("realstate", "--checkpoint", str(tmp_path / "ckpt"), "--agents", "1")
    assert out.returncode == 2, out.stderr
    assert re.search(r"cos/sin at position \d+ are not cos/sin\(position x inv_freq\)", out.stderr)
