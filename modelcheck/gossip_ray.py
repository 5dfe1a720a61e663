"""The sharded gossip search on Ray (``check --engine ray --gossip-workers W``): each hash
partition's owner (``gossip_sharded.ShardWorker``) is a Ray actor instead of a forkserver process,
and the coordinator's rounds are the same calls, so the counts are the same.

On a local Ray started here (loopback only, no dashboard) or an existing cluster (``address``),
to which the code under check is shipped (``runtime_env`` py_modules), as the Ray engine of
``check``'s shards does.  A Ray session already initialized is used as it is and left running.
An actor that dies (its node lost, the OOM killer) is one line naming it; on an error or Ctrl-C
every actor is killed at once."""

from __future__ import annotations

import gc
import logging
from typing import Any

from modelcheck.gossip_sharded import ShardWorker, WorkerSpec
from modelcheck.gossip_workers import ShardError
from spec import InputError


class _Owner:
    """One actor: a ``ShardWorker`` answering the coordinator's calls."""

    def __init__(self, spec: WorkerSpec) -> None:
        gc.disable()  # as in gossip_search: the visited set only grows
        self.worker = ShardWorker(spec)

    def ready(self) -> bool:
        return True

    def run(self, method: str, args: tuple) -> Any:
        return getattr(self.worker, method)(*args)


class RayWorkers:
    """The owners of one sharded search as Ray actors (the interface of ``gossip_sharded.Workers``)."""

    def __init__(self, specs: list[WorkerSpec], address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("--engine ray needs Ray: pip install 'canonmerge[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            quiet = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            try:
                if address is None:
                    ray.init(address="local", num_cpus=len(specs), _node_ip_address="127.0.0.1", **quiet)
                else:
                    modules = [__import__(p) for p in specs[0].recipe.packages]  # type: ignore[attr-defined]
                    ray.init(address=address, runtime_env={"py_modules": modules}, **quiet)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise InputError(f"--engine ray: cannot start or reach {address or 'a local Ray'}: {exc}") from None
        owner = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Owner)
        self.actors = [owner.remote(spec) for spec in specs]
        self.connections = self.actors  # what the coordinator counts its workers by
        try:
            self._answers([a.ready.remote() for a in self.actors])
        except BaseException:
            self.stop(at_once=True)
            raise

    def _answers(self, refs: list[Any]) -> list[Any]:
        out = []
        for i, ref in enumerate(refs):
            try:
                out.append(self.ray.get(ref))
            except self.ray.exceptions.RayActorError:
                raise ChildProcessError(f"gossip shard actor {i} died before it answered (its node lost, killed, "
                                        "or out of memory?)") from None
            except self.ray.exceptions.RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                raise ShardError(f"gossip shard actor {i}: {type(cause).__name__}: {cause}") from None
        return out

    def call(self, i: int, method: str, *args: Any) -> Any:
        return self._answers([self.actors[i].run.remote(method, args)])[0]

    def all(self, method: str, per_worker: list[tuple[Any, ...]] | None = None) -> list[Any]:
        """``method`` on every actor at once, the answers read in order."""
        return self._answers([a.run.remote(method, per_worker[i] if per_worker is not None else ())
                              for i, a in enumerate(self.actors)])

    def stop(self, at_once: bool = False) -> None:
        """Kill every actor (their state is the search's, nothing to flush), and the Ray started here."""
        for actor in self.actors if hasattr(self, "actors") else []:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - an actor already gone
                pass
        if self.started:
            self.ray.shutdown()
