"""Hostile conditions that only a real process shows: a FIFO given as a file (with a timeout: a
hang fails the test), stdout closed, full or a broken pipe, Ctrl-C in the middle of a run that
has worker processes, and errors inside child processes (replicate ranks, soak workers) — each
one line, no traceback, nothing half-written."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile_helpers import ROOT, World, make_world, quote, run_process, tree_digest


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr


@pytest.mark.parametrize("argv", [["check", "--replay", "{fifo}"],
                                  ["bench", "--geometry", "qwen3-tiny", "--problems", "{fifo}"],
                                  ["fragment", "inspect", "{fifo}"]],
                         ids=["trace", "problem file", "fragment file"])
def test_a_fifo_given_as_a_file_is_refused_without_waiting(argv: list[str], world: World) -> None:
    done = run_process(" ".join(quote(a.format(fifo=world.fifo)) for a in argv), timeout=90)
    _clean(done)
    assert done.returncode == 2 and str(world.fifo) in done.stderr and "regular file" in done.stderr


@pytest.mark.parametrize("command,redirect,says", [
    ("store list {store}", ">&-", "stdout: is closed"),
    ("store list {store} --json", ">&-", "stdout: is closed"),
    ("store list {store}", ">/dev/full", "stdout: cannot write: No space left on device"),
    ("store verify {store} --json", ">/dev/full", "stdout: cannot write: No space left on device"),
    ("claims", ">/dev/full", "stdout: cannot write: No space left on device"),
], ids=["closed", "closed --json", "full", "full --json", "full claims"])
def test_a_closed_or_full_stdout_is_one_line_naming_stdout(command: str, redirect: str, says: str,
                                                           world: World) -> None:
    before = tree_digest(world.store)
    done = run_process(f"{command.format(store=quote(world.store))} {redirect}", timeout=90)
    _clean(done)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert tree_digest(world.store) == before


def test_a_broken_pipe_stops_quietly(world: World) -> None:
    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "claims", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    process.stdout.close()  # the reader is gone before anything is written
    _, err = process.communicate(timeout=90)
    assert "Traceback" not in err.decode() and "Exception ignored" not in err.decode(), err.decode()
    assert process.returncode in (0, 1)


def test_ctrl_c_during_check_exits_130_with_one_line_and_no_worker_traceback(tmp_path: Path) -> None:
    """SIGINT to the whole process group, as a terminal sends it, while the process pool runs."""
    traces = tmp_path / "traces"
    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "check", "--workers", "2", "--trace-dir",
                                str(traces), "--plant", "no-tie-break"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               start_new_session=True)
    os.set_blocking(process.stderr.fileno(), False)
    seen, deadline = b"", time.monotonic() + 120
    while b"shards on process pool" not in seen and time.monotonic() < deadline and process.poll() is None:
        seen += process.stderr.read() or b""
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    os.set_blocking(process.stderr.fileno(), True)
    raw_out, raw_err = process.communicate(timeout=120)
    out, err = raw_out.decode(), (seen + (raw_err or b"")).decode()
    assert process.returncode == 130, err
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in err, err
    assert [line for line in err.splitlines() if not line.startswith("[progress]")] == [
        "canonmerge check: interrupted (SIGINT); outputs are written whole or not at all"]
    assert not traces.exists() or not [p for p in traces.iterdir() if p.name.endswith(".tmp")]


def test_a_replicate_rank_that_fails_reports_one_line(tmp_path: Path) -> None:
    """A rank whose input is missing: its error comes back in the result file, the process
    exits 1, and its stderr holds no traceback."""
    script = f"""
import multiprocessing, sys
from realstate.processes.replicate.rank import RankJob, run_rank
from realstate.processes.soak.endpoint import free_port
job = RankJob(0, 1, "gloo", "cpu", f"tcp://127.0.0.1:{{free_port()}}", ({str(tmp_path / 'absent.cmfrag')!r},), 0, 0,
              0, None, {str(tmp_path / 'rank.json')!r}, 30.0)
p = multiprocessing.get_context("fork").Process(target=run_rank, args=(job,))
p.start(); p.join(60); print(p.exitcode)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "1" and "Traceback" not in done.stderr, done.stderr
    result = json.loads((tmp_path / "rank.json").read_text())
    assert result["rank"] == 0 and "\n" not in result["error"] and result["error"], result


def _soak_worker(conn) -> None:  # a forked soak worker, driven over a pipe
    from realstate.processes.soak.synthetic import FragmentShape
    from realstate.processes.soak.worker import serve

    serve(conn, 0, FragmentShape(), {})


