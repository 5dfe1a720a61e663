"""``canonmerge check --checkpoint`` / ``--resume`` under SIGKILL, on the command line: an
unpatched copy killed and resumed passes with the census's counts; bugs planted in the SOURCE
of a scratch copy (``audit.ScratchCopy``) make the resumed command exit 1 or 2, never pass:

- a resume that drops the frontier's last state;
- a checkpoint written before its level is complete (its last batch not yet checked).

A directory written for another configuration is refused with exit 2 and one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit import ScratchCopy
from audit.scratch import Patch

pytestmark = pytest.mark.heavy

GOSSIP = ("check", "--only", "C7", "--replicas", "3", "--fragments", "3", "--in-flight", "2")
PLANTED = {
    "resume drops the frontier's last state": Patch(
        "modelcheck/gossip_search.py", "for row in range(first, stop)", "for row in range(first, stop - 1)"),
    "checkpoint written before its level is complete": Patch(
        "modelcheck/gossip_search.py",
        "        if ok and pending:\n            ok = check_pending()\n"
        "        if ok and not full and store is not None:",
        "        if ok and not full and store is not None:"),
}


def _depth(where: Path) -> int:
    try:
        return json.loads((where / "manifest.json").read_bytes())["level"]["depth"]
    except (FileNotFoundError, ValueError):
        return 0


def _killed_then_resumed(scratch: ScratchCopy, where: Path, depth: int = 4) -> subprocess.CompletedProcess:
    """The gossip check with ``--checkpoint``, SIGKILLed once its checkpoint holds level ``depth``,
    then resumed to the end."""
    proc = subprocess.Popen([sys.executable, "-m", "canonmerge", *GOSSIP, "--checkpoint", str(where)],
                            cwd=scratch.root, env=scratch.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while _depth(where) < depth and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)  # waiting for the manifest to name the level
    assert proc.poll() is None, "the run ended before its kill"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    return scratch.run(*GOSSIP, "--resume", str(where), "--json", timeout=900)


def test_an_unpatched_copy_killed_and_resumed_passes_with_the_census_counts(tmp_path):
    out = _killed_then_resumed(ScratchCopy(tmp_path / "copy"), tmp_path / "ck")
    assert out.returncode == 0, out.stderr[-2000:]
    census = json.loads(out.stdout)["parts"][0]["data"]["gossip"]["census"]
    assert census["compared"] and census["agree"]


@pytest.mark.parametrize("bug", list(PLANTED))
def test_a_planted_checkpoint_bug_fails_the_resumed_command(bug, tmp_path):
    scratch = ScratchCopy(tmp_path / "copy").apply(PLANTED[bug])
    out = _killed_then_resumed(scratch, tmp_path / "ck")
    assert out.returncode in (1, 2), (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr


def test_a_checkpoint_of_another_configuration_is_refused_in_one_line(tmp_path):
    scratch = ScratchCopy(tmp_path / "copy")
    where = tmp_path / "ck"
    small = ("check", "--only", "C7", "--replicas", "2", "--fragments", "2", "--in-flight", "1")
    assert scratch.run(*small, "--checkpoint", str(where), timeout=900).returncode == 0
    out = scratch.run(*small[:-1], "2", "--resume", str(where), timeout=900)
    assert out.returncode == 2
    lines = [line for line in out.stderr.strip().splitlines() if not line.startswith("[progress]")]
    assert len(lines) == 1 and "--resume" in lines[0] and "in_flight 1 there, 2 here" in lines[0], out.stderr
