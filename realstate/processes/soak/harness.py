"""The soak run: start the processes, drive them through the fault phase, heal, judge.

1. Set-up: replica stores (directories under a work directory; S3 prefixes in a bucket on a
   loopback moto server behind a restartable gateway), a pool of worker processes.
2. Fault phase: one driver thread per agent publishes that agent's fragments into its replica,
   retrying until acknowledged; anti-entropy drivers work through the merge schedule (random
   pairs, with duplicates and reordered windows planted); the nemesis kills workers mid-command,
   restarts the gateway and tears uploads, at operations drawn from the seed.
3. Heal: no more faults; ring merges (each replica into the next, around twice) through the
   same worker code until a full pass adds nothing.
4. Verdict, computed here from the stores themselves: leftovers of killed writers cleaned (and
   counted); every replica fully validated; the same set everywhere; the same render digest
   everywhere; every acknowledged put present everywhere; nothing that no agent published.

C7 holds when the sets and digests agree; C2 (nothing lost: a merge only adds) when every
acknowledged put is present on every replica.  Anything that prevents the verdict (the time
budget, a worker that cannot start) is reported as unknown, never as a pass."""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from realstate.exchange.stores import open_store
from realstate.processes import properties as P
from realstate.processes.soak.endpoint import MotoEndpoint, client_environment, free_port
from realstate.processes.soak.gateway import Gateway
from realstate.processes.soak.nemesis import FaultPlan, plan_faults, restart_gateway, torn_upload
from realstate.processes.soak.processes import Worker, WorkerDied, WorkerPool
from realstate.processes.soak.settings import FAULT_KINDS, SoakSettings
from realstate.processes.soak.synthetic import soak_fragment
from spec import InputError, Outcome, PartReport, Progress, Table, content_id_hex, no_progress

PART = "realstate"
BUCKET = "canonmerge-soak"
HEAL_PASSES = 4
MEASURED_MID = ("kill-put", "kill-merge", "restart-endpoint", "torn-upload")


@dataclass
class Tally:
    """Counts shared by the drivers (under one lock)."""

    ops: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    mid_operation: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    acknowledged: dict[str, set[str]] = field(default_factory=dict)  # replica -> ids acknowledged there
    events: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.ops[name] += n

    def error(self, text: str) -> None:
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(text[:300])


