"""The processes a benchmark run starts: the provider, the hello app and the stack floor under one
Python HTTP server (granian, production's; or gunicorn, the server production used before), and the
peer provider (node oidc-provider, started by the shared harness's run-peer.sh).

Each is started on loopback, waited for until it answers, and stopped by its own process id."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from serve import DEFAULT_THREADS  # noqa: E402 - production's setting, measured as it runs

PEER_PORT = 7101  # fixed by the shared harness's run-peer.sh


SERVERS = ("granian", "gunicorn")


@dataclass(frozen=True)
class ServerSettings:
    """The same for the provider, the hello app and the stack floor, so each floor is measured like
    the provider. `granian` is production's server (serve.py); `gunicorn` (gthread worker) is the
    one it replaced, kept so the two can be compared in one run."""

    workers: int = 2
    threads: int = DEFAULT_THREADS
    server: str = "granian"

    def argv(self, port: int, wsgi_app: str) -> list[str]:
        if self.server == "granian":
            return [
                sys.executable,
                "-m",
                "granian",
                "--interface",
                "wsgi",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(self.workers),
                "--blocking-threads",
                str(self.threads),
                "--no-ws",
                "--log-level",
                "warning",
                wsgi_app,
            ]
        # `-c /dev/null`: no configuration file; keep-alive connections, as a load balancer would hold.
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "/dev/null",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(self.workers),
            "--threads",
            str(self.threads),
            "--worker-class",
            "gthread",
            "--keep-alive",
            "75",
            "--timeout",
            "120",
            "--log-level",
            "warning",
            wsgi_app,
        ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_busy(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for(url: str, proc: subprocess.Popen, log_path: Path, timeout: float = 180) -> None:
    """Poll `url` until it answers 200 (the process may still be installing or importing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback http
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    stop(proc)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s; see {log_path}")


def start_server(
    wsgi_app: str, port: int, env: dict, log_path: Path, settings: ServerSettings, ready_path: str
) -> subprocess.Popen:
    """`wsgi_app` served from the project root with `env` added to the environment."""
    full_env = {**os.environ, **{k: str(v) for k, v in env.items()}, "PYTHONPATH": str(ROOT)}
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(  # noqa: S603 - our own fixed argv
        settings.argv(port, wsgi_app),
        cwd=ROOT,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_for(f"http://127.0.0.1:{port}{ready_path}", proc, log_path)
    return proc


def start_peer(run_peer: Path, log_path: Path, work_dir: Path) -> subprocess.Popen:
    """The peer on 127.0.0.1:7101. run-peer.sh installs its npm packages on first use (into
    `work_dir`, outside the repository) and then execs node, so the pid is the server's."""
    if port_busy(PEER_PORT):
        raise RuntimeError(f"127.0.0.1:{PEER_PORT} is already in use: stop the running peer first")
    env = {**os.environ, "PEER_WORK": str(work_dir)}
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(  # noqa: S603 - our own fixed argv
        ["bash", str(run_peer)],  # noqa: S607 - bash, on PATH
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_for(f"http://127.0.0.1:{PEER_PORT}/.well-known/openid-configuration", proc, log_path, timeout=600)
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    """Stop one process we started (a server's main process stops its own workers)."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
