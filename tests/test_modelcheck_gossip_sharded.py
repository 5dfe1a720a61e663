"""The gossip search sharded over worker processes (``gossip_sharded``): the counts of the
single-process search on every small configuration, plain and reduced; the same verdict and
depth on planted bugs, with traces that replay; the canary through the sharded pipeline; and
bugs planted in the sharded search's source, caught by ``canonmerge check --gossip-workers``."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit import Patch, ScratchCopy
from modelcheck.gossip import explore
from modelcheck.gossip_model import GossipConfig
from modelcheck.gossip_search import search
from modelcheck.gossip_sharded import owner, sharded_search, stable_encoding, stable_mark
from modelcheck.reference import ReferenceBackend
from modelcheck.shards import BackendRecipe
from modelcheck.trace_replay import replay
from modelcheck.universes import universe
from spec import ArgumentError
from tests.audit_helpers import failing_rows
from tests.broken_backends import plant
from tests.test_modelcheck_gossip_controls import COMMAND, GOSSIP_ROWS

REF = ReferenceBackend()
TIES = universe("ties")
COUNTS = ("states", "transitions", "depth", "merges", "unproved_merges", "folded_moves", "unfolded_states",
          "exhaustive", "fair_exchanges", "unrendered_comparisons")


def recipe(mutant: str | None = None) -> BackendRecipe:
    return BackendRecipe("tests.broken_backends:planted_reference", (mutant,), name="reference", mutant=mutant)


def counts(result):
    return {name: getattr(result, name) for name in COUNTS}


@pytest.mark.parametrize("config", [
    GossipConfig(replicas=2, fragments=2, in_flight=2),
    GossipConfig(replicas=3, fragments=2, in_flight=2, symmetry=True),
    GossipConfig(replicas=3, fragments=3, in_flight=1, symmetry=True, fold_drops=True),
    GossipConfig(replicas=2, fragments=3, in_flight=2, fold_drops=True),
    GossipConfig(replicas=3, fragments=2, in_flight=2, max_depth=4),
], ids=lambda c: f"{c.replicas}x{c.fragments}<={c.in_flight}{'-sym' if c.symmetry else ''}"
                 f"{'-fold' if c.fold_drops else ''}{'-depth' if c.max_depth else ''}")
def test_the_sharded_search_counts_what_the_single_process_search_counts(config):
    single = search(REF, TIES, config)
    assert single.violation is None
    for workers in (1, 3):
        sharded = sharded_search(recipe(), TIES, config, workers)
        assert counts(sharded) == counts(single), workers
        assert sum(sharded.details["shards"]["states_per_worker"]) == single.states


def test_a_bounded_sharded_run_stops_at_or_before_the_bound_and_says_it_is_not_exhaustive():
    config = GossipConfig(replicas=3, fragments=3, in_flight=2, symmetry=True, max_states=500)
    r = sharded_search(recipe(), TIES, config, 2)
    assert not r.exhaustive and r.states <= 500 and r.violation is None


@pytest.mark.parametrize("mutant, fair", [("merge-keeps-duplicates", True), ("order-by-arrival", False),
                                          ("unstable-sort", True), ("render-depends-on-merge-tree", True)])
def test_planted_bugs_are_found_at_the_single_process_depth_with_traces_that_replay(mutant, fair):
    config = GossipConfig(replicas=2, fragments=3, in_flight=2, symmetry=True)
    bad = plant(REF, mutant)
    single = search(bad, TIES, config, mutant=mutant, fair_exchange=fair)
    sharded = sharded_search(recipe(mutant), TIES, config, 2, mutant=mutant, fair_exchange=fair)
    assert single.violation is not None and sharded.violation is not None
    assert sharded.violation_depth == single.violation_depth
    assert sharded.kind in ("same-set", "fair-exchange") and sharded.violation["mutant"] == mutant
    assert replay(sharded.violation, bad).reproduced


def test_explore_sharded_runs_its_canary_through_the_sharded_search_and_every_control_holds():
    config = GossipConfig(replicas=3, fragments=2, in_flight=1, symmetry=True)
    r = explore(REF, TIES, config, shards=2, recipe=recipe())
    assert r.violation is None and not r.blind and r.details["shards"]["workers"] == 2
    assert r.details["canary"]["seen"] and r.details["census"]["compared"] and r.details["census"]["agree"]


def test_bad_worker_counts_and_a_missing_recipe_are_refused():
    with pytest.raises(ArgumentError, match="workers"):
        sharded_search(recipe(), TIES, GossipConfig(), 0)
    with pytest.raises(ArgumentError, match="shards"):
        explore(REF, TIES, GossipConfig(), shards=0)
    with pytest.raises(ValueError, match="BackendRecipe"):
        explore(REF, TIES, GossipConfig(), shards=2)


def test_the_stable_encoding_is_one_per_value_whatever_the_set_was_built_from():
    a = frozenset([b"x" * n for n in range(40)])
    b = frozenset(reversed([b"x" * n for n in range(40)]))
    assert stable_encoding(a) == stable_encoding(b) and stable_mark(a) == stable_mark(b)
    distinct = [(), (b"",), ("",), (0,), (False,), frozenset(), frozenset({b""}), ((b"a",), b"b"), ((b"a", b"b"),),
                (1.0,), None]
    assert len({stable_encoding(v) for v in distinct}) == len(distinct)
    assert 0 <= stable_mark(a) < 2**63
    assert {owner(bytes([i]), 3) for i in range(64)} == {0, 1, 2}
    with pytest.raises(TypeError, match="object"):
        stable_encoding((object(),))


SHARDED_COMMAND = (*COMMAND[:-1], "--gossip-workers", "2", "--json")

# the set numbers a node's facts records compare, numbered per process again (in order of first
# sight, as the single-process verdict does): records from two workers then disagree
PER_PROCESS_SET_NUMBERS = Patch(
    "modelcheck/gossip_sharded.py",
    "        return stable_mark(self.model.backend.abstract(state).ids())",
    "        return Verdict.set_number(self, state)")
# a child sent to its parent's owner, not its own: one state reached from two workers' parents is
# kept by both, and counted twice
PARENTS_OWNER = Patch("modelcheck/gossip_sharded.py", "                to = owner(ck, workers)",
                      "                to = owner(k, workers)")


def test_the_sharded_command_passes_on_an_unpatched_copy(tmp_path):
    out = ScratchCopy(tmp_path).run(*SHARDED_COMMAND, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    gossip = json.loads(out.stdout)["parts"][0]["data"]["gossip"]
    assert gossip["shards"]["workers"] == 2 and not gossip["blind"] and gossip["census"]["agree"]


@pytest.mark.parametrize("patch, blind", [(PER_PROCESS_SET_NUMBERS, None), (PARENTS_OWNER, "census")],
                         ids=["per-process set numbers", "child sent to its parent's owner"])
def test_a_bug_planted_in_the_sharded_search_fails_the_command(tmp_path, patch, blind):
    out = ScratchCopy(tmp_path).apply(patch).run(*SHARDED_COMMAND, timeout=900)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert failing_rows(out.stdout) & GOSSIP_ROWS
    if blind is not None:
        assert any(blind in b for b in json.loads(out.stdout)["parts"][0]["data"]["gossip"]["blind"])


def test_gossip_workers_below_one_is_a_usage_error_naming_the_flag(capsys):
    from canonmerge.cli import main

    assert main([*COMMAND[:-1], "--gossip-workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "--gossip-workers" in err and len(err.strip().splitlines()) == 1


def test_a_sharded_run_of_a_planted_backend_matches_the_single_process_verdict_at_each_symmetry():
    for symmetry in (False, True):
        config = dataclasses.replace(GossipConfig(replicas=3, fragments=2, in_flight=2), symmetry=symmetry)
        single = search(plant(REF, "unstable-sort"), TIES, config, mutant="unstable-sort")
        sharded = sharded_search(recipe("unstable-sort"), TIES, config, 3, mutant="unstable-sort")
        assert (sharded.violation is None) == (single.violation is None)
        assert sharded.violation_depth == single.violation_depth


def _in_session(sid: int) -> list[int]:
    """Live processes of session ``sid`` (field 6 of /proc/PID/stat), zombies left out."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


