"""``canonmerge audit`` end to end in its sampled mode: a seeded sample of generated mutants plus
a curated bug that must be killed, a curated bug judged equivalent and a curated bug that the
scoped part cannot see (a planted survivor: it must be reported as one, and fail the audit),
each planted in its own scratch copy and run through the product's own ``prove`` (scoped with
--part-args to stay fast: the sampled run's figures are in docs/results/audit.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from audit.equivalent import EQUIVALENT
from tests.audit_helpers import none_left_in, running_in

# a generous solver timeout: on a loaded machine a 10 s limit can turn a proof into "unknown" (a
# failing row), which would read as a kill of the control
SCOPE = "prove=--only c5_link_order_key,c5_link_total_order_bits,c3_link_canonical_order --timeout 60"
SELECTION = ["--file", "spec/ordering.py", "--sample", "2", "--seed", "11",
             "--mutant", "spec-key-with-constant-m", "--mutant", "stable-argsort",
             "--mutant", "spec-bag-order-drops-duplicates"]  # caught by c4_link_bag_order only: not in SCOPE


def audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "canonmerge", "audit", *args], capture_output=True, text=True,
                          timeout=600)


def test_the_sampled_audit_kills_the_curated_bug_reports_the_survivor_and_excludes_the_equivalent_one():
    out = audit(*SELECTION, "--parts", "prove", "--part-args", SCOPE, "--workers", "2", "--json")
    assert out.returncode in (0, 1), out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["control"][0]["outcome"] == "survived"  # the unpatched copy passes the same scope
    by_id = {m["id"]: m for m in report["mutants"]}
    assert len(by_id) == 5 and report["selection"]["selected"] == 5

    killed = next(m for m in by_id.values() if "spec-key-with-constant-m" in m["id"])
    assert killed["verdict"] == "killed" and killed["origin"] == "curated"
    # --fail-fast: prove stops at the first of the rows that catch it
    assert killed["cells"][0]["failing"] in (["C3/c3_link_canonical_order"], ["C5/c5_link_order_key"])

    equivalent = next(m for m in by_id.values() if "stable-argsort" in m["id"])
    assert equivalent["id"] in EQUIVALENT and equivalent["verdict"] == "survived"
    summary = report["summary"]
    assert equivalent["id"] in summary["equivalent_survivors"]
    assert summary["overall"]["equivalent"] == 1 and summary["overall"]["non_equivalent"] == 4

    survivor = next(m for m in by_id.values() if "spec-bag-order-drops-duplicates" in m["id"])
    assert survivor["verdict"] == "survived" and survivor["cells"][0]["outcome"] == "survived"
    assert survivor["id"] in summary["gaps"] and survivor["id"] in summary["curated_survivors"]
    assert summary["overall"]["survived"] >= 1
    detected = sum(m["verdict"] in ("killed", "crashed", "timeout") for m in by_id.values())
    assert summary["overall"]["kill_ratio"] == round(detected / 4, 4) and detected <= 3
    assert out.returncode == 1  # a curated bug survived: never a passing audit
    for m in by_id.values():  # every mutant carries its patch, per-part outcome and time
        assert m["patches"] and m["cells"][0]["part"] == "prove" and m["cells"][0]["seconds"] >= 0

    listed = audit(*SELECTION, "--list", "--json")  # the same seed draws the same sample
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert [m["id"] for m in json.loads(listed.stdout)["mutants"]] == [m["id"] for m in report["mutants"]]


def test_bad_selections_are_usage_errors():
    out = audit("--file", "spec/ordering.py", "--mutant", "no-such-mutant-anywhere", "--list")
    assert out.returncode == 2 and "matches 0 mutants" in out.stderr and "Traceback" not in out.stderr
    out = audit("--file", "spec/not_a_target.py", "--list")
    assert out.returncode == 2 and "not an audit target" in out.stderr
    out = audit("--parts", "prove,bogus", "--list")
    assert out.returncode == 2 and "--parts" in out.stderr


def test_a_terminated_audit_leaves_no_part_process_behind(tmp_path):
    """SIGTERM while a check part runs its process pool: the audit exits, and the part, its
    forkserver and its workers go with it (they once went on computing, orphaned)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the scratch copies (and every part) live here
    audit = subprocess.Popen([sys.executable, "-m", "canonmerge", "audit", "--origin", "curated", "--mutant",
                              "render-alternates-between-calls", "--parts", "check", "--no-reach",
                              "--part-args", "check=--max-arity 6 --workers 2"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600  # the event is the pool's start; the guard is against a hang only
    while len(running_in(tmp_path)) < 2 and audit.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(running_in(tmp_path)) >= 2, "the check part never started its pool (exited, or hung)"
    audit.send_signal(signal.SIGTERM)
    try:
        _, stderr = audit.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        audit.kill()
        raise AssertionError("hung: the audit did not exit 600 s after SIGTERM") from None
    try:
        assert none_left_in(tmp_path)
    finally:  # a failed run must not leave orphans burning the suite's cores
        for pid in running_in(tmp_path):
            os.kill(pid, signal.SIGKILL)
    assert audit.returncode == 143 and "Traceback" not in stderr, stderr[-2000:]