def test_a_soak_worker_reports_an_unexpected_error_as_one_line() -> None:
    parent, child = multiprocessing.get_context("fork").Pipe()
    worker = multiprocessing.get_context("fork").Process(target=_soak_worker, args=(child,))
    worker.start()
    try:
        assert parent.recv() == {"ready": True}
        parent.send({"op": "put"})  # no store, agent or index: a KeyError inside the worker
        assert parent.recv() == {"started": True}
        reply = parent.recv()
        assert reply["ok"] is False and reply["error"].startswith("KeyError") and "\n" not in reply["error"]
        parent.send({"op": "stop"})
        worker.join(30)
        assert worker.exitcode == 0
    finally:
        if worker.is_alive():
            worker.kill()


@pytest.mark.parametrize("signum, to_group", [
    pytest.param(signal.SIGTERM, False, id="SIGTERM to the command"),
    pytest.param(signal.SIGTERM, True, id="SIGTERM to its group", marks=pytest.mark.heavy),
    pytest.param(signal.SIGHUP, True, id="SIGHUP to its group", marks=pytest.mark.heavy),
])
def test_sigterm_and_sighup_stop_a_pool_like_ctrl_c(signum: int, to_group: bool) -> None:
    """A supervisor's SIGTERM or a terminal's hang-up while the process pool runs: the same clean-up
    as Ctrl-C (workers stopped), one line naming the signal, exit 128 + signal, no process left.
    The signal is sent on an event (the pool's progress line); the timeout guards a hang only."""
    from tests.test_modelcheck_gossip_sharded import HANG_S, _in_session

    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "check", "--workers", "2", "--no-gossip",
                                "--max-arity", "6"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    seen = b""
    for line in process.stderr:
        seen += line
        if b"shards on process pool" in line:
            break
    assert process.poll() is None, seen.decode()[-2000:]
    (os.killpg if to_group else os.kill)(process.pid, signum)
    try:
        raw_out, raw_err = process.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"hung: no exit {HANG_S} s after {signal.Signals(signum).name}") from None
    err = (seen + raw_err).decode()
    assert process.returncode == 128 + signum, err[-2000:]
    assert "Traceback" not in raw_out.decode() + err
    assert [line for line in err.splitlines() if not line.startswith("[progress]")] == [
        f"canonmerge check: interrupted ({signal.Signals(signum).name}); outputs are written whole or not at all"]
    deadline = time.monotonic() + 120  # children are reaped after the parent: a guard, not a verdict
    while _in_session(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _in_session(process.pid) == []


@pytest.mark.parametrize("signum", [pytest.param(signal.SIGTERM, id="SIGTERM"),
                                    pytest.param(signal.SIGHUP, id="SIGHUP", marks=pytest.mark.heavy)])
def test_a_store_merge_stopped_by_a_signal_leaves_no_temporary_and_a_store_that_verifies(
        signum: int, tmp_path: Path) -> None:
    """The signal is sent once the destination holds some fragments (an event, polled); the merge
    stops with one line, and what it wrote is whole: no temporary, and `store verify` passes."""
    from realstate.exchange.stores import DirectoryStore
    from tests.realstate_helpers import random_fragment, tiny_fingerprint
    from tests.test_modelcheck_gossip_sharded import HANG_S

    source = DirectoryStore(tmp_path / "src", create=True)
    for i in range(300):
        source.put(random_fragment(tiny_fingerprint(), 64, seed=i))
    dst = tmp_path / "dst"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "store", "merge", str(dst), str(source.path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + HANG_S
    while process.poll() is None and not (dst.is_dir() and len(os.listdir(dst)) >= 20):
        assert time.monotonic() < deadline, "hung: the merge wrote nothing"
        time.sleep(0.01)
    assert process.poll() is None, "the merge ended before the signal (make the source larger)"
    os.kill(process.pid, signum)
    _, err = process.communicate(timeout=HANG_S)
    assert process.returncode == 128 + signum, err.decode()[-2000:]
    assert err.decode().splitlines() == [
        f"canonmerge store: interrupted ({signal.Signals(signum).name}); outputs are written whole or not at all"]
    assert [name for name in os.listdir(dst) if "tmp" in name] == []
    verify = subprocess.run([sys.executable, "-m", "canonmerge", "store", "verify", str(dst)], capture_output=True,
                            text=True, env=env, timeout=HANG_S)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_sigterm_while_the_fork_server_starts_is_held_and_raised_after(monkeypatch) -> None:
    """The window a pool's progress line may already have been printed in: a SIGTERM then must
    not be lost (it once was: the disposition was SIG_IGN while the server started)."""
    from multiprocessing import forkserver

    from spec.interrupts import Interrupted, start_forkserver_without_interrupts, stopping_signals

    started = []
    monkeypatch.setattr(forkserver, "ensure_running", lambda: (os.kill(os.getpid(), signal.SIGTERM),
                                                                started.append(True)))
    with stopping_signals(), pytest.raises(Interrupted) as raised:
        start_forkserver_without_interrupts()
    assert started == [True] and raised.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
