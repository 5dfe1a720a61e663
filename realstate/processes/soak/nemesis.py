"""The nemesis: where and when each fault lands, and the faults it performs itself.

The plan is drawn from the seed before the run, so a run's faults are reproducible in kind and
count; their timing against the real processes is not (that is the point).  Process kills are
carried out by the harness's drivers: a killed command carries a step number, and the worker
SIGKILLs itself at that step of its write (so the kill lands mid-operation for certain; one
that finds its operation over before that step is owed to the next operation of its kind).  The
nemesis itself restarts the endpoint's gateway (waiting for a transfer to be in flight),
performs torn uploads and plants a neighbour's entries into a directory replica (waiting for an
operation on it to be in flight; ``neighbour``).  Duplicated and reordered merges are marked in the schedule, so the run
counts those that were actually delivered."""

from __future__ import annotations

import os
import random
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from realstate.exchange.fragment_file import fragment_to_bytes
from realstate.exchange.stores import fragment_name, is_s3_url, parse_s3_url
from realstate.processes.soak.crashes import PUT_STEPS
from realstate.processes.soak.gateway import Gateway
from realstate.processes.soak.settings import SoakSettings
from realstate.processes.soak.synthetic import soak_fragment


@dataclass
class FaultPlan:
    kill_puts: dict[int, int] = field(default_factory=dict)  # put number (0..) -> step to kill it at
    kill_merges: dict[int, int] = field(default_factory=dict)  # merge number -> step to kill it at
    restarts_at: set[int] = field(default_factory=set)  # operation numbers at which the gateway restarts
    torn_at: set[int] = field(default_factory=set)  # operation numbers at which an upload is torn
    planted_at: set[int] = field(default_factory=set)  # operation numbers at which a neighbour plants entries
    schedule: list[tuple[int, int]] = field(default_factory=list)  # merges: (dst, src) replica numbers
    marks: list[tuple[str, ...]] = field(default_factory=list)  # per merge: the schedule faults it carries
    counts: dict[str, int] = field(default_factory=dict)


def _spread(total: int, kinds: tuple[str, ...]) -> dict[str, int]:
    counts = {k: total // len(kinds) for k in kinds} if kinds else {}
    for k in kinds[: total % len(kinds)] if kinds else ():
        counts[k] += 1
    return counts


def _steps(numbers: list[int], first: int) -> dict[int, int]:
    """Kills spread over the steps in turn: the k-th kill lands at step ``first + k`` (1-based;
    the harness folds it onto the steps the store really reports), so runs with few kills still
    land at different steps from one seed to the next."""
    return {n: first + k for k, n in enumerate(sorted(numbers))}


def plan_faults(settings: SoakSettings) -> FaultPlan:
    rng = random.Random(settings.seed)
    counts = _spread(settings.faults, settings.active_kinds())
    puts = settings.agents * settings.fragments
    schedule = []
    for _ in range(settings.merges):
        dst, src = rng.sample(range(settings.replicas), 2)
        schedule.append((dst, src))
    marks: list[tuple[str, ...]] = [()] * len(schedule)
    for _ in range(counts.get("duplicate-merge", 0)):
        k = rng.randrange(len(schedule))
        at = rng.randrange(k, len(schedule)) + 1
        schedule.insert(at, schedule[k])
        marks.insert(at, ("duplicate-merge",))
    for _ in range(counts.get("reorder-merges", 0)):
        a = rng.randrange(len(schedule))
        b = min(len(schedule), a + rng.randint(2, 6))
        schedule[a:b] = reversed(schedule[a:b])
        marks[a:b] = reversed(marks[a:b])
        marks[a] = (*marks[a], "reorder-merges")  # the window's first delivery carries the fault
    operations = puts + len(schedule)
    kill_puts = rng.sample(range(puts), min(puts, counts.get("kill-put", 0)))
    kill_merges = rng.sample(range(len(schedule)), min(len(schedule), counts.get("kill-merge", 0)))
    restarts_at = set(rng.sample(range(operations), min(operations, counts.get("restart-endpoint", 0))))
    torn_at = set(rng.sample(range(operations), min(operations, counts.get("torn-upload", 0))))
    put_steps = _steps(kill_puts, 1 + rng.randrange(len(PUT_STEPS)))
    merge_steps = _steps(kill_merges, 1 + rng.randrange(len(PUT_STEPS) + 1))  # a merge lists first
    planted_at = set(rng.sample(range(operations), min(operations, counts.get("hostile-neighbour", 0))))
    return FaultPlan(kill_puts=put_steps, kill_merges=merge_steps, restarts_at=restarts_at, torn_at=torn_at,
                     planted_at=planted_at, schedule=schedule, marks=marks, counts=counts)


def restart_gateway(gateway: Gateway, rng: random.Random, in_flight: Callable[[], bool],
                    wait_s: float = 5.0) -> bool:
    """SIGKILL the endpoint's front (dropping every connection mid-transfer), stay down a moment,
    start it again on the same port.  Waits up to ``wait_s`` for an S3 operation to be in flight
    first; returns whether one was at the kill."""
    time.sleep(rng.uniform(0.0, 0.02))
    deadline = time.monotonic() + wait_s
    while not in_flight() and time.monotonic() < deadline:
        time.sleep(0.001)
    with gateway.lock:
        busy = in_flight()
        gateway.kill()
        time.sleep(rng.uniform(0.05, 0.3))
        gateway.start()
        gateway.restarts += 1
    return busy


def wait_busy(busy: Callable[[], bool], wait_s: float = 5.0) -> bool:
    """Wait up to ``wait_s`` for ``busy``; returns whether it held at the end."""
    deadline = time.monotonic() + wait_s
    while not busy() and time.monotonic() < deadline:
        time.sleep(0.001)
    return busy()


def torn_upload(location: str, gateway: Gateway | None, settings: SoakSettings, agent: int, index: int) -> str:
    """Half of a real fragment's upload, then the writer vanishes.  Returns what was done."""
    fragment = soak_fragment(settings.seed, agent, index, settings.shape)
    data = fragment_to_bytes(fragment)
    name = fragment_name(fragment.content_id)
    if is_s3_url(location):
        assert gateway is not None
        at = parse_s3_url(location)
        request = (f"PUT /{at.bucket}/{at.prefix}{name} HTTP/1.1\r\nHost: 127.0.0.1:{gateway.listen_port}\r\n"
                   f"Content-Length: {len(data)}\r\nIf-None-Match: *\r\n\r\n").encode("ascii")
        try:
            with socket.create_connection(("127.0.0.1", gateway.listen_port), timeout=5) as conn:
                conn.sendall(request + data[: len(data) // 2])
                time.sleep(0.05)
        except OSError:
            return f"S3 PUT of {name[:16]} cut (the gateway was down)"
        return f"S3 PUT of {name[:16]}: {len(data) // 2} of {len(data)} bytes sent, then the connection closed"
    temp = os.path.join(location, f".tmp-{4_000_000 + agent}-{secrets.token_hex(8)}")
    with open(temp, "wb") as handle:  # what a writer killed mid-write leaves behind
        handle.write(data[: len(data) // 2])
    return f"half-written temporary {os.path.basename(temp)} for {name[:16]}"
