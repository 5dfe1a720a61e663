"""The store across processes: concurrent writers, writers killed mid-write, and a fragment saved
in one process rendering to the same SHA-256 in a fresh one."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from realstate.exchange.stores import DirectoryStore
from realstate.kernel.fragment import Fragment, fragment_set
from realstate.kernel.render import canonical_render
from tests.realstate_helpers import random_fragment, tiny_fingerprint

ROOT = Path(__file__).resolve().parent.parent
WRITERS = 3
SEEDS = list(range(10))


def big_fragment(seed: int) -> Fragment:
    """~256 KiB files: large enough that writes interleave, small enough to stay fast."""
    return random_fragment(tiny_fingerprint("float32", layers=4, heads=4, head_dim=32), 64, seed=seed)


def _writer(path: str, seeds: list[int], barrier, results) -> None:
    """A writer process: creates (or adopts) the store concurrently, then puts its fragments."""
    fragments = [big_fragment(s) for s in seeds]
    random.Random(seeds[0]).shuffle(fragments)
    barrier.wait()
    store = DirectoryStore(path, create=True)
    results.put([store.put(f) for f in fragments + fragments[:2]])  # re-delivery included


def test_concurrent_writers_leave_every_file_valid(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    path = str(tmp_path / "store")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    plans = [SEEDS[i * 3:i * 3 + 7] for i in range(WRITERS)]  # overlapping subsets covering SEEDS
    assert sorted(set(sum(plans, []))) == SEEDS
    workers = [ctx.Process(target=_writer, args=(path, plan, barrier, results)) for plan in plans]
    for w in workers:
        w.start()
    reads = 0
    while any(w.is_alive() for w in workers):  # a reader racing the writers sees only whole files
        if os.path.isdir(path) and os.path.exists(os.path.join(path, "CANONMERGE_STORE")):
            DirectoryStore(path).fragments()
            reads += 1
        time.sleep(0.01)
    for w in workers:
        w.join()
        assert w.exitcode == 0
    outcomes = [results.get(timeout=10) for _ in workers]
    store = DirectoryStore(path)
    expected = fragment_set(big_fragment(s) for s in SEEDS)
    assert store.fragments() == expected  # every file fully validated, id = name
    assert len(os.listdir(path)) == len(SEEDS) + 1 and store.temporaries() == []
    assert sum(sum(o) for o in outcomes) >= len(SEEDS)  # each id added at least once...
    assert all(o[-2:] == [False, False] for o in outcomes)  # ...and re-delivery is a no-op
    assert reads > 0


SLOW_WRITER = textwrap.dedent("""
    import sys, time
    from realstate.exchange.fragment_file import fragment_to_bytes
    from realstate.exchange.stores import DirectoryStore
    from tests.test_store_processes import big_fragment

    store = DirectoryStore(sys.argv[1])
    fragment = big_fragment(99)
    data = fragment_to_bytes(fragment)

    def chunks():
        yield data[: len(data) // 2]
        print("half written", flush=True)
        time.sleep(120)
        yield data[len(data) // 2 :]

    store._write_atomic(fragment.content_id.hex() + ".cmfrag", chunks())
""")

BUSY_WRITER = textwrap.dedent("""
    import sys
    from realstate.exchange.stores import DirectoryStore
    from tests.test_store_processes import big_fragment

    store = DirectoryStore(sys.argv[1])
    for seed in range(100, 200):
        store.put(big_fragment(seed))
        print("put", seed, flush=True)
""")


def test_writers_killed_mid_write_leave_the_store_valid(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "store", create=True)
    store.put(big_fragment(0))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    slow = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(store.path)], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    busy = subprocess.Popen([sys.executable, "-c", BUSY_WRITER, str(store.path)], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    watchdog = threading.Timer(90, lambda: [c.kill() for c in (slow, busy)])  # never hang the suite
    watchdog.start()
    try:
        assert slow.stdout.readline() == "half written\n"
        # the busy writer may have its own write in flight: look for the slow writer's by its pid
        assert len([t for t in store.temporaries() if t.startswith(f".tmp-{slow.pid}-")]) == 1
        slow.send_signal(signal.SIGKILL)
        for _ in range(3):  # let the busy writer get going, then kill it wherever it is
            assert busy.stdout.readline().startswith("put ")
        busy.send_signal(signal.SIGKILL)
    finally:
        watchdog.cancel()
        for child in (slow, busy):
            child.kill()
            child.wait()
            child.stdout.close()
    assert slow.returncode == busy.returncode == -signal.SIGKILL
    ids = store.ids()
    assert big_fragment(0).content_id in ids and big_fragment(99).content_id not in ids
    assert 1 + 3 <= len(ids) <= 1 + 100
    state = store.fragments()  # every visible file is whole and valid
    assert state == fragment_set([big_fragment(0)] + [big_fragment(s) for s in range(100, 100 + len(ids) - 1)])
    leftovers = store.temporaries()
    assert 1 <= len(leftovers) <= 2  # the slow writer's, and the busy one's if killed mid-write
    assert store.clean_temporaries() == []  # fresh: a live writer's file looks like this too
    assert store.clean_temporaries(older_than_s=0) == leftovers
    assert store.put(big_fragment(99)) is True and store.get(big_fragment(99).content_id)
    assert store.temporaries() == []


def test_a_fragment_saved_here_renders_identically_in_a_fresh_process(tmp_path: Path) -> None:
    from realstate.models.agents import run_agents
    from realstate.models.seeded import load_seeded

    lm = load_seeded("qwen3-tiny", seed=0)
    fragments = [run.fragment for run in run_agents(lm, 3, latent_steps=2)]
    expected = canonical_render(fragments).digest()
    store = DirectoryStore(tmp_path / "store", create=True)
    for f in reversed(fragments):
        store.put(f)
    out = subprocess.run([sys.executable, "-m", "canonmerge", "store", "render", str(store.path),
                          "--geometry", "qwen3-tiny", "--json"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["digest"] == expected
    assert report["tokens"] == sum(f.tokens for f in fragments)
