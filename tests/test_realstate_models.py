"""Model loading (seeded geometries and offline checkpoints), agents and the continuation helper."""

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from realstate.kernel.render import canonical_render
from realstate.models.agents import DEFAULT_TEXT_PROMPTS, run_agent, run_agents
from realstate.models.checkpoint import load_checkpoint
from realstate.models.continuation import greedy_continue
from realstate.models.geometry import GEOMETRIES
from realstate.models.seeded import load_seeded
from spec import InputError


@pytest.fixture(scope="module")
def tiny():
    return load_seeded("qwen3-tiny")


def test_published_geometries_match_the_design():
    g17, g4 = GEOMETRIES["qwen3-1.7b"], GEOMETRIES["qwen3-4b"]
    def shape(g):
        return (g.layers, g.hidden, g.heads, g.kv_heads, g.head_dim, g.intermediate)

    assert shape(g17) == (28, 2048, 16, 8, 128, 6144)
    assert shape(g4) == (36, 2560, 32, 8, 128, 9728)
    for g in (g17, g4):
        assert g.rope_theta == 1e6 and g.vocab == 151936 and g.tied_embeddings


def test_seeded_weights_are_deterministic_and_labelled(tiny):
    again = load_seeded("qwen3-tiny")
    assert again.fingerprint == tiny.fingerprint
    assert tiny.source == "seeded" and "seed" in tiny.source_detail
    assert load_seeded("qwen3-tiny", seed=1).fingerprint.weights != tiny.fingerprint.weights


def test_fingerprint_reads_the_models_own_frequencies():
    lm = load_seeded("qwen3-tiny")
    lm.model.to(torch.bfloat16)  # rounds the rotary buffer; a fresh fingerprint must see it
    from realstate.models.loaded import model_inv_freq

    assert model_inv_freq(lm.model) == tuple(lm.model.model.rotary_emb.inv_freq.double().tolist())
    assert lm.model.model.rotary_emb.inv_freq.dtype == torch.bfloat16


def test_dtypes_change_the_fingerprint():
    fps = {d: load_seeded("qwen3-tiny", dtype=d).fingerprint for d in ("bfloat16", "float16", "float32")}
    assert len({fp.digest for fp in fps.values()}) == 3


def test_agents_have_prompts_of_different_lengths_and_latent_steps(tiny):
    runs = run_agents(tiny, 3, latent_steps=2)
    assert [r.fragment.tokens for r in runs] == [len(r.prompt_ids) + 2 for r in runs]
    assert len({len(r.prompt_ids) for r in runs}) == 3
    assert runs[0].inputs_embeds.shape[1] == runs[0].fragment.tokens


def test_latent_steps_feed_the_last_hidden_state_back(tiny):
    plain = run_agent(tiny, "A", [5, 6, 7], latent_steps=0)
    latent = run_agent(tiny, "A", [5, 6, 7], latent_steps=1)
    assert torch.equal(latent.fragment.keys[:, :, :3], plain.fragment.keys)
    with torch.no_grad():
        hidden = tiny.model.model(input_ids=torch.tensor([[5, 6, 7]])).last_hidden_state[:, -1:]
    assert torch.equal(latent.inputs_embeds[:, 3:], hidden)


def test_greedy_continue_matches_transformers_generate(tiny):
    runs = run_agents(tiny, 3)
    rendered = canonical_render([r.fragment for r in runs])
    prompt = [11, 12, 13]
    ours = greedy_continue(tiny, rendered.to_cache(), prompt, 5)
    context = rendered.to_cache()
    total = rendered.tokens + len(prompt)
    input_ids = torch.cat([torch.zeros(1, rendered.tokens, dtype=torch.long), torch.tensor([prompt])], dim=1)
    generated = tiny.model.generate(input_ids=input_ids, cache=context, max_new_tokens=5, do_sample=False,
                                    attention_mask=torch.ones(1, total, dtype=torch.long), pad_token_id=0)
    assert tuple(generated[0, total:].tolist()) == ours.tokens


def test_continuation_leaves_a_fresh_render_untouched(tiny):
    rendered = canonical_render([r.fragment for r in run_agents(tiny, 2)])
    before = rendered.digest()
    greedy_continue(tiny, rendered.to_cache(), [1, 2], 2)
    assert rendered.digest() == before


def _tiny_tokenizer(directory):
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(list(DEFAULT_TEXT_PROMPTS) * 3,
                            trainers.BpeTrainer(vocab_size=200, special_tokens=["[UNK]"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(directory)


def test_checkpoint_round_trip_offline(tiny, tmp_path):
    tiny.model.save_pretrained(tmp_path)
    loaded = load_checkpoint(tmp_path)
    assert loaded.source == "checkpoint" and loaded.source_detail == str(tmp_path.resolve())
    assert loaded.fingerprint == tiny.fingerprint
    assert loaded.tokenizer is None
    a = run_agents(tiny, 2, seed=0)
    b = run_agents(loaded, 2, seed=0)
    assert [r.fragment.content_id for r in a] == [r.fragment.content_id for r in b]


def test_checkpoint_with_tokenizer_uses_text_prompts(tiny, tmp_path):
    tiny.model.save_pretrained(tmp_path)
    _tiny_tokenizer(tmp_path)
    loaded = load_checkpoint(tmp_path)
    assert loaded.tokenizer is not None
    runs = run_agents(loaded, 3)
    assert runs[0].prompt_ids == loaded.tokenizer(DEFAULT_TEXT_PROMPTS[0], add_special_tokens=False)["input_ids"]


def test_checkpoint_errors_name_the_problem(tmp_path):
    with pytest.raises(InputError, match="^checkpoint=.* is not a directory or a .gguf file"):
        load_checkpoint(tmp_path / "missing")
    with pytest.raises(InputError, match="no config.json"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(InputError, match="model_type 'gpt2'.* is not a supported decoder"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')  # supported, but there are no weights
    with pytest.raises(InputError, match="^checkpoint=.* has no model.safetensors and no model.safetensors.index"):
        load_checkpoint(tmp_path)


def test_cuda_request_without_a_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU; the error path is for machines without one")
    with pytest.raises(InputError, match="no CUDA GPU"):
        load_seeded("qwen3-tiny", device="cuda")


def test_encoding_again_at_the_agents_own_start_reproduces_its_cache(tiny):
    from realstate.kernel.fragment import Fragment
    from realstate.models.agents import encode_again

    for run in run_agents(tiny, 2, latent_steps=2):
        again = Fragment.from_cache(encode_again(tiny, run, run.fragment.start), tiny.fingerprint)
        assert again.content_id == run.fragment.content_id