class Soak:
    def __init__(self, settings: SoakSettings, workdir: Path, progress: Progress) -> None:
        self.settings, self.workdir, self.progress = settings, workdir, progress
        self.rng = random.Random(settings.seed ^ 0x5EED)
        self.plan: FaultPlan = plan_faults(settings)
        self.tally = Tally()
        self.endpoint: MotoEndpoint | None = None
        self.gateway: Gateway | None = None
        self.pool: WorkerPool | None = None
        self.replicas: list[str] = []
        self.deadline = time.monotonic() + settings.max_seconds
        self.out_of_time = False
        self._op_number = 0
        self._op_lock = threading.Lock()
        self._nemesis_threads: list[threading.Thread] = []
        self.heal_slot: list[Worker] | None = None
        self.s3_in_flight = 0  # S3 operations sent and not yet answered (under tally.lock)

    # -- set-up and tear-down -------------------------------------------------------------------

    def set_up(self) -> None:
        s = self.settings
        env: dict[str, str] = {}
        self.s3_client: Any = None
        if s.s3_replicas:
            import boto3

            self.endpoint = MotoEndpoint().start()
            self.gateway = Gateway(free_port(), self.endpoint.port)
            self.gateway.start()
            env = client_environment(self.gateway.url)
            self.s3_client = boto3.session.Session().client("s3", endpoint_url=self.gateway.url, **_credentials(env))
            self.s3_client.create_bucket(Bucket=BUCKET)
        for i in range(s.replicas):
            on_s3 = i >= s.replicas - s.s3_replicas
            self.replicas.append(f"s3://{BUCKET}/replica-{i}/" if on_s3 else str(self.workdir / f"replica-{i}"))
        for location in self.replicas:
            open_store(location, create=True, s3_client=self.s3_client)
        self.pool = WorkerPool(s.seed, s.shape, env, start_timeout_s=max(60.0, s.op_timeout_s))
        self.pool.fill()

    def tear_down(self) -> None:
        for thread in self._nemesis_threads:
            thread.join(timeout=30)
        if self.pool is not None:
            self.pool.stop_all()
        if self.gateway is not None:
            self.gateway.kill()
        if self.endpoint is not None:
            self.endpoint.stop()

    # -- the fault phase ----------------------------------------------------------------------

    def _next_op(self) -> None:
        """Number the operation; fire the nemesis's own faults planned for this number (in their
        own threads, so they overlap the operation being sent)."""
        with self._op_lock:
            k = self._op_number
            self._op_number += 1
        if k in self.plan.restarts_at and self.gateway is not None:
            self._nemesis(self._restart)
        if k in self.plan.torn_at:
            self._nemesis(self._tear)

    def _nemesis(self, fault: Callable[[], None]) -> None:
        thread = threading.Thread(target=fault, daemon=True)
        self._nemesis_threads.append(thread)
        thread.start()

    def _restart(self) -> None:
        assert self.gateway is not None
        try:
            mid_transfer = restart_gateway(self.gateway, self.rng, lambda: self.s3_in_flight > 0)
        except InputError as exc:  # the gateway did not come back: heal() starts it again
            self.tally.error(f"endpoint restart: {exc}")
            return
        with self.tally.lock:
            self.tally.faults["restart-endpoint"] += 1
            self.tally.mid_operation["restart-endpoint"] += mid_transfer

    def _tear(self) -> None:
        s = self.settings
        with self.tally.lock:
            agent, index = self.rng.randrange(s.agents), self.rng.randrange(s.fragments)
            replica = self.replicas[self.rng.randrange(len(self.replicas))]
        what = torn_upload(replica, self.gateway, s, agent, index)
        with self.tally.lock:
            self.tally.faults["torn-upload"] += 1
            self.tally.mid_operation["torn-upload"] += 1
            self.tally.events.append(f"torn upload into {replica}: {what}")

    def _command(self, worker: Worker, command: dict[str, Any], kill: bool, kind: str) -> dict[str, Any] | None:
        """Send ``command``; with ``kill``, SIGKILL the worker a moment after it starts (the reply
        is then lost).  ``None`` when the worker died or timed out (it is replaced)."""
        worker.send(command)
        budget = max(1.0, min(self.settings.op_timeout_s, self.deadline - time.monotonic() + 30.0))
        if worker.next_message(budget) != {"started": True}:
            raise InputError(f"worker {worker.pid}: protocol error")
        if kill:
            time.sleep(self.rng.uniform(0.0, 0.004))
            landed = not worker.has_message()  # the reply had not come yet: killed mid-operation
            worker.kill()
            with self.tally.lock:
                self.tally.faults[kind] += 1
                self.tally.mid_operation[kind] += landed
            return None
        return worker.next_message(budget)

    def _run_op(self, slot: list[Worker], command: dict[str, Any], kill: bool, kind: str) -> dict[str, Any] | None:
        assert self.pool is not None
        s3 = any(str(command.get(k, "")).startswith("s3://") for k in ("store", "dst", "src"))
        with self.tally.lock:
            self.s3_in_flight += s3
        try:
            reply = self._command(slot[0], command, kill, kind)
        except (WorkerDied, TimeoutError) as exc:
            self.tally.error(f"{command['op']}: {exc}")
            slot[0].kill()
            reply = None
        finally:
            with self.tally.lock:
                self.s3_in_flight -= s3
        if reply is None:
            slot[0] = self.pool.take()
        return reply

    def _agent(self, agent: int) -> None:
        assert self.pool is not None
        s = self.settings
        replica = self.replicas[agent % len(self.replicas)]
        slot = [self.pool.take()]
        for index in range(s.fragments):
            put_number = agent * s.fragments + index
            kill = put_number in self.plan.kill_puts
            for attempt in range(50):
                if time.monotonic() > self.deadline:
                    self.out_of_time = True
                    return
                self._next_op()
                self.tally.count("put sent")
                reply = self._run_op(slot, {"op": "put", "store": replica, "agent": agent, "index": index},
                                     kill and attempt == 0, "kill-put")
                if reply is not None and reply.get("ok"):
                    self.tally.count("put acknowledged")
                    self.progress("soak: puts acknowledged", self.tally.ops["put acknowledged"],
                                  s.agents * s.fragments)
                    with self.tally.lock:
                        self.tally.acknowledged.setdefault(replica, set()).add(reply["id"])
                    break
                if reply is not None:
                    self.tally.count("put failed (retried)")
                    self.tally.error(f"put {agent}/{index} into {replica}: {reply.get('error')}")
                    time.sleep(0.1)
                else:
                    self.tally.count("put killed or lost (retried)")

    def _gossiper(self, work: list[tuple[int, tuple[int, int]]]) -> None:
        assert self.pool is not None
        slot = [self.pool.take()]
        self.heal_slot = self.heal_slot or slot
        for number, (dst, src) in work:
            if time.monotonic() > self.deadline:
                self.out_of_time = True
                return
            self._next_op()
            self.tally.count("merge sent")
            reply = self._run_op(slot, {"op": "merge", "dst": self.replicas[dst], "src": self.replicas[src]},
                                 number in self.plan.kill_merges, "kill-merge")
            if reply is None:
                self.tally.count("merge killed or lost")
            elif reply.get("ok"):
                self.tally.count("merge completed")
                self.tally.count("fragments copied by merges", reply["added"])
            else:
                self.tally.count("merge failed")
                self.tally.error(f"merge {dst} <- {src}: {reply.get('error')}")

    def fault_phase(self) -> None:
        s = self.settings
        numbered = list(enumerate(self.plan.schedule))
        shares = [numbered[g::s.gossipers] for g in range(s.gossipers)]
        threads = [threading.Thread(target=self._agent, args=(a,), daemon=True) for a in range(s.agents)]
        threads += [threading.Thread(target=self._gossiper, args=(share,), daemon=True) for share in shares]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=max(0.0, self.deadline - time.monotonic()) + s.op_timeout_s + 30)
        for thread in self._nemesis_threads:
            thread.join(timeout=30)
        with self.tally.lock:
            self.tally.faults["duplicate-merge"] = self.plan.counts.get("duplicate-merge", 0)
            self.tally.faults["reorder-merges"] = self.plan.counts.get("reorder-merges", 0)

    # -- heal -----------------------------------------------------------------------------------

    def heal(self) -> int:
        """Ring merges without faults until a full pass adds nothing; returns the passes run."""
        assert self.pool is not None
        if self.gateway is not None and not self.gateway.is_up():
            self.gateway.start()
        slot = self.heal_slot or [self.pool.take()]
        n = len(self.replicas)
        for passes in range(1, HEAL_PASSES + 1):
            added = 0
            for i in range(n):
                for _ in range(5):  # a merge that errors (it should not, now) is retried
                    reply = self._run_op(slot, {"op": "merge", "dst": self.replicas[(i + 1) % n],
                                                "src": self.replicas[i]}, False, "")
                    self.tally.count("heal merges")
                    if reply is not None and reply.get("ok"):
                        added += reply["added"]
                        break
                    self.tally.error(f"heal merge {i}: {reply}")
            if added == 0 and passes > 1:
                return passes
        return HEAL_PASSES

    # -- verdict --------------------------------------------------------------------------------

    def judge(self) -> dict[str, Any]:
        """Read every replica through the product's store code and compare (module doc)."""
        from realstate.kernel.render import canonical_render

        s = self.settings
        generated = {content_id_hex(soak_fragment(s.seed, a, j, s.shape).content_id)
                     for a in range(s.agents) for j in range(s.fragments)}

        def read_all() -> list[dict[str, Any]]:
            rows = []
            for location in self.replicas:
                store = open_store(location, s3_client=self.s3_client)
                cleaned = store.clean_temporaries(older_than_s=0)
                fragments = store.fragments()
                rows.append({"replica": location, "kind": store.kind, "temporaries_cleaned": len(cleaned),
                             "ids": sorted(content_id_hex(f.content_id) for f in fragments),
                             "digest": canonical_render(fragments).digest() if len(fragments) else None,
                             "verify_ok": store.verify().ok})
            return rows

        rows = read_all()
        sets = {tuple(r["ids"]) for r in rows}
        digests = {r["digest"] for r in rows}
        union = set().union(*(set(r["ids"]) for r in rows))
        everywhere = set.intersection(*(set(r["ids"]) for r in rows))
        acknowledged = set().union(*self.tally.acknowledged.values()) if self.tally.acknowledged else set()
        return {"replicas": rows, "sets": len(sets), "digests": len(digests), "union": len(union),
                "generated": len(generated), "acknowledged": len(acknowledged),
                "lost": sorted(acknowledged - everywhere), "invented": sorted(union - generated)}