# a guard against a hang only: the verdicts below wait on events (a line, an exit), never on time
HANG_S = 900


def _searching(process: subprocess.Popen) -> bytes:
    """Block until the workers report their first level (they are up and searching): the event
    the signal tests act on.  What was read comes back, for the tests' messages."""
    seen = b""
    for line in process.stderr:
        seen += line
        if line.startswith(b"[progress] gossip ") and b"states: " in line:
            return seen
    raise AssertionError(f"the search ended before its first level: {seen.decode()[-2000:]}")


def _ended(process: subprocess.Popen) -> tuple[bytes, bytes]:
    try:
        return process.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"hung: no exit {HANG_S} s after the signal") from None


@pytest.mark.heavy
def test_ctrl_c_during_a_sharded_search_exits_130_with_one_line_and_leaves_no_worker(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it, while the workers search."""
    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "check", "--only", "C7", "--workers", "1",
                                "--gossip-workers", "2", "--replicas", "4", "--fragments", "4", "--in-flight", "2",
                                "--fold-drops", "--max-states", "5000000", "--trace-dir", str(tmp_path / "traces")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    seen = _searching(process)
    os.killpg(process.pid, signal.SIGINT)
    raw_out, raw_err = _ended(process)
    err = (seen + (raw_err or b"")).decode()
    assert process.returncode == 130, err[-2000:]
    assert "Traceback" not in raw_out.decode() + err and "KeyboardInterrupt" not in err
    assert [line for line in err.splitlines() if not line.startswith("[progress]")] == [
        "canonmerge check: interrupted (SIGINT); outputs are written whole or not at all"]
    deadline = time.monotonic() + 120  # children are reaped after the parent: a guard, not a verdict
    while _in_session(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _in_session(process.pid) == []


@pytest.mark.heavy
def test_a_worker_killed_from_outside_is_one_line_and_exit_2():
    """SIGKILL to one worker (what the OOM killer does) while the search runs."""
    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "check", "--only", "C7", "--workers", "1",
                                "--gossip-workers", "2", "--replicas", "4", "--fragments", "4", "--in-flight", "2",
                                "--fold-drops", "--max-states", "5000000"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    seen = _searching(process)
    parents = {pid: int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
               for pid in _in_session(process.pid)}
    workers = [pid for pid, ppid in parents.items() if ppid in parents and ppid != process.pid]
    assert workers, (parents, seen.decode()[-2000:])
    os.kill(workers[0], signal.SIGKILL)
    _, raw_err = _ended(process)
    err = (seen + (raw_err or b"")).decode()
    assert process.returncode == 2, err[-2000:]
    lines = [line for line in err.splitlines() if not line.startswith("[progress]")]
    assert len(lines) == 1 and "gossip shard worker" in lines[0] and "Traceback" not in err, lines
    deadline = time.monotonic() + 120  # children are reaped after the parent: a guard, not a verdict
    while _in_session(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _in_session(process.pid) == []


class _Pipe:
    """A worker's pipe whose end the coordinator sees as ``error`` (EOF, EOF mid-message, broken pipe)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def recv(self):
        raise self.error

    def send(self, message):
        raise self.error


class _Process:
    """A worker process that has exited (``exitcode`` set) or exits while the coordinator waits."""

    def __init__(self, exitcode: int | None, on_join: int | None) -> None:
        self.exitcode, self.on_join, self.waited = exitcode, on_join, None

    def join(self, timeout=None):
        self.waited = timeout
        if self.exitcode is None:
            self.exitcode = self.on_join


def _pool(pipe: _Pipe, process: _Process):
    from modelcheck.gossip_workers import Workers

    pool = object.__new__(Workers)
    pool.connections, pool.processes = [_Pipe(EOFError()), pipe], [_Process(None, None), process]
    return pool


@pytest.mark.parametrize("error", [EOFError(), OSError("got end of file during message"), BrokenPipeError()],
                         ids=["eof", "eof-mid-message", "broken-pipe"])
@pytest.mark.parametrize("exit_first", [True, False], ids=["exit-then-eof", "eof-then-exit"])
def test_a_worker_gone_is_one_line_naming_it_whichever_the_coordinator_sees_first(error, exit_first):
    """The pipe's end and the worker's exit are one event: in both orders, and whether the end is a
    clean EOF, one in the middle of a message or a broken pipe on send, the error names the worker
    and how it ended."""
    from modelcheck.gossip_workers import GONE_JOIN_S

    process = _Process(-signal.SIGKILL if exit_first else None, -signal.SIGKILL)
    pool = _pool(_Pipe(error), process)
    with pytest.raises(ChildProcessError) as raised:
        pool.call(1, "expand", 0) if isinstance(error, BrokenPipeError) else pool._answer(1)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("gossip shard worker 1 was killed by SIGKILL"), message
    assert process.waited == GONE_JOIN_S


def test_a_worker_that_closed_its_pipe_but_lives_on_is_named_so():
    process = _Process(None, None)
    with pytest.raises(ChildProcessError, match="gossip shard worker 1 closed its pipe and has not exited"):
        _pool(_Pipe(EOFError()), process)._answer(1)
