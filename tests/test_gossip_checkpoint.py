"""Checkpoints of the gossip search (``gossip_checkpoint``): a run SIGKILLed at several points
and resumed each time ends with the uninterrupted run's states, transitions, depth, verdict and
census agreement; a directory from another configuration, another version of the search code,
a torn write or a level written before it was complete is refused, naming the difference."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modelcheck import gossip_checkpoint
from modelcheck.gossip_census import census
from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_search import search
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from spec import ArgumentError, InputError

REF = ReferenceBackend()
TIES = universe("ties")
ROOT = Path(__file__).resolve().parent.parent
CONFIG = dict(replicas=3, fragments=2, in_flight=2)

_RUN = """
import json, sys
from pathlib import Path
from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_search import search
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
flag, where = sys.argv[1], Path(sys.argv[2])
r = search(ReferenceBackend(), universe("ties"), GossipConfig(**json.loads(sys.argv[3])), **{flag: where})
print(json.dumps([r.states, r.transitions, r.depth, r.exhaustive, r.violation is None, r.fair_exchanges]))
"""


def _start(flag: str, where: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _RUN, flag, str(where), json.dumps(CONFIG)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _level(where: Path) -> int:
    """The depth of the last completed level the checkpoint holds (0: none yet)."""
    try:
        return json.loads((where / gossip_checkpoint.MANIFEST).read_bytes())["level"]["depth"]
    except (FileNotFoundError, ValueError):
        return 0


def _kill_at(proc: subprocess.Popen, where: Path, depth: int) -> bool:
    """SIGKILL ``proc`` as soon as its checkpoint holds level ``depth``; whether it was still running."""
    deadline = time.monotonic() + 60
    while _level(where) < depth and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)  # waiting for the manifest to name the level, not for a time
    running = proc.poll() is None
    if running:
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    return running


def test_a_run_killed_and_resumed_at_several_points_ends_as_an_uninterrupted_one(tmp_path):
    whole = search(REF, TIES, GossipConfig(**CONFIG))
    expected = [whole.states, whole.transitions, whole.depth, whole.exhaustive, True, whole.fair_exchanges]
    c = census(3, 2, 2, None, symmetry=False, fold_drops=False)
    assert expected[:3] == [c.states, c.transitions, c.depth]
    where = tmp_path / "ck"
    killed = [_kill_at(_start("checkpoint", where), where, 2)]
    for depth in (5, 9):
        killed.append(_kill_at(_start("resume", where), where, depth))
    assert killed[0], "the first run ended before its kill"
    last = _start("resume", where)
    out, err = last.communicate(timeout=120)
    assert last.returncode == 0, err[-2000:]
    assert json.loads(out) == expected


def _checkpointed(tmp_path: Path, **config) -> Path:
    where = tmp_path / "ck"
    search(REF, TIES, GossipConfig(replicas=2, fragments=2, in_flight=1, **config), checkpoint=where)
    return where


def test_a_finished_checkpoint_resumes_to_the_same_counts(tmp_path):
    where = _checkpointed(tmp_path, symmetry=True)
    again = search(REF, TIES, GossipConfig(replicas=2, fragments=2, in_flight=1, symmetry=True), resume=where)
    whole = search(REF, TIES, GossipConfig(replicas=2, fragments=2, in_flight=1, symmetry=True))
    assert (again.states, again.transitions, again.depth) == (whole.states, whole.transitions, whole.depth)


def _resume(where: Path, **config):
    return search(REF, TIES, GossipConfig(replicas=2, fragments=2, in_flight=1, **config), resume=where)


def _manifest(where: Path) -> dict:
    return json.loads((where / gossip_checkpoint.MANIFEST).read_bytes())


def _rewrite(where: Path, manifest: dict) -> None:
    (where / gossip_checkpoint.MANIFEST).write_text(json.dumps(manifest))


def test_another_configuration_is_refused_naming_the_field(tmp_path):
    where = _checkpointed(tmp_path)
    with pytest.raises(ArgumentError, match=r"another configuration \(symmetry False there, True here\)"):
        _resume(where, symmetry=True)


def test_another_version_of_the_search_code_is_refused(tmp_path):
    where = _checkpointed(tmp_path)
    manifest = _manifest(where)
    manifest["code"] = "0" * 64
    _rewrite(where, manifest)
    with pytest.raises(ArgumentError, match="another version of the search code"):
        _resume(where)


def test_a_torn_level_file_or_manifest_is_refused(tmp_path):
    where = _checkpointed(tmp_path)
    level = where / max(_manifest(where)["levels"], key=lambda e: e["bytes"])["file"]
    level.write_bytes(level.read_bytes()[:-8])
    with pytest.raises(ArgumentError, match="torn write"):
        _resume(where)
    (where / gossip_checkpoint.MANIFEST).write_bytes(b'{"format": "canonmerge gos')
    with pytest.raises(ArgumentError, match="torn write"):
        _resume(where)


def test_a_level_written_before_it_was_complete_is_refused(tmp_path):
    where = _checkpointed(tmp_path)
    manifest = _manifest(where)
    manifest["counts"]["checked"] -= 1
    _rewrite(where, manifest)
    with pytest.raises(ArgumentError, match="before it was complete"):
        _resume(where)


def test_a_checkpoint_is_not_overwritten_nor_resumed_from_nothing(tmp_path):
    where = _checkpointed(tmp_path)
    with pytest.raises(ArgumentError, match="holds a checkpoint already"):
        search(REF, TIES, GossipConfig(replicas=2, fragments=2, in_flight=1), checkpoint=where)
    with pytest.raises(ArgumentError, match="holds no checkpoint"):
        _resume(tmp_path / "empty")
    with pytest.raises(ArgumentError, match="without --checkpoint"):
        search(REF, TIES, GossipConfig(), checkpoint=where, resume=where)


def test_the_search_code_hash_covers_every_search_module():
    assert set(gossip_checkpoint.SEARCH_MODULES) >= {"gossip_search", "gossip_visited", "gossip_checkpoint"}
    assert len(gossip_checkpoint.code_hash()) == 64
