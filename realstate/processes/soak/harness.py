"""The soak run: start the processes, drive them through the fault phase, heal, judge.

1. Set-up: replica stores (directories under a work directory; S3 prefixes in a bucket on a
   loopback moto server behind a restartable gateway), a pool of worker processes.
2. Fault phase: one driver thread per agent publishes that agent's fragments into its replica,
   retrying until acknowledged; anti-entropy drivers work through the merge schedule (random
   pairs, with duplicates and reordered windows planted); the nemesis kills workers mid-command,
   restarts the gateway, tears uploads and plants a neighbour's entries into a directory replica
   (``neighbour``), at operations drawn from the seed.
3. Heal: no more faults; ring merges (each replica into the next, around twice) through the
   same worker code until a full pass adds nothing.
4. Verdict (``judge``), from the stores themselves and the client's books: leftovers of killed
   writers cleaned (and counted); every replica fully validated; the same set everywhere; the
   same render digest everywhere; every put in the ledger (``ledger``: written by the driver at
   acknowledgment time, outside the stores) present everywhere; nothing no agent published;
   the neighbour's entries neither read nor touched, and ``clean --foreign`` removing exactly
   what it may.
5. Instruments that prove they could see: the canary (an acknowledged write deleted from a
   replica of its own must be reported lost by the same judge), the crash table (``crashes``:
   a directory put and clean SIGKILLed at each step) and the power-loss model (``power``: a
   directory put's crash states after a power failure), each with its negative controls.

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

from realstate.exchange.stores import is_s3_url, open_store
from realstate.processes.soak.crashes import PUT_STEPS, CrashTable, crash_table
from realstate.processes.soak.endpoint import MotoEndpoint, client_environment, free_port
from realstate.processes.soak.gateway import Gateway
from realstate.processes.soak.judge import canary_verdict, judge, lose
from realstate.processes.soak.ledger import Ledger
from realstate.processes.soak.neighbour import Planted, neighbour_controls, neighbour_verdict, plant, with_controls
from realstate.processes.soak.nemesis import FaultPlan, plan_faults, restart_gateway, torn_upload, wait_busy
from realstate.processes.soak.outcome import soak_report
from realstate.processes.soak.power import PowerTable, power_table
from realstate.processes.soak.processes import Worker, WorkerDied, WorkerPool
from realstate.processes.soak.settings import SoakSettings
from realstate.processes.soak.synthetic import soak_fragment
from spec import InputError, PartReport, Progress, content_id_hex, no_progress

BUCKET = "canonmerge-soak"
HEAL_PASSES = 4
S3_PUT_STEPS = 2  # an S3 put reports "upload sent" and "uploaded"


@dataclass
class Tally:
    """Counts shared by the drivers (under one lock)."""

    ops: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    mid_operation: Counter[str] = field(default_factory=Counter)
    kill_steps: Counter[str] = field(default_factory=Counter)  # "kind: step" -> kills that landed there
    owed: Counter[str] = field(default_factory=Counter)  # kills that found their operation over: next one
    errors: list[str] = field(default_factory=list)
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
        self.busy: Counter[str] = Counter()  # operations in flight per replica location (under tally.lock)
        self.planted: list[tuple[Planted, dict[str, str]]] = []
        self.neighbours: dict[str, Any] | None = None
        self.power: PowerTable | None = None
        self.ledger: Ledger | None = None
        self.crashes: CrashTable | None = None
        self.canary: dict[str, Any] | None = None

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
        self.ledger = Ledger(self.workdir / "acknowledged.jsonl", self.replicas)
        self.pool = WorkerPool(s.seed, s.shape, env, start_timeout_s=max(60.0, s.op_timeout_s))
        self.pool.fill()

    def tear_down(self) -> None:
        if self.ledger is not None:
            self.ledger.close()
        for thread in self._nemesis_threads:
            thread.join(timeout=30)
        if self.pool is not None:
            self.pool.stop_all()
        if self.gateway is not None:
            self.gateway.kill()
        if self.endpoint is not None:
            self.endpoint.stop()

    # -- the fault phase ----------------------------------------------------------------------

    def _next_op(self, locations: tuple[str, ...]) -> None:
        """Number the operation (on the replicas at ``locations``); fire the nemesis's own faults
        planned for this number (in their own threads, so they overlap the operation being sent)."""
        with self._op_lock:
            k = self._op_number
            self._op_number += 1
        if k in self.plan.restarts_at and self.gateway is not None:
            self._nemesis(self._restart)
        if k in self.plan.torn_at:
            self._nemesis(self._tear)
        if k in self.plan.planted_at:
            self._nemesis(lambda: self._plant(locations, k))

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

    def _plant(self, locations: tuple[str, ...], number: int) -> None:
        """A neighbour's entries into a directory replica of this operation (any directory
        replica when it has none), once an operation on that replica is in flight."""
        s = self.settings
        with self.tally.lock:
            directories = [r for r in locations if not is_s3_url(r)] or [r for r in self.replicas if not is_s3_url(r)]
            replica = directories[self.rng.randrange(len(directories))]
        outsider = soak_fragment(s.seed, s.agents + 2 + number, 0, s.shape)  # no agent publishes it
        busy = wait_busy(lambda: self.busy[replica] > 0)
        try:
            planted = plant(Path(replica), self.workdir / f"neighbour-{number}", outsider, str(number))
        except OSError as exc:
            self.tally.error(f"hostile neighbour: {exc}")
            return
        with self.tally.lock:
            self.planted.append(planted)
            self.tally.faults["hostile-neighbour"] += 1
            self.tally.mid_operation["hostile-neighbour"] += busy
            self.tally.events.append(f"hostile neighbour into {replica}: a link, a file, a directory, a nested store"
                                     + ("" if busy else " (no operation on it in flight)"))

    def _kill_step(self, kind: str, planned: int | None, location: str) -> int | None:
        """The step a kill of this operation lands at: the plan's (folded onto the steps the store
        reports), else the first step when a kill is owed, else none."""
        if planned is not None:
            per_put = S3_PUT_STEPS if is_s3_url(location) else len(PUT_STEPS)
            steps = per_put if kind == "kill-put" else 1 + per_put  # a merge lists first
            return 1 + (planned - 1) % steps
        with self.tally.lock:
            if self.tally.owed[kind]:
                self.tally.owed[kind] -= 1
                return 1
        return None

    def _command(self, worker: Worker, command: dict[str, Any], kind: str) -> dict[str, Any] | None:
        """Send ``command``; ``None`` when the worker killed itself at the command's ``crash_at``
        step (the reply is then lost; the kill is counted as landed mid-operation)."""
        worker.send(command)
        budget = max(1.0, min(self.settings.op_timeout_s, self.deadline - time.monotonic() + 30.0))
        if worker.next_message(budget) != {"started": True}:
            raise InputError(f"worker {worker.pid}: protocol error")
        reply = worker.next_message(budget)
        if "crashed_at" in reply:
            worker.kill()
            with self.tally.lock:
                self.tally.faults[kind] += 1
                self.tally.mid_operation[kind] += 1
                self.tally.kill_steps[f"{kind}: {reply['crashed_at']}"] += 1
            return None
        if command.get("crash_at"):
            with self.tally.lock:
                self.tally.owed[kind] += 1  # the operation ended before that step: the next one is killed
        return reply

    def _run_op(self, slot: list[Worker], command: dict[str, Any], kind: str) -> dict[str, Any] | None:
        assert self.pool is not None
        s3 = any(str(command.get(k, "")).startswith("s3://") for k in ("store", "dst", "src"))
        locations = [str(command[k]) for k in ("store", "dst", "src") if k in command]
        with self.tally.lock:
            self.s3_in_flight += s3
            self.busy.update(locations)
        try:
            reply = self._command(slot[0], command, kind)
        except (WorkerDied, TimeoutError) as exc:
            self.tally.error(f"{command['op']}: {exc}")
            slot[0].kill()
            reply = None
        finally:
            with self.tally.lock:
                self.s3_in_flight -= s3
                self.busy.subtract(locations)
        if reply is None:
            slot[0] = self.pool.take()
        return reply

    def publish(self, slot: list[Worker], replica: str, agent: int, index: int, ledger: Ledger,
                planned_kill: int | None = None, label: str = "put") -> str | None:
        """Put agent ``agent``'s ``index``-th fragment into ``replica`` until acknowledged; the
        acknowledgment goes into ``ledger`` before it counts.  Returns the id, ``None`` when out
        of time or attempts.  Only the fault phase's puts (``label`` "put") meet the nemesis."""
        s = self.settings
        faults = label == "put"
        for attempt in range(50):
            if faults and time.monotonic() > self.deadline:
                self.out_of_time = True
                return None
            if faults:
                self._next_op((replica,))
            self.tally.count(f"{label} sent")
            step = self._kill_step("kill-put", planned_kill if attempt == 0 else None, replica) if faults else None
            reply = self._run_op(slot, {"op": "put", "store": replica, "agent": agent, "index": index,
                                        "crash_at": step}, "kill-put")
            if reply is not None and reply.get("ok"):
                ledger.acknowledge(replica, reply["id"])  # the books first: then it is acknowledged
                self.tally.count(f"{label} acknowledged")
                self.progress("soak: puts acknowledged", self.tally.ops["put acknowledged"], s.agents * s.fragments)
                return str(reply["id"])
            if reply is not None:
                self.tally.count(f"{label} failed (retried)")
                self.tally.error(f"{label} {agent}/{index} into {replica}: {reply.get('error')}")
                time.sleep(0.1)
            else:
                self.tally.count(f"{label} killed or lost (retried)")
        return None

    def _agent(self, agent: int) -> None:
        assert self.pool is not None and self.ledger is not None
        s = self.settings
        replica = self.replicas[agent % len(self.replicas)]
        slot = [self.pool.take()]
        for index in range(s.fragments):
            if self.publish(slot, replica, agent, index, self.ledger,
                            self.plan.kill_puts.get(agent * s.fragments + index)) is None and self.out_of_time:
                return

    def _merge(self, slot: list[Worker], dst: int, src: int, planned_kill: int | None) -> dict[str, Any] | None:
        self.tally.count("merge sent")
        step = self._kill_step("kill-merge", planned_kill, self.replicas[dst])
        reply = self._run_op(slot, {"op": "merge", "dst": self.replicas[dst], "src": self.replicas[src],
                                    "crash_at": step}, "kill-merge")
        if reply is None:
            self.tally.count("merge killed or lost")
        elif reply.get("ok"):
            self.tally.count("merge completed")
            self.tally.count("fragments copied by merges", reply["added"])
        else:
            self.tally.count("merge failed")
            self.tally.error(f"merge {dst} <- {src}: {reply.get('error')}")
        return reply

    def _gossiper(self, work: list[tuple[int, tuple[int, int]]]) -> None:
        assert self.pool is not None
        slot = [self.pool.take()]
        self.heal_slot = self.heal_slot or slot
        for number, (dst, src) in work:
            if time.monotonic() > self.deadline:
                self.out_of_time = True
                return
            self._next_op((self.replicas[dst], self.replicas[src]))
            planned = self.plan.kill_merges.get(number)
            if self._merge(slot, dst, src, planned) is not None and planned is not None:
                self._merge(slot, dst, src, None)  # the kill found it over: again, killed when it has listed
            with self.tally.lock:
                for mark in self.plan.marks[number]:  # a duplicated or reordered delivery, delivered
                    self.tally.mid_operation[mark] += 1

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
                                                "src": self.replicas[i]}, "")
                    self.tally.count("heal merges")
                    if reply is not None and reply.get("ok"):
                        added += reply["added"]
                        break
                    self.tally.error(f"heal merge {i}: {reply}")
            if added == 0 and passes > 1:
                return passes
        return HEAL_PASSES

    # -- verdict and instruments ----------------------------------------------------------------

    def _generated(self, agents: range) -> set[str]:
        s = self.settings
        return {content_id_hex(soak_fragment(s.seed, a, j, s.shape).content_id)
                for a in agents for j in range(s.fragments)}

    def judge(self) -> dict[str, Any]:
        """Every replica against the others and against the books (``judge``)."""
        assert self.ledger is not None
        return judge(self.replicas, self.ledger.path, self._generated(range(self.settings.agents)), self.s3_client)

    def judge_neighbours(self, verdict: dict[str, Any]) -> dict[str, Any]:
        """The neighbour's entries after the run, then ``clean --foreign`` (``neighbour``), with
        the controls that show the verdict and the store's refusals could see (``neighbour_controls``)."""
        s = self.settings
        outsider = soak_fragment(s.seed, s.agents + 1, 1, s.shape)  # no agent publishes it
        fates = neighbour_controls(self.workdir / "neighbour-controls", outsider)
        return with_controls(neighbour_verdict(self.planted, verdict["replicas"]), fates)

    def run_canary(self) -> dict[str, Any]:
        """One acknowledged write into a replica of its own, deleted, then judged (module doc)."""
        assert self.pool is not None
        s = self.settings
        location = str(self.workdir / "canary-replica")
        open_store(location, create=True)
        ledger = Ledger(self.workdir / "canary-acknowledged.jsonl", [location])
        try:
            cid = self.publish(self.heal_slot or [self.pool.take()], location, s.agents, 0, ledger, label="canary put")
        finally:
            ledger.close()
        if cid is None:
            return {"seen": False, "problem": "the canary's put was never acknowledged"}
        lose(location, cid)
        return canary_verdict(location, ledger.path, cid, {cid})

    def run_crash_table(self) -> CrashTable:
        s = self.settings
        return crash_table(self.workdir / "crash-table", soak_fragment(s.seed, s.agents + 1, 0, s.shape))

    def run_power_table(self) -> PowerTable:
        s = self.settings
        return power_table(self.workdir / "power-loss", soak_fragment(s.seed, s.agents + 1, 0, s.shape))


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
        soak.crashes = phase("crash table", soak.run_crash_table)  # forks: before any thread starts
        soak.power = phase("power loss", soak.run_power_table)
        phase("set-up", soak.set_up)
        phase("fault phase", soak.fault_phase)
        heal_passes = phase("heal", soak.heal)
        verdict = phase("verdict", soak.judge)
        soak.neighbours = phase("neighbour", lambda: soak.judge_neighbours(verdict))
        soak.canary = phase("canary", soak.run_canary)
    finally:
        soak.tear_down()
        if keep:
            notes.append(f"replica directories kept under {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    report = soak_report(settings, soak, verdict, heal_passes, time.perf_counter() - started, notes)
    report.data["phase_seconds"] = phases
    return report
