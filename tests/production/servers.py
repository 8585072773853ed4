"""Helpers for the production tests: servers started with serve.py (granian, as `make serve`
does), a TCP proxy that can cut the database off, and a PostgreSQL-only marker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
import requests

from tests.conftest import ROOT, free_port, server_env

TEST_DATABASE_URL = os.environ.get("TEST_DATABASE_URL", "")
ON_POSTGRES = TEST_DATABASE_URL.startswith("postgresql")
requires_postgres = pytest.mark.skipif(
    not ON_POSTGRES,
    reason="needs PostgreSQL: set TEST_DATABASE_URL=postgresql+psycopg://... (CI does); "
    "SQLite serializes writers, so it cannot show these races",
)


class Server:
    """One granian main process and its workers, serving the app on `url`."""

    def __init__(self, proc: subprocess.Popen, port: int, log_path: Path):
        self.proc, self.port, self.log_path = proc, port, log_path
        self.url = f"http://127.0.0.1:{port}"

    def __call__(self, path: str) -> str:
        return self.url + path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_lines(self) -> list[dict]:
        """Every line of the server's output, parsed: all of them must be JSON."""
        return [json.loads(line) for line in self.log_text().splitlines() if line.strip()]

    def stop(self) -> None:
        """Stop granian's main process, then whatever of its group outlived it: a worker it
        respawned after a test killed one is left behind otherwise, still serving."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)


def launch(settings: dict, log_dir: Path, workers: int = 1, threads: int = 8, **env: str) -> Server:
    """Start `python serve.py` on a free port; wait for /healthz."""
    port = free_port()
    log_path = log_dir / f"server-{port}.log"
    environment = server_env(
        settings, WEB_BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY=str(workers), WEB_THREADS=str(threads), **env
    )
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [sys.executable, "serve.py"],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a process group of its own, stopped whole (`stop`)
    )
    server = Server(proc, port, log_path)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {server.log_text()[-2000:]}")
        try:
            if requests.get(server("/healthz"), timeout=10).status_code == 200:
                return server
        except (requests.ConnectionError, requests.Timeout):
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"server did not start: {server.log_text()[-2000:]}")


@contextmanager
def running(settings: dict, log_dir: Path, **kwargs):
    server = launch(settings, log_dir, **kwargs)
    try:
        yield server
    finally:
        server.stop()


class TcpProxy:
    """A TCP relay to the database that the test can cut and restore, so a server process sees
    the database vanish and come back without the machine's PostgreSQL being touched (other
    suites share it). Cut: every relayed connection is closed and the port refuses new ones."""

    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)  # shutdown wakes the blocked accept(); then the port refuses
        with self._lock:
            doomed, self._sockets = self._sockets, set()
        for sock in doomed:
            _close(sock)

    def restore(self) -> None:
        self.start()

    close = cut

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # listener closed by cut()
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._sockets.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _close(source)
            _close(sink)
            with self._lock:
                self._sockets.discard(source)
                self._sockets.discard(sink)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
