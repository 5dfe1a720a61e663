"""A loopback S3 endpoint for the soak and the benchmark: moto's server in its own process.

Why a separate process: the clients under test are real processes talking HTTP to a real
server; an in-process server would share their interpreter.  Why moto: it is an S3-compatible
server that honours conditional create (``If-None-Match: *`` -> 412), checked by the tests.
Its storage is in memory, so the server process itself is never killed during a run (that
would erase every bucket, which no durable S3 does); endpoint restarts are done on the
``gateway`` in front of it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from types import TracebackType

from spec import InputError

# Credentials for the loopback server only (moto accepts any); never a real account's.
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "canonmerge-loopback", "AWS_SECRET_ACCESS_KEY": "canonmerge-loopback",
                     "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise InputError(f"127.0.0.1:{port}: the server exited with code {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise InputError(f"127.0.0.1:{port}: nothing listening after {timeout_s:.0f} s")


def client_environment(url: str) -> dict[str, str]:
    """What a client process needs to use the loopback endpoint through boto3's standard chain."""
    return {**LOCAL_CREDENTIALS, "AWS_ENDPOINT_URL_S3": url, "AWS_RETRY_MODE": "standard",
            "AWS_MAX_ATTEMPTS": "10", "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true"}


class MotoEndpoint:
    """``with MotoEndpoint() as s3:`` — moto's S3 server on ``127.0.0.1:s3.port``."""

    def __init__(self, port: int | None = None, start_timeout_s: float = 60.0) -> None:
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoEndpoint:
        try:
            import moto.server  # noqa: F401  (fail early, with a clear message)
        except ImportError:
            raise InputError("the loopback S3 endpoint needs moto: pip install 'canonmerge[soak]'") from None
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, **LOCAL_CREDENTIALS})
        try:
            wait_for_port(self.port, self.start_timeout_s, self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> MotoEndpoint:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