def _credentials(env: dict[str, str]) -> dict[str, str]:
    return {"aws_access_key_id": env["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            "region_name": env["AWS_DEFAULT_REGION"]}


def run_soak(settings: SoakSettings, progress: Progress = no_progress, workdir: str | None = None,
             keep: bool = False) -> PartReport:
    settings.validate()
    started = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix="canonmerge-soak-", dir=workdir))
    soak = Soak(settings, base, progress)
    notes: list[str] = []
    verdict: dict[str, Any] | None = None
    heal_passes = 0
    phases: dict[str, float] = {}

    def phase(name: str, work: Any) -> Any:
        progress(f"soak: {name}", 0, 0)
        t = time.perf_counter()
        try:
            return work()
        finally:
            phases[name] = round(time.perf_counter() - t, 2)

    try:
        phase("set-up", soak.set_up)
        phase("fault phase", soak.fault_phase)
        heal_passes = phase("heal", soak.heal)
        verdict = phase("verdict", soak.judge)
    finally:
        soak.tear_down()
        if keep:
            notes.append(f"replica directories kept under {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    report = _report(settings, soak, verdict, heal_passes, time.perf_counter() - started, notes)
    report.data["phase_seconds"] = phases
    return report


def _report(settings: SoakSettings, soak: Soak, verdict: dict[str, Any] | None, heal_passes: int,
            seconds: float, notes: list[str]) -> PartReport:
    tally = soak.tally
    ops_table = Table("soak: operations", ["operation", "count"], [[k, str(v)] for k, v in sorted(tally.ops.items())])
    ops_table.rows.append(["worker processes started", str(soak.pool.started if soak.pool else 0)])
    ops_table.rows.append(["heal passes", str(heal_passes)])
    faults_table = Table("soak: faults injected", ["fault", "planned", "injected", "mid-operation"],
                         [[k, str(soak.plan.counts.get(k, 0)), str(tally.faults.get(k, 0)),
                           str(tally.mid_operation.get(k, 0)) if k in MEASURED_MID else "-"] for k in FAULT_KINDS])
    tables = [ops_table, faults_table]
    data: dict[str, Any] = {"settings": {k: v for k, v in vars(settings).items() if k != "shape"},
                            "shape": vars(settings.shape), "operations": dict(tally.ops),
                            "faults": dict(tally.faults), "faults_mid_operation": dict(tally.mid_operation),
                            "planned_faults": soak.plan.counts, "errors": tally.errors, "events": tally.events[:50],
                            "seconds": round(seconds, 2), "out_of_time": soak.out_of_time}
    if soak.out_of_time:
        notes.append(f"the time budget (--max-seconds {settings.max_seconds:g}) ran out during the fault phase; "
                     f"the remaining operations were not run")
    if verdict is None:
        results = [P.SOAK_CONVERGE.result(Outcome.UNKNOWN, "no verdict", seconds)]
        return PartReport(PART, results, tables, data, notes)
    data["verdict"] = {k: v for k, v in verdict.items() if k != "replicas"}
    data["replicas"] = [{k: v for k, v in r.items() if k != "ids"} | {"fragments": len(r["ids"])}
                        for r in verdict["replicas"]]
    tables.append(Table("soak: replicas at quiescence", ["replica", "kind", "fragments", "render digest",
                                                         "temporaries cleaned", "verify"],
                        [[r["replica"], r["kind"], str(len(r["ids"])), (r["digest"] or "-")[:16],
                          str(r["temporaries_cleaned"]), "ok" if r["verify_ok"] else "CORRUPT"]
                         for r in verdict["replicas"]]))
    converged = (verdict["sets"] == 1 and verdict["digests"] == 1 and verdict["union"] > 0
                 and all(r["verify_ok"] for r in verdict["replicas"]))
    faults = sum(tally.faults.values())
    figure = (f"{len(soak.replicas)} replicas: {verdict['sets']} set(s), {verdict['digests']} render digest(s) "
              f"/ {sum(v for k, v in tally.ops.items() if k.endswith('sent'))} ops, {faults} faults")
    safe = not verdict["lost"] and not verdict["invented"]
    results = [
        P.SOAK_CONVERGE.holds_if(converged, figure, seconds, sets=verdict["sets"], digests=verdict["digests"]),
        P.SOAK_DURABLE.holds_if(safe, f"{verdict['acknowledged']} acknowledged, {len(verdict['lost'])} lost, "
                                f"{len(verdict['invented'])} never published", 0.0,
                                lost=verdict["lost"][:10], invented=verdict["invented"][:10]),
    ]
    return PartReport(PART, results, tables, data, notes)
