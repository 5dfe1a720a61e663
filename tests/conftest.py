import os

# The tests run tiny models (hidden size 128) where torch's intra-op threads have nothing to split
# and only add synchronisation; on a busy 2-core machine, threads spin-waiting on descheduled
# siblings made a tiny replay 3-4x slower (80 s against 24 s with one thread). Subprocesses the
# tests start inherit the setting. Benchmarks and the product keep torch's default.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from hypothesis import HealthCheck, settings

# CI runs a fixed, derandomized budget so a failure is reproducible from the log alone.
settings.register_profile("ci", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config):
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
