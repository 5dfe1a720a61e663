"""Hostile checkpoints: each is refused with exit 2 and one line naming the input (the path, and the
field or tensor), with no traceback, no code run, nothing unpickled, no random weights, nothing
asked on stdin and nothing unescaped on the terminal.  Process-level properties (a stdin prompt,
code execution, memory) are checked on real ``python -m canonmerge`` processes; the rest
in-process through ``canonmerge.cli.main``.  Then the positive side: a valid checkpoint loads, its
weights digest is a function of its bytes; and the post-load lock shown to catch a missing tensor
when the pre-load comparison is planted away."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

from audit.scratch import Patch, ScratchCopy
from canonmerge.cli import main
from realstate.models.checkpoint import load_checkpoint
from tests.optional import needs_gguf
from tests.test_realstate_arch_gguf import write_tiny_llama_gguf

ROOT = Path(__file__).resolve().parents[1]
ST = "model.safetensors"


def tiny_llama(tied: bool = True, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, head_dim=16, vocab_size=64, max_position_embeddings=1024,
                         tie_word_embeddings=tied)
    return LlamaForCausalLM(config).to(torch.bfloat16)


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("bases")
    tiny_llama().save_pretrained(root / "tied")
    return root


@pytest.fixture
def ckpt(bases, tmp_path):
    target = tmp_path / "ckpt"
    shutil.copytree(bases / "tied", target)
    return target


def tensors(path: Path) -> dict[str, torch.Tensor]:
    return load_file(path / ST)


def save(path: Path, state: dict[str, torch.Tensor]) -> None:
    save_file(state, path / ST, metadata={"format": "pt"})


def edit_config(path: Path, **fields) -> None:
    config = json.loads((path / "config.json").read_text())
    config.update(fields)
    (path / "config.json").write_text(json.dumps(config))


def raw_safetensors(path: Path, header: bytes, length: int | None = None, data: bytes = b"") -> None:
    (path / ST).write_bytes((len(header) if length is None else length).to_bytes(8, "little") + header + data)


def assert_refused(code: int, out: str, err: str, path: Path, *needles: str, command: str = "realstate") -> str:
    assert code == 2, (out, err)
    assert "Traceback" not in out + err and "\x1b" not in out + err
    lines = [line for line in err.splitlines() if not line.startswith("[progress]")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"canonmerge {command}: error: --checkpoint {path}: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def refused(capsys, path: Path, *needles: str) -> str:
    capsys.readouterr()  # what making the checkpoint printed
    code = main(["realstate", "--checkpoint", str(path), "--agents", "1"])
    captured = capsys.readouterr()
    return assert_refused(code, captured.out, captured.err, path, *needles)


# --- tensors: exactly the architecture's, or refused -------------------------------------------

def drop_layer(p):
    save(p, {k: v for k, v in tensors(p).items() if not k.startswith("model.layers.1.")})


def drop_one(p):
    save(p, {k: v for k, v in tensors(p).items() if k != "model.layers.0.self_attn.q_proj.weight"})


def extra(p):
    save(p, {**tensors(p), "model.layers.0.extra.weight": torch.zeros(4, dtype=torch.bfloat16)})


def misshape(p):
    state = tensors(p)
    state["model.layers.1.mlp.up_proj.weight"] = torch.zeros(65, 32, dtype=torch.bfloat16)
    save(p, state)


def integer(p):
    state = tensors(p)
    state["model.norm.weight"] = torch.ones(32, dtype=torch.int32)
    save(p, state)


def untied_without_head(p):
    shutil.rmtree(p)
    tiny_llama(tied=False).save_pretrained(p)
    save(p, {k: v for k, v in tensors(p).items() if k != "lm_head.weight"})


def tied_with_head(p):
    state = tensors(p)
    save(p, {**state, "lm_head.weight": state["model.embed_tokens.weight"].clone()})


def escape_name(p):
    save(p, {**tensors(p), "evil\x1b[2J\x1b]0;owned\x07.weight": torch.zeros(2, dtype=torch.bfloat16)})


# --- files: code, pickles, shards ----------------------------------------------------------------

class WritesMarker:
    """Unpickling this writes the marker file: proof that a pickle was (not) loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('unpickled')",))


def marker_of(p: Path) -> Path:
    return p.parent / "MARKER"


def pickle_named(name):
    def plant(p):
        (p / name).write_bytes(pickle.dumps(WritesMarker(marker_of(p))))
    return plant


