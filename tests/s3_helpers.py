"""A real S3 endpoint for the tests: moto's server (``ThreadedMotoServer``) on 127.0.0.1 with a
free port, talked to over HTTP by boto3 — not a mocked client.  The environment the store code
reads (boto3's standard chain) points at it; nothing reaches a real AWS account."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from realstate.processes.soak.endpoint import client_environment, free_port

SECRET = "canonmerge-test-secret-d41d8cd98f00"  # must never appear in any output


@dataclass
class LoopbackS3:
    url: str
    env: dict[str, str]
    client: Any

    def bucket(self, name: str) -> str:
        self.client.create_bucket(Bucket=name)
        return name


@contextlib.contextmanager
def loopback_s3() -> Iterator[LoopbackS3]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        url = f"http://127.0.0.1:{port}"
        env = {**client_environment(url), "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_MAX_ATTEMPTS": "2"}
        client = boto3.session.Session().client("s3", endpoint_url=url, aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                                                aws_secret_access_key=SECRET, region_name="us-east-1")
        yield LoopbackS3(url, env, client)
    finally:
        server.stop()


def use_endpoint(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Point this process's standard chain at the endpoint (and drop the cached client)."""
    import realstate.exchange.stores.s3 as s3

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(s3, "_CLIENT", None)


def subprocess_env(env: dict[str, str]) -> dict[str, str]:
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, **env, "PYTHONPATH": root}
