"""A restartable TCP front for the loopback S3 endpoint: what the nemesis kills and restarts.

Clients talk to the gateway's port; it forwards every connection to the server.  SIGKILL of the
gateway process drops every connection mid-transfer in both directions — what clients see when
an S3 endpoint restarts — while the storage behind it stays, as a durable S3 endpoint's does.
Run as ``python -m realstate.processes.soak.gateway LISTEN_PORT TARGET_PORT`` (stdlib only: it starts in
milliseconds)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

from realstate.processes.soak.endpoint import wait_for_port
from spec import InputError

_CHUNK = 1 << 16


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(_CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listen_port: int, target_port: int) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(128)
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", target_port))
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


class Gateway:
    """The gateway process, started, killed (SIGKILL) and restarted on the same port."""

    def __init__(self, listen_port: int, target_port: int) -> None:
        self.listen_port, self.target_port = listen_port, target_port
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.lock = threading.Lock()  # one restart at a time

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listen_port}"

    def start(self, attempts: int = 3) -> None:
        for attempt in range(attempts):
            try:
                return self._start()
            except InputError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.2)  # the port may still be held by the killed process's sockets

    def _start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "realstate.processes.soak.gateway", str(self.listen_port),
                                         str(self.target_port)], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        wait_for_port(self.listen_port, 30.0, self.process)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None


    def is_up(self) -> bool:
        return self.process is not None and self.process.poll() is None


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
