"""Negative tests: bugs planted at source level in a scratch copy of the product are caught by the
oracle comparison (``realstate.oracle_bridge.check_against_oracle``) and, for format and
arithmetic changes, by the known-answer vectors (``realstate.vectors.check_known_answers``).

One driver subprocess imports torch once and loads every scratch copy's packages afresh
(tests/oracle_mutant_driver.py), so the eight mutants and the unpatched control cost one start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from audit import Patch, ScratchCopy

DRIVER = Path(__file__).with_name("oracle_mutant_driver.py")
PACKAGES = ("spec", "realstate", "oracle")
KNOWN = "known answers: "

MUTANTS: dict[str, Patch] = {
    "re-encoding offset computed as offset + start": Patch(
        "realstate/render.py", "delta = p.offset - f.start if reencode else 0",
        "delta = p.offset + f.start if reencode else 0"),
    "the first placement not re-encoded": Patch(
        "realstate/render.py", "delta = p.offset - f.start if reencode else 0",
        "delta = p.offset - f.start if reencode and position else 0"),
    "re-encoding rotates the wrong way": Patch(
        "realstate/rope.py", "sin = [math.sin(a) for a in angles]", "sin = [-math.sin(a) for a in angles]"),
    "order statistic read from the last layer": Patch(
        "realstate/fragment.py", "return self.keys[self.fingerprint.layers // 2]",
        "return self.keys[self.fingerprint.layers - 1]"),
    "sorting by -m": Patch(
        "spec/ordering.py", 'return total_order_bits(m).to_bytes(8, "big")',
        'return total_order_bits(-m).to_bytes(8, "big")'),
    "canonical render ignores a non-zero base": Patch(
        "realstate/render.py", "return render_layout(layout(engine.order(members), base), base, engine)",
        "return render_layout(layout(engine.order(members)), base, engine)"),
    "content-id header magic changed": Patch(
        "realstate/fragment.py", 'CONTENT_ID_MAGIC = b"CMFRAG01"', 'CONTENT_ID_MAGIC = b"CMFRAG02"'),
    "canonical NaN payload changed": Patch(
        "realstate/order_value.py", "0x7FF8000000000000", "0x7FF8000000000001"),
}
# the known-answer rows each format/arithmetic mutant must fail (the brief's three, at least)
KNOWN_ANSWER_FAILS = {
    "content-id header magic changed": "fingerprint digests and content ids",
    "canonical NaN payload changed": "order values m (float64 bits, canonical NaN)",
    "order statistic read from the last layer": "order values m (float64 bits, canonical NaN)",
}
CONTROL = "unpatched"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    roots = {}
    for name in (CONTROL, *MUTANTS):
        scratch = ScratchCopy(tmp_path_factory.mktemp("oracle-mutant"), packages=PACKAGES)
        if name != CONTROL:
            scratch.apply(MUTANTS[name])
        roots[name] = str(scratch.root)
    out = subprocess.run([sys.executable, str(DRIVER), *roots.values()], capture_output=True, text=True,
                         timeout=600, env=scratch.env(), cwd=DRIVER.parent)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout)
    return {name: results[root] for name, root in roots.items()}


def test_the_unpatched_copy_agrees_with_the_oracle_and_every_known_answer(outcomes):
    control = outcomes[CONTROL]
    assert control["oracle"]["outcome"] == "holds", control["oracle"]
    assert control["oracle"]["figure"] == "11/11 fragments and renders equal"
    assert [r["outcome"] for r in control["known_answers"]] == ["holds"] * 4


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_the_oracle_catches_the_planted_bug(outcomes, mutant):
    row = outcomes[mutant]["oracle"]
    assert row["outcome"] == "fails", row
    assert row["details"]["failures"][0]["first"], row


@pytest.mark.parametrize("mutant", list(KNOWN_ANSWER_FAILS))
def test_the_known_answers_catch_the_planted_format_change(outcomes, mutant):
    rows = {r["check"].removeprefix(KNOWN): r for r in outcomes[mutant]["known_answers"]}
    row = rows[KNOWN_ANSWER_FAILS[mutant]]
    assert row["outcome"] == "fails", row
    assert row["details"]["mismatches"], row