def stray_py(p):
    (p / "modeling_evil.py").write_text(f"open({str(marker_of(p))!r}, 'w').write('ran')\n")


def sharded_missing_shard(p):
    state = tensors(p)
    (p / ST).unlink()
    names = sorted(state)
    save_file({k: state[k] for k in names[:5]}, p / "model-00001-of-00002.safetensors", metadata={"format": "pt"})
    weight_map = {k: "model-00001-of-00002.safetensors" if i < 5 else "model-00002-of-00002.safetensors"
                  for i, k in enumerate(names)}
    (p / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def sharded_traversal(p):
    state = tensors(p)
    (p / ST).unlink()
    save_file(state, p.parent / "outside.safetensors", metadata={"format": "pt"})
    (p / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: "../outside.safetensors" for k in state}}))


def header_huge(p):
    raw_safetensors(p, b"{}", length=1 << 62)


def header_not_json(p):
    raw_safetensors(p, b"\x00not json at all")


def header_deep(p):
    raw_safetensors(p, b"[" * 100_000 + b"]" * 100_000)


def header_overlap(p):
    entry = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    raw_safetensors(p, json.dumps({"a": entry, "b": entry}).encode(), data=b"\0" * 8)


# --- config.json ---------------------------------------------------------------------------------

def config_text(text: bytes):
    return lambda p: (p / "config.json").write_bytes(text)


def config_sparse(p):
    with (p / "config.json").open("r+b") as handle:
        handle.truncate(1 << 30)


def fields(**values):
    return lambda p: edit_config(p, **values)


