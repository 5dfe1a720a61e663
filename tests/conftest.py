import os

# The tests run tiny models (hidden size 128) where torch's intra-op threads have nothing to split
# and only add synchronisation; on a busy 2-core machine, threads spin-waiting on descheduled
# siblings made a tiny replay 3-4x slower (80 s against 24 s with one thread). Subprocesses the
# tests start inherit the setting. Benchmarks and the product keep torch's default.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import pytest
from hypothesis import HealthCheck, settings

# CI runs a fixed, derandomized budget so a failure is reproducible from the log alone.
settings.register_profile("ci", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config):
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    if not hasattr(config, "workerinput"):  # once, in the process that starts the workers
        # numba compiles the render kernels into the source tree's __pycache__ (seconds); every
        # scratch copy then starts from them (audit.scratch copies them: a patched kernel file
        # compiles afresh), and the workers load them instead of compiling them each.  Only the
        # compilation is wanted here: tests/test_vectors.py asserts the rows.
        from realstate.replay.vectors import check_known_answers

        check_known_answers()
    # Scratch-copy runs of the product's command line (about 40 in the default run) fork from a
    # zygote that has imported torch, transformers and z3 once (audit.warm): a tiny
    # `canonmerge realstate` is about 1 s of work after 8 s of imports. The child still imports
    # the copy's own code; CANONMERGE_TEST_FRESH=1 runs each in a fresh interpreter instead.
    if not os.environ.get("CANONMERGE_TEST_FRESH"):
        from audit.scratch import use_launcher
        from audit.warm import WarmLauncher

        use_launcher(WarmLauncher())


def pytest_unconfigure(config):
    from audit import scratch

    launcher, scratch._launcher = scratch._launcher, None
    if launcher is not None:
        launcher.close()


# Files whose tests each take seconds (product processes, default-size runs), heaviest first.
# They are collected first so that ``-n 2`` deals them out early, alternately to both workers;
# collected in name order, the heaviest (soak, store processes, replicate) came last and one
# worker finished them alone while the other sat idle. Order inside a file is unchanged.
RUN_FIRST = (
    "test_planted_in_source.py", "test_cli_foundation.py", "test_bench_run.py", "test_replicate.py",
    "test_hostile_processes.py", "test_hostile_flags.py",
    "test_modelcheck_shards.py", "test_modelcheck_checks.py", "test_soak.py", "test_modelcheck_cli.py",
    "test_modelcheck_gossip.py", "test_realstate_arch_smollm2.py", "test_store_processes.py",
    "test_realstate_arch.py", "test_realstate_order_value.py", "test_proofs_smt2.py", "test_proofs_planted.py",
    "test_realstate_decodes_activations.py", "test_realstate_models.py", "test_audit_sampled.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(RUN_FIRST)))  # stable: file order kept


@pytest.fixture(scope="session")
def full_proof_run(tmp_path_factory):
    """Every obligation at the timeout ``prove`` and ``verify`` use, its SMT-LIB exported: one run
    (seconds) read by the runner's tests and the second solver's.  Tests using it are marked
    ``xdist_group("full-proof-run")``, so that ``-n`` gives them one worker and one run."""
    import proofs

    directory = tmp_path_factory.mktemp("smt2")
    return directory, proofs.run(timeout_s=proofs.DEFAULT_TIMEOUT_S, emit_smt2=directory)
