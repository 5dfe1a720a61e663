"""A warm start for scratch-copy runs: ``python -m canonmerge ARGS`` forked from a zygote that
has already imported torch, transformers and z3, instead of a fresh interpreter that imports them
again (about 8 s of a 9 s ``canonmerge realstate`` on the tiny replay is importing them).

The child is the product's own command line, run from the scratch copy's source: the zygote
(``audit/zygote.py``) refuses to start if preloading imported any module of the project, and the
child gets the copy's ``PYTHONPATH``, working directory and environment.  What it shares with its
siblings is third-party code only, already imported -- so an environment variable that torch or
transformers reads while being imported keeps the zygote's value.  Used by the test suite
(``tests/conftest.py``); ``canonmerge audit`` keeps fresh interpreters."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from audit.scratch import kill_group

ZYGOTE = Path(__file__).with_name("zygote.py")
# what the product's commands import at start; importing the rest stays each child's own work
PRELOAD = ("numpy", "torch", "z3", "transformers", "transformers.cache_utils",
           "transformers.models.qwen3.modeling_qwen3", "transformers.models.qwen2.modeling_qwen2",
           "transformers.models.llama.modeling_llama", "transformers.models.mistral.modeling_mistral")


class ZygoteError(RuntimeError):
    """The zygote could not start or stopped answering."""


class WarmLauncher:
    """Runs ``python -m canonmerge ARGS`` as children of one zygote; safe to call from several
    threads at once (each run is its own child).  Started on first use."""

    def __init__(self, preload: Sequence[str] = PRELOAD, env: dict[str, str] | None = None) -> None:
        self.preload = tuple(preload)
        self.env = env
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._answers: dict[str, dict] = {}
        self._arrived = threading.Condition()
        self._reader: threading.Thread | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        process = subprocess.Popen([sys.executable, str(ZYGOTE), *self.preload], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, env=self.env if self.env is not None else os.environ,
                                   cwd=tempfile.gettempdir())
        assert process.stdout is not None
        first = json.loads(process.stdout.readline() or b'{"error": "exited before it was ready"}')
        if not first.get("ready"):
            process.kill()
            raise ZygoteError(f"the zygote did not start: {first.get('error')}")
        self._process = process
        self._reader = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._reader.start()
        return process

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            message = json.loads(line)
            with self._arrived:
                self._answers.setdefault(message["id"], {}).update(message)
                self._arrived.notify_all()
        with self._arrived:
            self._answers["<gone>"] = {}
            self._arrived.notify_all()

    def _wait_for(self, run_id: str, key: str, deadline: float | None) -> dict | None:
        with self._arrived:
            while key not in self._answers.get(run_id, {}):
                if "<gone>" in self._answers:
                    raise ZygoteError("the zygote exited while a run was in flight")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._arrived.wait(left)
            return self._answers[run_id]

    def run(self, args: Sequence[str], cwd: Path, env: dict[str, str],
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """Like ``subprocess.run([python, -m, canonmerge, *args], capture_output=True, text=True)``:
        a ``CompletedProcess``, or ``subprocess.TimeoutExpired`` once the child is killed."""
        command = [sys.executable, "-m", "canonmerge", *args]
        run_id = str(next(self._ids))
        with tempfile.TemporaryDirectory(prefix="canonmerge-warm-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {"id": run_id, "argv": list(args), "cwd": str(cwd), "env": dict(env),
                       "stdout": str(out), "stderr": str(err)}
            with self._lock:
                process = self._start()
                assert process.stdin is not None
                process.stdin.write((json.dumps(request) + "\n").encode())
                process.stdin.flush()
            started = self._wait_for(run_id, "pid", None)
            assert started is not None
            deadline = None if timeout is None else time.monotonic() + timeout  # the run's time, not the zygote's start
            ended = self._wait_for(run_id, "returncode", deadline)
            if ended is None:
                kill_group(started["pid"])
                self._wait_for(run_id, "returncode", None)
                self._forget(run_id)
                raise subprocess.TimeoutExpired(command, timeout or 0)
            self._forget(run_id)
            stdout = out.read_bytes().decode("utf-8", errors="replace") if out.exists() else ""
            stderr = err.read_bytes().decode("utf-8", errors="replace") if err.exists() else ""
        return subprocess.CompletedProcess(command, ended["returncode"], stdout, stderr)

    def _forget(self, run_id: str) -> None:
        with self._arrived:
            self._answers.pop(run_id, None)

    def close(self) -> None:
        with self._lock:
            if self._process is not None:
                if self._process.stdin is not None:
                    self._process.stdin.close()
                try:
                    self._process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                if self._process.stdout is not None:
                    self._process.stdout.close()
                self._process = None
