"""The examples run as a user runs them, and use only the public face (``realstate``'s exports)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import realstate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PROJECT = ("spec", "oracle", "proofs", "modelcheck", "realstate", "canonmerge", "audit")
EXPECTED = {
    "merge_two_replicas.py": r"2 fragments, 7 context tokens, decoded \[\d+, \d+, \d+, \d+\]\n",
    "compose_three_agents.py": r"6 delivery orders: 1 composed cache \(12288 bytes\), unequal to canonical_merge's\n",
    "every_order_one_render.py": r"6 delivery orders: CanonicalMerge 1 render, BagMerge 6 different caches\n"
                                 r"render digest \(SHA-256\): [0-9a-f]{64}\n",
}


def non_public_imports(source: str) -> list[str]:
    """Imports of the project other than the names ``realstate`` exports."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.split(".")[0] in PROJECT]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PROJECT:
            if node.level or node.module != "realstate":
                bad.append(node.module or ".")
            else:
                bad += [f"realstate.{a.name}" for a in node.names if a.name not in realstate.__all__]
    return bad


def test_every_example_has_its_expected_output():
    assert {p.name for p in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_an_example_imports_only_the_public_face(example: Path):
    assert non_public_imports(example.read_text()) == []


def test_the_public_face_check_sees_a_private_import():
    """A check that cannot fail is a defect."""
    assert non_public_imports("from realstate.models.seeded import load_seeded\n") == ["realstate.models.seeded"]
    assert non_public_imports("import spec\nfrom realstate import Fragment, layout\n") == ["spec", "realstate.layout"]
    assert non_public_imports("from realstate import Fragment\nimport torch\n") == []


# each run is a fresh interpreter (seconds of imports): the default tier runs the first, CI's heavy tier the rest
@pytest.mark.parametrize("example", [pytest.param(e, marks=() if i == 0 else pytest.mark.heavy)
                                     for i, e in enumerate(EXAMPLES)], ids=lambda p: p.name)
def test_an_example_runs_and_prints_what_it_should(example: Path, tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(EXPECTED[example.name], out.stdout), out.stdout
