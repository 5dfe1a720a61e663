"""The GPU evidence command (``benchmarks/gpu_evidence.py``) run on the CPU so that it cannot rot:
its quick run end to end (both documents, every piece, the exit code matching the verdict), its
refusals (exit 2, nothing run), the render parity's comparison and canary, and a blind comparison
planted in the source of a scratch copy, caught by the command itself (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from audit.scratch import PACKAGES, Patch, ScratchCopy, run_group
from realstate.evidence import device_parity as dp
from realstate.evidence.planted import engine_named
from realstate.exchange.stores.directory import DirectoryStore

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_evidence.py"


def _run(*args: str, script: Path = SCRIPT, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=script.parents[1])


@pytest.mark.heavy
def test_the_quick_cpu_run_writes_both_documents_and_its_exit_code_is_its_verdict(tmp_path):
    done = _run("--device", "cpu", "--quick", "--evidence", str(tmp_path / "ev"))
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    doc = json.loads((tmp_path / "ev" / "gpu-evidence.json").read_text())
    pieces = {p["piece"]: p for p in doc["pieces"]}
    assert list(pieces) == ["parity", "replay qwen3-tiny", "replay smollm2-135m", "replicate"]
    failing = [p for p in doc["pieces"] if p["result"] not in ("holds", "not run")]
    assert done.returncode == (1 if failing else 0), (done.returncode, doc["verdict"])
    assert doc["verdict"].startswith("FAILS" if failing else "holds")
    assert pieces["replay smollm2-135m"] == {"piece": "replay smollm2-135m", "result": "not run",
                                             "why": "--quick leaves SmolLM2 out"}
    replay = pieces["replay qwen3-tiny"]
    assert replay["result"] == "holds" and replay["model"]["weights_source"] == "seeded"
    assert {r["claim"] for r in replay["rows"]} >= {"C3", "C6", "C8"}
    replicate = pieces["replicate"]
    assert replicate["result"] == "holds" and "--backend gloo --ranks 2" in replicate["command"]
    assert [r["claim"] for r in replicate["rows"]] == ["C7"]
    parity = pieces["parity"]["parity"]
    assert parity["canary"]["seen"] and parity["paths"] == ["chunked"]  # the CPU reference never meets itself
    assert {(c["set"], c["dtype"]) for c in parity["cases"]} >= {("specials", d) for d in dp.DTYPES}
    assert doc["machine"]["nproc"] and doc["device"] == "cpu" and doc["quick"]
    table = (tmp_path / "ev" / "gpu-evidence.md").read_text()
    assert "| piece | result | seconds | figure | command |" in table and "| set | dtype |" in table
    assert "--quick leaves SmolLM2 out" in table


def test_an_evidence_directory_inside_a_store_is_refused_before_anything_runs(tmp_path):
    store = DirectoryStore(tmp_path / "store", create=True)
    done = _run("--device", "cpu", "--evidence", str(store.path / "ev"), timeout=120)
    assert done.returncode == 2 and "--evidence" in done.stderr and "store" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (store.path / "ev").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible")
def test_cuda_without_a_gpu_is_bad_input(tmp_path):
    done = _run("--device", "cuda", "--evidence", str(tmp_path / "ev"), timeout=120)
    assert done.returncode == 2 and "no CUDA device" in done.stderr and not (tmp_path / "ev").exists()


def test_the_parity_comparison_reports_a_path_that_renders_other_bytes():
    case = dp.specials("float16")
    row = dp.compare(case, "cpu", {"planted": engine_named("wrong-rope-sign"), "same": dp.CANONICAL})
    assert not row["paths"]["planted"]["equal"] and row["paths"]["same"]["equal"] and not row["equal"]
    assert row["renders"] == 2 * len(dp.BASES) and len(set(row["cpu_sha256"])) == len(dp.BASES)


def test_the_special_bit_patterns_reach_the_fragments_unchanged():
    for dtype in dp.DTYPES:
        case = dp.specials(dtype)
        stored = {int(x) & ((1 << dp.DTYPE_BITS[dtype]) - 1)
                  for f in case.fragments for x in f.keys.view(dp.BITS_VIEW[f.keys.dtype]).flatten().tolist()}
        assert {dp.SPECIAL_BITS[dtype][n] for n in ("-0", "min_sub", "qnan", "-qnan", "inf", "-inf", "max")} <= stored


def test_a_parity_comparison_planted_blind_in_the_source_fails_the_command(tmp_path):
    copy = ScratchCopy(tmp_path / "scratch", packages=(*PACKAGES, "benchmarks")).apply(Patch(
        "realstate/evidence/device_parity.py",
        'row["paths"][path] = {"sha256": digests, "equal": digests == reference}',
        'row["paths"][path] = {"sha256": digests, "equal": reference == reference}'))  # compares with itself
    out = tmp_path / "ev"
    done = run_group([sys.executable, str(copy.root / "benchmarks" / "gpu_evidence.py"), "--device", "cpu",
                      "--pieces", "parity", "--evidence", str(out)], copy.root, copy.env(None), 600)
    assert done.returncode == 1, done.stderr[-2000:]
    parity = json.loads((out / "gpu-evidence.json").read_text())["pieces"][0]
    assert parity["result"] == "fails" and not parity["parity"]["canary"]["seen"]
    assert "canary wrong-rope-sign NOT SEEN" in (out / "gpu-evidence.md").read_text()
