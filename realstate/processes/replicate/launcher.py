"""Distributed replay of C7 on real tensors: ``torch.distributed`` ranks that each receive the
same fragments in their own order (with re-deliveries and dropped-then-resent messages), merge,
render, and all-gather their render digests.  One digest across all ranks, or C7 fails.

The launcher gets the fragments (seeded tiny Qwen3 agents by default — real transformers caches
— or any replica store), writes them as fragment files, and starts ``ranks`` processes on
loopback (gloo on CPU; NCCL when the device is CUDA, one GPU per rank).  Ranks are forked from
a fork server that has imported torch and transformers once, so start-up is paid once, not per
rank.  What each rank does is in ``realstate.processes.replicate.rank``.  A rank that crashes or does
not finish in time makes the result unknown (exit 1), never a pass.  The C7 row also needs the
run's instruments to have seen (``agreement``): the canary round reported as a disagreement by
the same comparison of ranks, the faulty gathers built from the run's own data each rejected by
it (``faulty_gathers``), and the ranks' delivery orders distinct; a blind one fails the row, naming
itself."""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realstate.processes import properties as P
from realstate.processes.replicate.agreement import compare_ranks, distinct_orders
from realstate.processes.replicate.faulty_gathers import gather_controls
from spec import ArgumentError, InputError, Outcome, PartReport, Progress, Table, no_progress
from spec.arguments import integer, number, seed
from spec.interrupts import deferred_interrupts, raise_held, start_forkserver_without_interrupts

PART = "realstate"
# latent steps of the seeded agents: 26 agents of at most 81 prompt tokens and this many steps
# fit the 8192 positions of the smallest geometry
MAX_LATENT_STEPS = 200


@dataclass(frozen=True)
class ReplicateSettings:
    ranks: int = 4
    backend: str = "auto"  # gloo | nccl | auto (nccl on cuda, gloo on cpu)
    device: str = "cpu"
    store: str | None = None  # fragments from this store instead of seeded agents
    geometry: str = "qwen3-tiny"
    agents: int = 4
    latent_steps: int = 1
    seed: int = 0
    redeliveries: int = 2
    drops: int = 1
    plant: str | None = None  # a planted-bug engine of realstate.evidence.planted (a demonstration)
    timeout_s: float = 300.0

    def validate(self) -> None:
        """Every field in range (``spec.ArgumentError`` naming the field), before any rank starts."""
        integer("ranks", self.ranks, 1, 64)
        if self.backend not in ("auto", "gloo", "nccl"):
            raise ArgumentError("backend", self.backend, "must be auto, gloo or nccl")
        if self.device not in ("cpu", "cuda"):
            raise ArgumentError("device", self.device, "must be cpu or cuda")
        if self.backend == "nccl" and self.device != "cuda":
            raise ArgumentError("backend", self.backend, "needs device cuda")
        integer("agents", self.agents, 1, 26)
        integer("latent_steps", self.latent_steps, 0, MAX_LATENT_STEPS)
        seed("seed", self.seed)
        integer("redeliveries", self.redeliveries, 0, 100)
        integer("drops", self.drops, 0, 100)
        number("timeout_s", self.timeout_s, 1.0, 3600.0)
        if self.plant is not None:
            from realstate.evidence.planted import MUTANTS

            if self.plant not in MUTANTS:
                raise ArgumentError("plant", self.plant, f"is not one of {', '.join(MUTANTS)}")

    def resolved_backend(self) -> str:
        return self.backend if self.backend != "auto" else ("nccl" if self.device == "cuda" else "gloo")


def _fragments(settings: ReplicateSettings, progress: Progress) -> tuple[list[Any], str]:
    """The fragments to replicate, and where they came from (for the report)."""
    if settings.store is not None:
        from realstate.exchange.stores import open_store

        fragments = list(open_store(settings.store).fragments())
        if not fragments:
            raise InputError(f"{settings.store}: the store is empty; nothing to replicate")
        return fragments, f"store {settings.store}"
    from realstate.models.agents import run_agents
    from realstate.models.seeded import load_seeded

    progress("replicate: agents", 0, settings.agents)
    lm = load_seeded(settings.geometry, "bfloat16", "cpu", settings.seed)
    runs = run_agents(lm, settings.agents, settings.latent_steps, seed=settings.seed)
    return [run.fragment for run in runs], f"{settings.agents} agents on {lm.source_detail} (SEEDED weights)"


def _devices(settings: ReplicateSettings) -> list[str]:
    if settings.device == "cpu":
        return ["cpu"] * settings.ranks
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        raise InputError("--device cuda: no CUDA device is visible")
    if settings.resolved_backend() == "nccl" and settings.ranks > count:
        raise InputError(f"NCCL needs one GPU per rank: {settings.ranks} ranks, {count} GPU(s) visible")
    return [f"cuda:{r % count}" for r in range(settings.ranks)]


