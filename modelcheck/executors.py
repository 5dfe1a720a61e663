"""Where shards run: in this process, on a local process pool, or as Ray tasks.

Every engine runs the same tasks through ``shards.perform`` and hands each result to ``done``
as it completes; the runner merges them in plan order, so the engine changes only the wall
time.  The pool uses the ``forkserver`` start method with the backend's module preloaded: the
workers fork from a process that imported torch once but never ran it (forking a process whose
thread pools ran is unsafe), so a worker starts in milliseconds rather than re-importing torch.
Ray is imported only when ``--engine ray`` is chosen."""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from modelcheck.backend import Backend
from modelcheck.shards import BackendRecipe, Done, Task, largest_first, perform, perform_remote
from spec import ArgumentError, InputError
from spec.arguments import integer
from spec.interrupts import deferred_interrupts, ignore_interrupts, raise_held, start_forkserver_without_interrupts

ENGINES = ("local", "ray")
CODE_PACKAGES = ("spec", "modelcheck", "oracle")   # the recipe adds the backend's own package


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Executor(Protocol):
    name: str
    workers: int

    def run(self, tasks: Sequence[Task], done: Done) -> None: ...


@dataclass
class InProcess:
    """Every task in this process, in plan order (the reference the others must equal)."""

    backend: Backend
    name: str = "in-process"
    workers: int = 1

    def run(self, tasks: Sequence[Task], done: Done) -> None:
        for task in tasks:
            done(task, perform(self.backend, task))


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started, wait for the shards in flight (seconds each), and wait for
    every worker process to be gone while the queues they unpickle are still alive: a worker
    that was still starting would otherwise find its queue's semaphore already removed and
    print a traceback."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public handle on them
    queue = getattr(pool, "_call_queue", None)
    pool.shutdown(wait=True, cancel_futures=True)
    for process in processes:
        process.join()
    del queue


@dataclass
class ProcessPool:
    """A local pool of ``workers`` processes; each builds the backend once from the recipe."""

    recipe: BackendRecipe
    workers: int
    name: str = "process pool"

    def run(self, tasks: Sequence[Task], done: Done) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([self.recipe.module])
        start_forkserver_without_interrupts()
        recipe = self.recipe.pinned()
        # Ctrl-C is held back while the pool starts (a worker start cut short leaves a half-started
        # worker that prints a traceback) and raised once the pool can be stopped cleanly
        with deferred_interrupts() as interrupted:
            pool = ProcessPoolExecutor(max_workers=max(1, min(self.workers, len(tasks))), mp_context=context,
                                       initializer=ignore_interrupts)
            futures = {pool.submit(perform_remote, recipe, t): t for t in largest_first(tasks)}
        with pool:
            pending = set(futures)
            try:
                raise_held(interrupted)
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        done(futures[f], f.result())
            except BaseException:
                for f in pending:
                    f.cancel()
                stop_workers(pool)  # Ctrl-C: nothing new starts
                raise


@dataclass
class RayEngine:
    """The same tasks as Ray tasks (one CPU each): on a local Ray started here (``address``
    None; loopback only, no dashboard) or on an existing cluster (``address``), to which the
    code under check is shipped with the tasks (``runtime_env`` py_modules) and pinned by
    digest.  A Ray session that was already initialized is used as it is and left running."""

    recipe: BackendRecipe
    address: str | None = None
    workers: int = 0                 # CPUs of a local Ray started here (0: all available)
    name: str = "ray"

    def _start(self) -> bool:
        try:
            import ray
        except ImportError:
            raise InputError("--engine ray needs Ray: pip install 'canonmerge[ray]'") from None
        if ray.is_initialized():
            return False
        quiet = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        try:
            if self.address is None:
                # address "local": a new Ray for this run, never one found on the machine (through
                # RAY_ADDRESS or the last cluster started here), which ray.init() would join otherwise
                ray.init(address="local", num_cpus=self.workers or available_cores(),
                         _node_ip_address="127.0.0.1", **quiet)
            else:
                modules = [__import__(p) for p in self.recipe.packages]
                ray.init(address=self.address, runtime_env={"py_modules": modules}, **quiet)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            where = self.address or "a local Ray"
            raise InputError(f"--engine ray: cannot start or reach {where}: {exc}") from None
        return True

    def run(self, tasks: Sequence[Task], done: Done) -> None:
        import ray

        started_here = self._start()
        try:
            self.workers = self.workers or int(ray.cluster_resources().get("CPU", 1))
            remote = ray.remote(num_cpus=1, max_retries=0)(perform_remote)
            recipe = self.recipe.pinned()
            refs: dict[Any, Task] = {remote.remote(recipe, t): t for t in largest_first(tasks)}
            pending = list(refs)
            while pending:
                finished, pending = ray.wait(pending, num_returns=1)
                for ref in finished:
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.as_instanceof_cause()
                        raise (cause if isinstance(cause, InputError) else exc) from None
                    done(refs[ref], result)
        finally:
            if started_here:
                ray.shutdown()


def in_process(engine: str, workers: int) -> bool:
    """Whether these flags run every shard in this process."""
    return engine == "local" and (workers or available_cores()) == 1


def make_executor(engine: str, workers: int, backend: Backend | None, recipe: BackendRecipe | None,
                  ray_address: str | None = None) -> Executor:
    """The engine the flags name: ``local`` with one worker runs in this process; ``local`` with
    more is a process pool; ``ray`` runs Ray tasks."""
    if engine not in ENGINES:
        raise ArgumentError("engine", engine, f"must be one of {', '.join(ENGINES)}")
    integer("workers", workers, 0, 4096, " (0: one per available core)")
    if ray_address is not None and engine != "ray":
        raise ArgumentError("ray_address", ray_address, "needs engine ray")
    if in_process(engine, workers):
        if backend is None:
            if recipe is None:
                raise ValueError("an in-process run needs a backend or a recipe")
            backend = recipe.make()
        return InProcess(backend)
    if recipe is None:
        raise ValueError(f"the {engine} engine builds the backend in its workers: give a BackendRecipe")
    packages = tuple(dict.fromkeys((*CODE_PACKAGES, recipe.module.split(".")[0])))
    recipe = dataclasses.replace(recipe, packages=packages)
    if engine == "ray":
        return RayEngine(recipe, ray_address, workers)
    return ProcessPool(recipe, workers or available_cores())
