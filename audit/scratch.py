"""A scratch copy of canonmerge's packages with source-level patches applied, and the product's
own command line run on that copy.

Patches are exact text replacements that must match exactly once: a patch that no longer applies
(because the code it targets moved) is an error, never a silently unmutated run that "passes".
The copy is imported through ``PYTHONPATH`` ahead of any installed canonmerge, and every run
checks that the patched file is the one Python actually loaded."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from spec.interrupts import Interrupted

PACKAGES = ("spec", "proofs", "modelcheck", "realstate", "canonmerge", "audit", "oracle")


class Launcher(Protocol):
    def run(self, args: Sequence[str], cwd: Path, env: dict[str, str],
            timeout: float | None = None) -> subprocess.CompletedProcess[str]: ...


class Stopped(Exception):
    """Raised instead of starting a run once ``kill_live_groups`` has been called."""


_live_groups: set[int] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


def run_group(command: Sequence[str], cwd: Path, env: dict[str, str],
              timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)`` in a process group of its own,
    killed whole on a timeout, on an interrupt, or by ``kill_live_groups``: a check part's pool
    workers would otherwise go on computing, orphaned, while the next mutant runs."""
    with _live_lock:
        if _stopping.is_set():
            raise Stopped("the audit is stopping: no new run starts")
        process = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        _live_groups.add(process.pid)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:  # TimeoutExpired, KeyboardInterrupt, ...: nothing of the run outlives it
        kill_group(process.pid)
        process.communicate()
        raise
    finally:
        with _live_lock:
            _live_groups.discard(process.pid)
    if _stopping.is_set():
        raise Stopped("the audit was stopped while this run was in flight")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def kill_group(pgid: int) -> None:
    """SIGKILL to process group ``pgid``; a group already gone is not an error."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def stopping_runs_on_exit() -> Iterator[None]:
    """Inside: SIGTERM raises ``spec.interrupts.Interrupted`` in the main thread (as SIGINT raises
    KeyboardInterrupt), and leaving by any exception kills every run in flight, with all it
    started, and refuses new ones: a stopped audit leaves no part process behind."""
    _stopping.clear()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    except BaseException:
        kill_live_groups()
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: object) -> None:
    raise Interrupted(signum)  # the command line's one line and exit 128 + signum


def kill_live_groups() -> None:
    """Kill every run in flight, with all they started, and refuse new ones (a stopped audit)."""
    with _live_lock:
        _stopping.set()
        for pgid in _live_groups:
            kill_group(pgid)


# how ``ScratchCopy.run`` starts the command: None is a fresh interpreter (the product's audit);
# the test suite installs an ``audit.warm.WarmLauncher`` so runs skip re-importing torch
_launcher: Launcher | None = None


def use_launcher(launcher: Launcher | None) -> None:
    global _launcher
    _launcher = launcher


class PatchError(ValueError):
    """A patch that does not apply exactly once to the file it names."""


def project_root() -> Path:
    """The directory holding the packages (the repository root, or site-packages)."""
    return Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Patch:
    """Replace ``old`` by ``new`` in ``path`` (relative to the project root); ``old`` must occur
    exactly once, so that the bug lands where it was meant to."""

    path: str
    old: str
    new: str

    def __post_init__(self) -> None:
        if self.old == self.new:
            raise PatchError(f"{self.path}: the patch changes nothing")
        if Path(self.path).is_absolute() or ".." in Path(self.path).parts:
            raise PatchError(f"{self.path}: a patch path is relative to the project root")

    def apply(self, root: Path) -> None:
        target = root / self.path
        try:
            text = target.read_text(encoding="utf-8")
        except OSError as exc:
            raise PatchError(f"{self.path}: cannot read ({exc.strerror})") from None
        count = text.count(self.old)
        if count != 1:
            raise PatchError(f"{self.path}: the text to replace occurs {count} times (want exactly 1): "
                             f"{self.old[:80]!r}")
        target.write_text(text.replace(self.old, self.new), encoding="utf-8")


class ScratchCopy:
    """The packages copied under ``directory``; ``apply`` plants bugs, ``run`` runs commands."""

    def __init__(self, directory: Path, source: Path | None = None,
                 packages: Sequence[str] = PACKAGES) -> None:
        self.root = Path(directory)
        self.root.mkdir(parents=True, exist_ok=True)
        src = source or project_root()
        # __pycache__ comes along for numba's compiled kernels (*.nbi, *.nbc): numba keys each by the
        # SHA-256 of its source file, so a kernel whose file a patch changed compiles afresh and an
        # unchanged one loads instead of costing seconds in every copy.  Python's bytecode stays
        # behind: its key (whole-second mtime and size) could match a same-length patch.
        ignore = shutil.ignore_patterns("*.pyc", "*.pyc.*")
        for name in packages:
            shutil.copytree(src / name, self.root / name, ignore=ignore, dirs_exist_ok=True)
        self.patches: list[Patch] = []

    def apply(self, *patches: Patch) -> ScratchCopy:
        for patch in patches:
            patch.apply(self.root)
            self.patches.append(patch)
        return self

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(extra or {})
        return env

    def python(self, code: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``python -c code`` against the copy."""
        return run_group([sys.executable, "-c", code], self.root, self.env(), timeout)

    def run(self, *args: str, timeout: float | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``python -m canonmerge ARGS`` on the copy (after checking the copy is what gets imported)."""
        self.check_imported()
        if _launcher is not None:
            return _launcher.run(args, self.root, self.env(env), timeout)
        return run_group([sys.executable, "-m", "canonmerge", *args], self.root, self.env(env), timeout)

    def check_imported(self) -> None:
        """Every patched package must be imported from the copy, not from an installed canonmerge."""
        # top-level packages only: find_spec of a submodule would import (run) its parents,
        # and a planted bug that raises at import time is the product crashing, not a bad copy
        modules = sorted({p.path.split("/")[0] for p in self.patches if p.path.endswith(".py")})
        if not modules:
            return
        code = ("import importlib.util, sys\n"
                f"for name in {modules!r}:\n"
                "    spec = importlib.util.find_spec(name)\n"
                "    print(spec.origin)\n")
        out = self.python(code, timeout=60)
        origins = out.stdout.split()
        if out.returncode != 0 or len(origins) != len(modules) or not all(
                Path(o).resolve().is_relative_to(self.root.resolve()) for o in origins):
            raise PatchError(f"the scratch copy is not what Python imports: {out.stdout}{out.stderr}")
