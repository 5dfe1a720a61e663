"""The scratch-copy planter every source-level negative test relies on: a patch that does not
apply is an error (never a silently unmutated run), and the copy is what Python imports."""

import os
import subprocess
import sys

import pytest

from audit import Patch, PatchError, ScratchCopy
from audit.scratch import run_group
from tests.audit_helpers import none_left_in


def test_a_patch_must_match_exactly_once(tmp_path):
    scratch = ScratchCopy(tmp_path, packages=("spec",))
    with pytest.raises(PatchError, match="occurs 0 times"):
        scratch.apply(Patch("spec/fragment_set.py", "no such text anywhere", "x"))
    with pytest.raises(PatchError, match=r"occurs \d\d? times"):
        scratch.apply(Patch("spec/fragment_set.py", "return", "return"[::-1]))
    with pytest.raises(PatchError, match="changes nothing"):
        Patch("spec/fragment_set.py", "a", "a")
    with pytest.raises(PatchError, match="relative"):
        Patch("../spec/fragment_set.py", "a", "b")


def test_the_patched_copy_is_what_python_imports(tmp_path):
    scratch = ScratchCopy(tmp_path).apply(
        Patch("spec/fragment_set.py", "            table.setdefault(cid, item)\n", "            pass\n"))
    scratch.check_imported()
    out = scratch.python("import spec, sys; a = spec.FragmentSet.of_ids([bytes(32)]); "
                         "b = spec.FragmentSet.of_ids([bytes([1]) * 32]); print(len(a.merge(b)))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"  # the planted merge drops the other side


def test_a_timed_out_run_is_killed_with_everything_it_started(tmp_path):
    """A fresh run (the audit's) that times out takes its whole process group with it: a check
    part's pool workers once went on computing, orphaned, while the next mutant ran."""
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            "time.sleep(120)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_group([sys.executable, "-c", code], tmp_path, dict(os.environ), timeout=2)
    assert none_left_in(tmp_path)
    done = run_group([sys.executable, "-c", "print('ok')"], tmp_path, dict(os.environ), timeout=60)
    assert (done.returncode, done.stdout) == (0, "ok\n")


def test_a_copy_takes_numbas_compiled_kernels_and_leaves_pythons_bytecode(tmp_path):
    """numba checks a kernel against its source file's bytes (a patched file recompiles: the planted
    kernel bugs in tests/test_planted_in_source.py are caught through copies made so); Python's
    bytecode is checked by mtime and size only, which a same-length patch could match."""
    source = tmp_path / "source"
    cache = source / "pkg" / "__pycache__"
    cache.mkdir(parents=True)
    (source / "pkg" / "kernels.py").write_text("x = 1\n")
    for name in ("kernels.f-1.py311.nbi", "kernels.f-1.py311.1.nbc", "kernels.cpython-311.pyc"):
        (cache / name).write_bytes(b"data")
    copy = ScratchCopy(tmp_path / "copy", source=source, packages=("pkg",))
    copied = sorted(p.name for p in (copy.root / "pkg" / "__pycache__").iterdir())
    assert copied == ["kernels.f-1.py311.1.nbc", "kernels.f-1.py311.nbi"]
