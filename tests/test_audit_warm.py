"""The warm launcher the suite runs scratch copies with (audit.warm): its children must behave
as fresh interpreters running the copy's own code, or every planted-bug test would be testing
the wrong thing."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from audit.scratch import Patch, ScratchCopy
from audit.warm import WarmLauncher, ZygoteError
from tests.audit_helpers import failing_rows, none_left_in

PLANT = Patch("realstate/kernel/engine.py", "    return fragment.order_key", "    return fragment.order_key[:8]")
COMMAND = ("check", "--only", "C3", "--no-gossip", "--universe", "ties", "--max-arity", "3", "--workers", "1", "--json")


@pytest.fixture(scope="module")
def launcher():
    warm = WarmLauncher(preload=("numpy", "torch", "z3"))
    yield warm
    warm.close()


def test_a_warm_run_of_a_planted_copy_equals_a_fresh_interpreters_run(launcher, tmp_path):
    planted = ScratchCopy(tmp_path / "planted").apply(PLANT)
    clean = ScratchCopy(tmp_path / "clean")
    fresh = subprocess.run([sys.executable, "-m", "canonmerge", *COMMAND], cwd=planted.root, env=planted.env(),
                           capture_output=True, text=True, timeout=600)
    with ThreadPoolExecutor(2) as pool:  # two children of one zygote at once
        warm, warm_clean = pool.map(lambda copy: launcher.run(COMMAND, copy.root, copy.env(), 600), (planted, clean))
    assert (warm.returncode, fresh.returncode, warm_clean.returncode) == (1, 1, 0), warm.stderr[-2000:]
    assert failing_rows(warm.stdout) == failing_rows(fresh.stdout) != set()
    assert failing_rows(warm_clean.stdout) == set()
    assert "Traceback" not in warm.stderr


def test_a_run_past_its_timeout_is_killed_with_what_it_started_and_the_zygote_goes_on(launcher, tmp_path):
    """The killed run's process pool goes with it (the pool's workers would otherwise go on for a
    minute), even when the zygote has only just started."""
    copy = ScratchCopy(tmp_path / "copy")
    with pytest.raises(subprocess.TimeoutExpired):  # long enough for the pool's workers to start
        launcher.run(("check", "--max-arity", "6", "--workers", "2"), copy.root, copy.env(), timeout=6)
    assert none_left_in(copy.root)
    assert launcher.run(("--help",), copy.root, copy.env(), timeout=120).returncode == 0


def test_an_uncaught_exception_prints_a_traceback_and_exits_1(launcher, tmp_path):
    copy = ScratchCopy(tmp_path / "copy").apply(
        Patch("canonmerge/__main__.py", "SystemExit(main())", "SystemExit(mian())"))
    out = launcher.run(("--help",), copy.root, copy.env(), timeout=120)
    assert out.returncode == 1 and "NameError" in out.stderr and "Traceback" in out.stderr


def test_a_zygote_that_imported_the_projects_code_is_refused():
    with pytest.raises(ZygoteError, match="project's own modules"):
        WarmLauncher(preload=("spec",)).run(("--help",), ".", {}, timeout=60)
