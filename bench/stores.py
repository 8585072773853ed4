"""Data stores of their own for a benchmark target, counted in its CPU.

The shared harness charges a target with the CPU of one process tree (`--server-pid`: the process
and its live descendants). A provider that keeps its state in Redis or PostgreSQL makes those
processes work too, and the comparison is only fair when that work is counted on both sides. So
each target that needs a store gets a private one - a redis-server, or a PostgreSQL cluster made
with initdb in a temporary folder - started *inside* the target's process tree: a shell starts the
store in the background, waits until it answers, prepares what the server needs, then `exec`s the
server in its own place. The server's pid is the shell's, and the store is its child, so every
CPU second the store spends for the server is in the harness's figure. A private store is also
quiet: nothing else on the machine (another test run, the machine's own cluster) adds to it.

The whole tree runs in its own process group (`stop_group`), so stopping the target stops its store.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

POSTGRES_USER = "postgres"  # initdb and postgres refuse to run as root


def postgres_bin() -> Path:
    """The newest installed PostgreSQL's server programs (Debian: /usr/lib/postgresql/<v>/bin)."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    if not versions:
        raise SystemExit("bench: no PostgreSQL server programs under /usr/lib/postgresql (apt-get install postgresql)")
    return versions[-1].parent


@dataclass(frozen=True)
class Store:
    """A store to start inside a target's process tree: the shell lines that start it and wait for
    it, and the URL the server reaches it at."""

    kind: str  # "redis" or "postgresql"
    url: str
    start: str  # shell lines: start in the background, wait until ready


def private_redis(port: int, work: Path) -> Store:
    """A redis-server of its own, keeping nothing on disk (as the machine's runs)."""
    work.mkdir(parents=True, exist_ok=True)
    redis = shutil.which("redis-server") or "redis-server"
    cli = shutil.which("redis-cli") or "redis-cli"
    start = (
        f"{shlex.quote(redis)} --bind 127.0.0.1 --port {port} --save '' --appendonly no "
        f"--dir {shlex.quote(str(work))} --logfile {shlex.quote(str(work / 'redis.log'))} &\n"
        f"until {shlex.quote(cli)} -p {port} ping >/dev/null 2>&1; do sleep 0.1; done\n"
    )
    return Store("redis", f"redis://127.0.0.1:{port}/0", start)


def private_postgres(port: int, work: Path, database: str, settings: dict[str, str] | None = None) -> Store:
    """A new PostgreSQL cluster of its own in `work` (initdb, trust on loopback, the server's default
    settings but for `settings`), with `database` created and owned by the postgres role."""
    bin_dir = postgres_bin()
    data = work / "pgdata"
    work.mkdir(parents=True, exist_ok=True)
    shutil.chown(work, POSTGRES_USER)
    run_as = f"runuser -u {POSTGRES_USER} --"
    # The postgres role must reach the folder: the bench's temporary folder is root's, mode 0700.
    work.parent.chmod(work.parent.stat().st_mode | 0o011)
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", POSTGRES_USER, "--no-sync"]
    subprocess.run(["runuser", "-u", POSTGRES_USER, "--", *initdb], check=True, capture_output=True)  # noqa: S603 S607
    q = shlex.quote
    options = " ".join(f"-c {q(f'{name}={value}')}" for name, value in (settings or {}).items())
    start = (
        f"{run_as} {q(str(bin_dir / 'postgres'))} -D {q(str(data))} -p {port} -k {q(str(work))} "
        f"-c listen_addresses=127.0.0.1 {options} >{q(str(work / 'postgres.log'))} 2>&1 &\n"
        f"until {q(str(bin_dir / 'pg_isready'))} -q -h 127.0.0.1 -p {port}; do sleep 0.1; done\n"
        f"{q(str(bin_dir / 'createdb'))} -h 127.0.0.1 -p {port} -U {POSTGRES_USER} {q(database)}\n"
    )
    return Store("postgresql", f"postgresql://{POSTGRES_USER}@127.0.0.1:{port}/{database}", start)


def start_with_store(
    store: Store, then: str, argv: list[str], env: dict, cwd: Path, log_path: Path
) -> subprocess.Popen:
    """Start `store`, run the shell line `then` (preparing a dataset, say), and `exec` `argv`: one
    process tree, in a process group of its own, whose root pid is the server's."""
    script = "set -e\n" + store.start + (then + "\n" if then else "") + "exec " + shlex.join(argv) + "\n"
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(  # noqa: S603 - our own script
        ["bash", "-c", script],  # noqa: S607 - bash, on PATH
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a target started by `start_with_store`: the server first, then its store."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # the store, still running in the group
