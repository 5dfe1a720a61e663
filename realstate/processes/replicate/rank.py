"""What one ``torch.distributed`` rank does in the distributed replay of C7.

1. Publish: the rank serialises the fragments it owns (fragment ``i`` belongs to rank
   ``i mod world``) as fragment-file bytes; every rank receives every fragment over the process
   group (``all_gather`` of uint8 tensors: lengths first, then padded bytes) and parses each
   with the strict reader — bytes, never pickles.
2. Deliver: the rank applies the fragments in its own seeded order, with re-deliveries (a copy
   arriving again later) and drops (a delivery lost, then resent later), merging each arrival
   into its replica state with the engine's join (``engine.collect`` / ``merge``).  The ranks'
   first-arrival orders are distinct permutations wherever there are enough of them (drawn
   from one seeded stream that every rank reads alike).
3. Render and agree: CanonicalMerge of the final state on the rank's device, then an
   ``all_gather`` of the 32-byte render digests (and of the set digests), written to a result
   file for the launcher.
4. Canary: a second round in which the last rank renders its state at base offset 1 (every
   other rank keeps its digest) and the digests are gathered again: the launcher's comparison
   of ranks must report that round as a disagreement, or it is blind.

Every delivery is a freshly parsed copy (a new Python object), so dedup by identity is caught."""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from realstate.exchange.fragment_file import fragment_from_bytes, fragment_to_bytes, load_fragment
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import canonical_render
from spec.interrupts import ignore_interrupts

# kinds of delivery in a rank's schedule
FIRST, REDELIVERY, DROPPED, RESENT = "first", "re-delivery", "dropped", "resent"


@dataclass(frozen=True)
class RankJob:
    rank: int
    world: int
    backend: str
    device: str
    init_method: str
    fragment_files: tuple[str, ...]  # every fragment, in the launcher's order
    seed: int
    redeliveries: int
    drops: int
    plant: str | None
    result_file: str
    timeout_s: float


def _permutation(count: int, number: int) -> list[int]:
    """The ``number``-th permutation of ``range(count)`` (factorial number system)."""
    items, order = list(range(count)), []
    for position in range(count, 0, -1):
        digit, number = divmod(number, math.factorial(position - 1))
        order.append(items.pop(digit))
    return order


def first_orders(count: int, world: int, seed: int) -> list[list[int]]:
    """Every rank's first-arrival order: ``min(world, count!)`` distinct seeded permutations,
    repeated in turn when there are more ranks than permutations."""
    rng = random.Random(seed * 1_000_003 + 0x0DE5)
    total = math.factorial(count)
    numbers: list[int] = []
    while len(numbers) < min(world, total):
        number = rng.randrange(total)
        if number not in numbers:
            numbers.append(number)
    return [_permutation(count, numbers[r % len(numbers)]) for r in range(world)]


def schedule(count: int, rank: int, seed: int, redeliveries: int, drops: int, world: int = 1) -> list[tuple[int, str]]:
    """The rank's deliveries: its first-arrival order (``first_orders``), then ``drops``
    deliveries lost and resent later and ``redeliveries`` copies arriving again later
    (re-deliveries and resends are placed after the delivery they repeat)."""
    rng = random.Random(seed * 1_000_003 + rank)
    order = first_orders(count, max(world, rank + 1), seed)[rank]
    deliveries: list[tuple[int, str]] = [(i, FIRST) for i in order]
    for _ in range(min(drops, count)):
        at = rng.randrange(len(deliveries))
        index, kind = deliveries[at]
        if kind != FIRST:
            continue
        deliveries[at] = (index, DROPPED)
        deliveries.insert(rng.randrange(at, len(deliveries)) + 1, (index, RESENT))
    for _ in range(redeliveries):
        at = rng.randrange(len(deliveries))
        deliveries.insert(rng.randrange(at, len(deliveries)) + 1, (deliveries[at][0], REDELIVERY))
    return deliveries


def _engine(plant: str | None) -> Engine:
    if plant is None:
        return CANONICAL
    from realstate.evidence.planted import MUTANTS

    return MUTANTS[plant]


def _all_gather_bytes(payload: bytes, device: torch.device, world: int) -> list[bytes]:
    """Every rank's ``payload`` (variable length): lengths first, then padded uint8 tensors."""
    length = torch.tensor([len(payload)], dtype=torch.int64, device=device)
    lengths = [torch.zeros_like(length) for _ in range(world)]
    dist.all_gather(lengths, length)
    sizes = [int(t.item()) for t in lengths]
    padded = torch.zeros(max(sizes), dtype=torch.uint8, device=device)
    if payload:
        padded[: len(payload)] = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
    gathered = [torch.zeros_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded)
    return [bytes(t[:n].cpu().numpy().tobytes()) for t, n in zip(gathered, sizes)]


