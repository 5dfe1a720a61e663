"""The zygote behind ``audit.warm``: a process that has imported the heavy third-party modules
(torch, transformers, z3, ...) once and forks a child per request to run ``python -m canonmerge``.

Run by path (``python audit/zygote.py MODULE ...``), never imported: the zygote must hold no
module of the project, so each child imports the scratch copy's own code, exactly as a fresh
interpreter with ``PYTHONPATH=<copy>`` would.  It starts no thread (forking a threaded process
is unsafe), so it waits on its stdin and reaps children in one polling loop.

Protocol, one JSON object per line: the parent sends ``{"id", "argv", "cwd", "env", "stdout",
"stderr"}``; the zygote answers ``{"id", "pid"}`` once the child runs and ``{"id",
"returncode"}`` once it has ended (a negative code is the signal that ended it, as in
``subprocess``).  Standard library only, so it runs before anything is imported."""

from __future__ import annotations

import atexit
import importlib
import io
import json
import os
import runpy
import select
import sys
import threading
import traceback

PROJECT = ("spec", "proofs", "modelcheck", "realstate", "canonmerge", "audit", "oracle")


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter does with ``SystemExit``: None is 0, an int is itself, anything
    else is printed to stderr and gives 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(request: dict, base_path: list[str]) -> None:
    """Become ``python -m canonmerge ARGV`` run in ``cwd`` with ``env``; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # its own process group (the parent sets it too: whichever runs first)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        os.chdir(request["cwd"])
        env = request["env"]
        os.environ.clear()
        os.environ.update(env)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [request["cwd"], *extra, *base_path]  # as `python -m` with this PYTHONPATH
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        importlib.invalidate_caches()
        sys.argv = ["canonmerge", *request["argv"]]
        try:
            runpy.run_module("canonmerge", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:  # what an uncaught exception does to a fresh interpreter
            traceback.print_exc()
            code = 1
        # an interpreter's exit: join non-daemon threads, then the atexit handlers
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code if 0 <= code <= 255 else 1)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, 9)
    except ProcessLookupError:
        pass


def _say(message: dict) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def main(preload: list[str]) -> int:
    del sys.path[0]  # this script's directory (audit/) must not be importable as top-level modules
    own = {p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    base_path = [p for p in sys.path if p not in own]
    for name in preload:
        importlib.import_module(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in PROJECT)
    if leaked:
        _say({"error": f"preloading imported the project's own modules {leaked[:5]}"})
        return 2
    if threading.active_count() != 1:
        _say({"error": f"preloading started threads ({threading.active_count()}); forking would be unsafe"})
        return 2
    _say({"ready": True})
    running: dict[int, str] = {}
    pending = b""
    open_ = True
    while open_ or running:
        ready, _, _ = select.select([0] if open_ else [], [], [], 0.02)
        if ready:
            chunk = os.read(0, 65536)
            if not chunk:  # the parent is gone: nobody will read what the children print
                open_ = False
                for pid in running:
                    _kill_group(pid)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(request, base_path)
                try:  # before the pid is reported: a timeout's kill of the group must find it
                    os.setpgid(pid, pid)
                except OSError:  # the child did it first, or has already exited
                    pass
                running[pid] = request["id"]
                _say({"id": request["id"], "pid": pid})
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid in running:
                _say({"id": running.pop(pid), "returncode": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