def run_replicate(settings: ReplicateSettings, progress: Progress = no_progress) -> PartReport:
    settings.validate()
    started = time.perf_counter()
    from realstate.exchange.fragment_file import save_fragment
    from realstate.kernel.render import canonical_render
    from realstate.processes.replicate.rank import RankJob, run_rank
    from realstate.processes.soak.endpoint import free_port

    fragments, source = _fragments(settings, progress)
    devices = _devices(settings)
    launcher_digest = canonical_render(fragments).digest()  # one process, the canonical engine
    workdir = Path(tempfile.mkdtemp(prefix="canonmerge-replicate-"))
    try:
        files = []
        for i, fragment in enumerate(fragments):
            files.append(str(workdir / f"fragment-{i}.cmfrag"))
            save_fragment(fragment, files[-1])
        init = f"tcp://127.0.0.1:{free_port()}"
        jobs = [RankJob(r, settings.ranks, settings.resolved_backend(), devices[r], init, tuple(files),
                        settings.seed, settings.redeliveries, settings.drops, settings.plant,
                        str(workdir / f"rank-{r}.json"), settings.timeout_s) for r in range(settings.ranks)]
        progress("replicate: ranks", 0, settings.ranks)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["realstate.processes.replicate.rank"])
        start_forkserver_without_interrupts()  # ranks ignore Ctrl-C: this process handles it
        processes = [context.Process(target=run_rank, args=(job,), daemon=True) for job in jobs]
        with deferred_interrupts() as interrupted:  # a start cut short would leave a half-started rank
            for process in processes:
                process.start()
        raise_held(interrupted)
        deadline = time.monotonic() + settings.timeout_s
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        problems = []
        for job, process in zip(jobs, processes):
            if process.is_alive():
                process.kill()
                process.join()
                problems.append(f"rank {job.rank} did not finish in {settings.timeout_s:g} s")
            elif process.exitcode != 0:
                problems.append(f"rank {job.rank} exited with code {process.exitcode}")
        results = [_read_result(job) for job in jobs]
        for job, result in zip(jobs, results):
            if result is not None and "error" in result:  # the rank's own one-line account
                problems.append(f"rank {job.rank}: {result['error']}")
        results = [r if r is None or "error" not in r else None for r in results]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _report(settings, source, len(fragments), launcher_digest, results, problems,
                   time.perf_counter() - started)


def _read_result(job: Any) -> dict[str, Any] | None:
    import json

    try:
        return json.loads(Path(job.result_file).read_text())
    except (OSError, ValueError):
        return None


def _report(settings: ReplicateSettings, source: str, count: int, launcher_digest: str,
            results: list[dict[str, Any] | None], problems: list[str], seconds: float) -> PartReport:
    backend = settings.resolved_backend()
    table = Table(f"replicate: {settings.ranks} ranks ({backend}), {count} fragments from {source}",
                  ["rank", "device", "deliveries", "re-deliveries", "dropped+resent", "arrival order",
                   "set digest", "render digest"])
    for r in results:
        if r is not None:
            table.rows.append([str(r["rank"]), r["device"], str(r["deliveries"]), str(r["redeliveries"]),
                               str(r["drops"]), " ".join(map(str, r["arrivals"][:16])), r["set_digest"][:16],
                               r["digest"][:16]])
    data: dict[str, Any] = {"settings": vars(settings), "backend": backend, "source": source, "fragments": count,
                            "launcher_digest": launcher_digest, "ranks": results, "problems": problems}
    notes = [f"planted bug {settings.plant!r} (a demonstration): the ranks should disagree"] if settings.plant else []
    if problems or any(r is None for r in results):
        result = P.REPLICATE.result(Outcome.UNKNOWN, "; ".join(problems) or "a rank wrote no result", seconds,
                                    problems=problems, ranks=settings.ranks, backend=backend)
        return PartReport(PART, [result], [table], data, notes)
    real = compare_ranks(results, launcher_digest)
    figure = (f"{len(real.digests)} render digest(s), {len(real.sets)} set(s) across {settings.ranks} {backend} "
              f"ranks / {sum(r['deliveries'] for r in results)} deliveries"
              + ("" if real.matches_launcher else f"; launcher's own render {launcher_digest[:16]} differs"))
    canary = compare_ranks([r["canary"] for r in results], launcher_digest)
    orders, needed = distinct_orders(results, count)
    seen = {
        "canary": {"ok": not canary.holds, "rank": settings.ranks - 1, "base": 1, "digests": sorted(canary.digests),
                   "round_seconds": max(r["canary"]["seconds"] for r in results),
                   "figure": f"canary: rank {settings.ranks - 1} rendered at base 1, reported as "
                             f"{len(canary.digests)} render digest(s)" if not canary.holds else
                             "blind instrument: the comparison of ranks (a rank that rendered differently "
                             "was not reported)"},
        "faulty gathers": gather_controls(results, launcher_digest),
        "delivery orders": {"ok": orders == needed, "distinct": orders, "needed": needed,
                            "figure": f"{orders} distinct delivery order(s) (needed {needed})"
                                      + ("" if orders == needed else "; blind instrument: the delivery schedule "
                                         "(the ranks do not deliver in different orders)")}}
    data["instruments"] = seen
    blind = [c["figure"] for c in seen.values() if not c["ok"]]
    result = P.REPLICATE.holds_if(real.holds and not blind, "; ".join([figure, *blind]), seconds,
                                  digests=sorted(real.digests), sets=sorted(real.sets), launcher_digest=launcher_digest,
                                  ranks=settings.ranks, backend=backend, agree=real.holds, instruments=seen)
    return PartReport(PART, [result], [table], data, notes)