def _pack(chunks: list[bytes]) -> bytes:
    return b"".join(len(c).to_bytes(8, "little") + c for c in chunks)


def _unpack(data: bytes) -> list[bytes]:
    chunks, at = [], 0
    while at < len(data):
        n = int.from_bytes(data[at:at + 8], "little")
        chunks.append(data[at + 8:at + 8 + n])
        at += 8 + n
    return chunks


def run_rank(job: RankJob) -> None:
    """The rank's whole life.  Whatever goes wrong comes back to the launcher as one line in the
    result file (``{"rank", "error"}``) and exit code 1, never as a traceback on the terminal;
    Ctrl-C is the launcher's to handle."""
    ignore_interrupts()  # Ctrl-C and SIGHUP are the parent's to handle: it stops us
    try:
        device = torch.device(job.device)
        dist.init_process_group(job.backend, init_method=job.init_method, rank=job.rank, world_size=job.world,
                                timeout=timedelta(seconds=job.timeout_s))
        try:
            result = _replay(job, device)
        finally:
            dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 (reported by the launcher, which makes the result unknown)
        try:
            Path(job.result_file).write_text(json.dumps({"rank": job.rank,
                                                         "error": f"{type(exc).__name__}: {exc}"[:500]}))
        except OSError:
            pass  # the launcher is gone (its work directory with it): it reports the rank itself
        sys.exit(1)
    Path(job.result_file).write_text(json.dumps(result))


def _replay(job: RankJob, device: torch.device) -> dict[str, Any]:
    # 1. publish my fragments, receive everyone's as bytes
    mine = [fragment_to_bytes(load_fragment(path)) for i, path in enumerate(job.fragment_files)
            if i % job.world == job.rank]
    received: dict[int, bytes] = {}
    for owner, packed in enumerate(_all_gather_bytes(_pack(mine), device, job.world)):
        owned = [i for i in range(len(job.fragment_files)) if i % job.world == owner]
        for index, data in zip(owned, _unpack(packed), strict=True):
            received[index] = data
    # 2. deliver in my own order, merging each arrival into my replica state
    engine = _engine(job.plant)
    deliveries = schedule(len(received), job.rank, job.seed, job.redeliveries, job.drops, job.world)
    state: Any = engine.collect([])
    applied, arrivals = 0, []
    for index, kind in deliveries:
        if kind == DROPPED:
            continue
        arrival = fragment_from_bytes(received[index], f"rank {job.rank} delivery of fragment {index}").to(device)
        state = state.merge(engine.collect([arrival]))
        applied += 1
        if index not in arrivals:
            arrivals.append(index)
    members: list[Fragment] = list(state)
    # 3. render, and agree on the digests
    rendered = canonical_render(members, 0, engine)
    digest = bytes.fromhex(rendered.digest())
    set_digest = hashlib.sha256(b"".join(sorted(f.content_id for f in members))).digest()
    digests = _all_gather_bytes(digest, device, job.world)
    sets = _all_gather_bytes(set_digest, device, job.world)
    # 4. the canary round: the last rank renders differently, everyone gathers again
    started = time.perf_counter()
    canary = bytes.fromhex(canonical_render(members, 1, engine).digest()) if job.rank == job.world - 1 else digest
    canaries = _all_gather_bytes(canary, device, job.world)
    canary_seconds = time.perf_counter() - started
    return {"rank": job.rank, "backend": job.backend, "device": str(device), "deliveries": len(deliveries),
            "applied": applied, "redeliveries": sum(k == REDELIVERY for _, k in deliveries),
            "drops": sum(k == DROPPED for _, k in deliveries), "members": len(members),
            "arrivals": arrivals, "order": [index for index, kind in deliveries if kind in (FIRST, DROPPED)],
            "digest": digest.hex(), "set_digest": set_digest.hex(), "tokens": rendered.tokens,
            "gathered_digests": [d.hex() for d in digests], "gathered_sets": [d.hex() for d in sets],
            "canary": {"rank": job.rank, "digest": canary.hex(), "set_digest": set_digest.hex(),
                       "gathered_digests": [d.hex() for d in canaries], "seconds": round(canary_seconds, 4)}}