HOSTILE = {
    "missing-layer": (drop_layer, ["num_hidden_layers=2", "no tensor of layer(s) 1", "model.layers.1.*"]),
    "missing-tensor": (drop_one, ["missing tensor(s) 'model.layers.0.self_attn.q_proj.weight'", "at random"]),
    "extra-tensor": (extra, ["unexpected tensor(s) 'model.layers.0.extra.weight'"]),
    "misshaped-tensor": (misshape, ["mis-shaped: 'model.layers.1.mlp.up_proj.weight' is [65, 32]", "[64, 32]"]),
    "integer-tensor": (integer, ["wrong dtype class: 'model.norm.weight' is stored as I32, a float is needed"]),
    "untied-no-lm-head": (untied_without_head, ["missing tensor(s) 'lm_head.weight'", "tie_word_embeddings is false"]),
    "tied-with-lm-head": (tied_with_head, ["unexpected tensor(s) 'lm_head.weight'", "tie_word_embeddings is true"]),
    "escape-in-name": (escape_name, [r"'evil\x1b[2J\x1b]0;owned\x07.weight'"]),
    "stray-py": (stray_py, ["holds Python code ('modeling_evil.py')"]),
    "auto-map": (fields(auto_map={"AutoModelForCausalLM": "modeling_evil.Evil"}),
                 ["config.json: auto_map names Python"]),
    "custom-model-type": (fields(model_type="evil_llama"),
                          ["model_type='evil_llama' is not a model type transformers"]),
    "quantization-config": (fields(quantization_config={"quant_method": "bitsandbytes"}), ["quantization_config"]),
    "pytorch-model-bin": (pickle_named("pytorch_model.bin"), ["pickle-based weights ('pytorch_model.bin')"]),
    "pt": (pickle_named("weights.pt"), ["pickle-based weights ('weights.pt')"]),
    "ckpt": (pickle_named("last.ckpt"), ["pickle-based weights ('last.ckpt')"]),
    "pth-pkl": (pickle_named("consolidated.00.pth"), ["'consolidated.00.pth'"]),
    "bin-index": (pickle_named("pytorch_model.bin.index.json"), ["'pytorch_model.bin.index.json'"]),
    "shard-missing": (sharded_missing_shard, ["'model-00002-of-00002.safetensors', which is missing"]),
    "shard-traversal": (sharded_traversal, ["'../outside.safetensors', which is not a .safetensors file name in the "
                                            "checkpoint directory"]),
    "header-huge": (header_huge, [f"{ST}: the header claims {1 << 62} bytes"]),
    "header-not-json": (header_not_json, [f"{ST}: the header: not valid JSON"]),
    "header-deep": (header_deep, [f"{ST}: the header: nested more than 64 deep"]),
    "header-overlap": (header_overlap, ["starts at byte 0, not at 8", "gap or an overlap"]),
    "config-not-json": (config_text(b"{ not json"), ["config.json: not valid JSON"]),
    "config-sparse-1gb": (config_sparse, [f"config.json: file size: {1 << 30} bytes is over the limit"]),
    "config-a-list": (config_text(b"[1, 2]"), ["config.json is JSON but not an object"]),
    "layers-1e7": (fields(num_hidden_layers=10**7), ["num_hidden_layers=10000000 is out of bounds (1..1024)"]),
    "bool-size": (fields(num_attention_heads=True), ["num_attention_heads=True is not an integer (a bool)"]),
    "float-size": (fields(hidden_size=32.0), ["hidden_size=32.0 is not an integer (a float)"]),
    "string-size": (fields(vocab_size="64"), ["vocab_size='64' is not an integer (a str)"]),
    "negative-size": (fields(intermediate_size=-64), ["intermediate_size=-64 is out of bounds"]),
    "heads-not-divisible": (fields(num_key_value_heads=3, num_attention_heads=4),
                            ["num_attention_heads=4 is not a multiple of num_key_value_heads=3"]),
    "odd-head-dim": (fields(head_dim=15), ["head_dim=15 is odd"]),
    "unknown-dtype": (fields(torch_dtype="int4"), ["torch_dtype='int4' is not a dtype name"]),
    "unknown-rope-type": (fields(rope_scaling={"rope_type": "evil", "factor": 2.0}),
                          ["rope_scaling.rope_type='evil' is not a rope type realstate knows"]),
    "nan-rope-theta": (fields(rope_theta=float("nan")), ["config.json: JSON constant NaN is not allowed"]),
    "zero-rope-theta": (fields(rope_theta=0.0), ["rope_theta=0.0 is not a finite positive number"]),
    "layer-types-short": (fields(layer_types=["full_attention"]),
                          ["layer_types has 1 entries for num_hidden_layers=2"]),
    "class-and-type-differ": (fields(architectures=["Qwen3ForCausalLM"]),
                              ["names Qwen3ForCausalLM (model_type 'qwen3') but model_type is 'llama'"]),
    "tokenizer-auto-map": (lambda p: (p / "tokenizer_config.json").write_text(json.dumps(
        {"auto_map": {"AutoTokenizer": ["tok.Evil", None]}})), ["tokenizer_config.json: auto_map"]),
    "tokenizer-class-unknown": (lambda p: (p / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "EvilTokenizer"})), ["tokenizer_class='EvilTokenizer' is not a tokenizer transformers"]),
    "tokenizer-file-elsewhere": (lambda p: (p / "tokenizer_config.json").write_text(json.dumps(
        {"vocab_file": "/etc/passwd"})), ["vocab_file name(s) files"]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_checkpoint_is_refused_naming_it(case, ckpt, capsys):
    plant, needles = HOSTILE[case]
    plant(ckpt)
    refused(capsys, ckpt, *needles)
    assert not marker_of(ckpt).exists()  # no pickle was loaded, no code ran


def test_config_json_fifo_is_refused_not_waited_on(ckpt, capsys):
    (ckpt / "config.json").unlink()
    os.mkfifo(ckpt / "config.json")
    result: list = []
    worker = threading.Thread(target=lambda: result.append(main(["realstate", "--checkpoint", str(ckpt)])),
                              daemon=True)
    worker.start()
    worker.join(60)
    assert result, "reading a FIFO config.json blocked"
    captured = capsys.readouterr()
    assert_refused(result[0], captured.out, captured.err, ckpt, "config.json: file type: is a FIFO, not a regular file")


def test_refusal_in_json_is_the_error_document(ckpt, capsys):
    escape_name(ckpt)
    assert main(["realstate", "--checkpoint", str(ckpt), "--json"]) == 2
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["exit_code"] == 2 and document["error"]["kind"] == "input"
    assert r"'evil\x1b[2J" in document["error"]["message"] and "\x1b" not in captured.out + captured.err


def test_bench_refuses_the_same_checkpoint_naming_its_flag(ckpt, capsys, tmp_path):
    drop_one(ckpt)
    code = main(["bench", "--checkpoint", str(ckpt), "--quick", "--out", str(tmp_path / "out"), "--no-figures"])
    captured = capsys.readouterr()
    assert_refused(code, captured.out, captured.err, ckpt, "missing tensor(s)", command="bench")


def test_ten_million_layers_is_refused_in_milliseconds(ckpt):
    edit_config(ckpt, num_hidden_layers=10**7)
    started = time.perf_counter()
    with pytest.raises(ValueError, match="num_hidden_layers=10000000 is out of bounds"):
        load_checkpoint(ckpt)
    assert time.perf_counter() - started < 0.5


# --- GGUF -----------------------------------------------------------------------------------------

def _u32(n):
    return n.to_bytes(4, "little")


def _u64(n):
    return n.to_bytes(8, "little")


def _str(s):
    return _u64(len(s.encode())) + s.encode()


def _gguf(tensors: int, entries: list[bytes]) -> bytes:
    return b"GGUF" + _u32(3) + _u64(tensors) + _u64(len(entries)) + b"".join(entries)


ARCH = _str("general.architecture") + _u32(8) + _str("llama")
GGUF_RAW = {
    "too-many-tensors": (_gguf(1 << 40, [ARCH]), ["1099511627776 tensors / 1 metadata entries claimed"]),
    "deep-arrays": (_gguf(0, [ARCH, _str("evil") + _u32(9) + (_u32(9) + _u64(1)) * 50_000 + _u32(4) + _u64(0)]),
                    ["arrays nested more than 3 deep"]),
    "huge-array": (_gguf(0, [ARCH, _str("evil") + _u32(9) + _u32(8) + _u64(1 << 60)]),
                   ["1152921504606846976 elements of at least 8 bytes cannot fit"]),
}


@needs_gguf
@pytest.mark.parametrize("case", sorted(GGUF_RAW))
def test_hostile_gguf_header_is_refused(case, tmp_path, capsys):
    content, needles = GGUF_RAW[case]
    path = tmp_path / "evil.gguf"
    path.write_bytes(content)
    refused(capsys, path, "evil.gguf: not a readable GGUF file", *needles)


@needs_gguf
@pytest.mark.parametrize("case, needles", [
    ("truncated", ["runs past the"]),
    ("missing-tensor", ["missing tensor(s) 'model.layers.1.self_attn.q_proj.weight'"]),
    ("float-block-count", ["llama.block_count is a GGUF float32, not an integer"]),
])
def test_hostile_gguf_tensors_and_metadata_are_refused(case, needles, tmp_path, capsys):
    path = tmp_path / "tiny.gguf"
    write_tiny_llama_gguf(path, skip=("blk.1.attn_q.weight",) if case == "missing-tensor" else (),
                          float_block_count=case == "float-block-count")
    if case == "truncated":
        content = path.read_bytes()
        path.write_bytes(content[:len(content) // 2])
    refused(capsys, path, *needles)


# --- processes: nothing asks, nothing runs, nothing is allocated -----------------------------------

def _product(args, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen([sys.executable, "-m", "canonmerge", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def _custom_code_checkpoint(p: Path) -> None:
    stray_py(p)
    edit_config(p, auto_map={"AutoConfig": "modeling_evil.EvilConfig",
                             "AutoModelForCausalLM": "modeling_evil.Evil"})


@pytest.mark.parametrize("stdin", ["yes-piped", "closed"])
def test_custom_code_never_prompts_and_never_runs(stdin, ckpt):
    _custom_code_checkpoint(ckpt)
    args = ["realstate", "--checkpoint", str(ckpt), "--agents", "1"]
    if stdin == "closed":
        process = _product(args, stdin=subprocess.DEVNULL, pass_fds=(), preexec_fn=lambda: os.close(0))
        out, err = process.communicate(timeout=120)
    else:
        process = _product(args, stdin=subprocess.PIPE)
        out, err = process.communicate("y\ny\ny\n", timeout=120)
    assert_refused(process.returncode, out, err, ckpt, "holds Python code ('modeling_evil.py')")
    assert "Do you wish to run the custom code" not in out + err
    assert not marker_of(ckpt).exists()


def test_ten_million_layers_allocates_nothing_in_a_real_process(ckpt):
    edit_config(ckpt, num_hidden_layers=10**7)
    process = _product(["realstate", "--checkpoint", str(ckpt)], stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    out, err = process.stdout.read(), process.stderr.read()
    process.returncode = os.waitstatus_to_exitcode(status)
    assert_refused(process.returncode, out, err, ckpt, "num_hidden_layers=10000000 is out of bounds")
    assert usage.ru_maxrss < 2 << 20, f"peak RSS {usage.ru_maxrss} KiB"  # torch + transformers are ~0.6 GiB


# --- the weights are the checkpoint's -------------------------------------------------------------

def test_valid_checkpoint_loads_and_its_digest_is_a_function_of_its_bytes(ckpt, tmp_path):
    torch.manual_seed(1)
    first = load_checkpoint(ckpt)
    torch.manual_seed(2)
    torch.rand(1000)
    second = load_checkpoint(ckpt)
    assert first.fingerprint.weights == second.fingerprint.weights
    assert first.fingerprint == second.fingerprint and first.load_messages == ()
    assert first.fingerprint.weights == from_saved_model_digest()
    state = tensors(ckpt)
    state["model.layers.1.mlp.down_proj.weight"][0, 0] += 1
    save(ckpt, state)
    assert load_checkpoint(ckpt).fingerprint.weights != first.fingerprint.weights


def from_saved_model_digest() -> str:
    from realstate.models.loaded import weights_digest

    return weights_digest(tiny_llama())


def test_tied_checkpoint_has_no_lm_head_on_disk_and_loads(ckpt):
    assert "lm_head.weight" not in tensors(ckpt)
    lm = load_checkpoint(ckpt)
    assert lm.model.lm_head.weight.data_ptr() == lm.model.model.embed_tokens.weight.data_ptr()


def test_sharded_checkpoint_loads_to_the_same_digest(bases, tmp_path):
    tiny_llama().save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    assert load_checkpoint(tmp_path / "sharded").fingerprint == load_checkpoint(bases / "tied").fingerprint


# --- the second lock: transformers' own loading report --------------------------------------------

def test_without_the_tensor_comparison_the_loading_report_still_refuses(ckpt, tmp_path):
    """Planted: the pre-load comparison ignores missing tensors; the post-load check of
    transformers' report must still refuse (exit 2, naming the tensor), never load random weights."""
    drop_one(ckpt)
    copy = ScratchCopy(tmp_path / "copy").apply(Patch(
        "realstate/models/expected_tensors.py", "missing = sorted(name for name in needed if name not in held)",
        "missing = []"))
    out = copy.run("realstate", "--checkpoint", str(ckpt), "--agents", "1", "--latent-steps", "0", "--only", "C5")
    assert_refused(out.returncode, out.stdout, out.stderr, ckpt, "transformers reports, after loading: missing keys "
                   "'model.layers.0.self_attn.q_proj.weight'")


@pytest.mark.audit
def test_without_both_locks_the_random_weights_load_and_this_suite_would_see_it(ckpt, tmp_path):
    """Planted: both checks removed.  The same command then exits 0 on a checkpoint missing a weight
    (the bug the checks exist for), so the refusal above is theirs, and a test above fails."""
    drop_one(ckpt)
    copy = ScratchCopy(tmp_path / "copy").apply(
        Patch("realstate/models/expected_tensors.py", "missing = sorted(name for name in needed if name not in held)",
              "missing = []"),
        Patch("realstate/models/expected_tensors.py", 'for key in ("missing_keys", "unexpected_keys", '
              '"mismatched_keys", "error_msgs") if info.get(key)]', 'for key in () if info.get(key)]'))
    out = copy.run("realstate", "--checkpoint", str(ckpt), "--agents", "1", "--latent-steps", "0", "--only", "C5")
    assert out.returncode == 0, out.stderr[-2000:]


# --- what third-party code prints while loading ---------------------------------------------------

def test_transformers_load_report_with_an_escape_never_reaches_the_terminal(ckpt, capfd, monkeypatch):
    """With the pre-load comparison stubbed out in-process, transformers loads the checkpoint and
    prints its load report, tensor names verbatim (ESC [ 2 J included): it is captured, and the
    refusal from the report names the tensor escaped."""
    import realstate.models.checkpoint as checkpoint

    escape_name(ckpt)
    monkeypatch.setattr(checkpoint, "compare", lambda *args: None)
    refused(capfd, ckpt, r"transformers reports, after loading: unexpected keys 'evil\x1b[2J")


def test_captured_output_is_escaped_and_summarised(capsys):
    import warnings

    from transformers.utils import logging as transformers_logging

    from realstate.models.loader_output import captured_output

    with captured_output() as said:
        print("\x1b[2Jcleared")
        print("bar 1/2\rbar 2/2")
        transformers_logging.get_logger("transformers.modeling_utils").warning("key \x1b]0;title\x07")
        warnings.warn("careful \x1b[31m", UserWarning, stacklevel=1)
        for _ in range(3):
            print("same")
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out + captured.err
    assert said.summary() == (r"\x1b[2Jcleared", "bar 2/2", r"[transformers] key \x1b]0;title\x07", "same (x3)",
                              r"UserWarning: careful \x1b[31m")
