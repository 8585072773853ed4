"""A streaming read replica of the local PostgreSQL cluster, started on given CPUs, for the catalog's
reads (CATALOG_DATABASE_URL, app/store/catalog_database.py) in bench.starvation: the catalog's
statements then run in the replica's processes, on the catalog's cores, not the sign-in's.

    with standby("1", database_url, 5433) as catalog_url:   # on CPU 1, port 5433; removed after
        ...

What it does, as an operator would by hand: `pg_basebackup -R` of the primary into a fresh folder
(the primary's whole cluster: 17 s for the full catalog's on the bench machine), a minimal configuration of its
own (the primary's may live outside its data folder, as Debian keeps it), then `pg_ctl start` as
the cluster's owner under `taskset`, so the postmaster and every backend it forks stay on those
CPUs. It needs to run as root (to start the server as its owner, `postgres`) on the machine of the
primary, and the primary to accept a replication connection from 127.0.0.1 - a pg_hba.conf line
such as `host replication all 127.0.0.1/32 trust` (a local benchmark machine; not a production
setting). Written here because it is benchmark scaffolding: production replicas are the
operator's, made with their own tools.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

OWNER = "postgres"
CONFIG = """\
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{folder}'
hot_standby = on
# The replica tells the primary which rows its queries still read, so the primary's vacuum does
# not remove them and cancel a search mid-way (a recovery conflict).
hot_standby_feedback = on
max_connections = 100
shared_buffers = 128MB
"""
HBA = "local all all trust\nhost all all 127.0.0.1/32 trust\n"


def postgres_bin(tool: str) -> str:
    """The server's own tools (`pg_ctl` is not on Debian's PATH), of the newest installed version."""
    found = shutil.which(tool)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        raise SystemExit(f"bench.replica: no {tool}: is PostgreSQL's server installed?")
    return str(versions[-1] / tool)


def as_owner(*command: str, cpus: str | None = None) -> list[str]:
    pinned = ["taskset", "-c", cpus] if cpus else []
    return ["runuser", "-u", OWNER, "--", *pinned, *command]


@contextmanager
def standby(cpus: str, database_url: str, port: int) -> Iterator[str]:
    """A replica of `database_url`'s cluster on `cpus`, listening on 127.0.0.1:`port`; yields the
    URL of the same database on it. Stopped and deleted when the block ends."""
    if os.geteuid() != 0:
        raise SystemExit("bench.replica: run as root (the replica is started as the cluster's owner, postgres)")
    primary = make_url(database_url)
    folder = Path(tempfile.mkdtemp(prefix="credits-bench-replica-"))
    owner = pwd.getpwnam(OWNER)
    os.chown(folder, owner.pw_uid, owner.pw_gid)
    folder.chmod(0o700)
    data = folder / "data"
    backup = [
        postgres_bin("pg_basebackup"),
        *("-h", primary.host or "127.0.0.1", "-p", str(primary.port or 5432), "-U", OWNER),
        *("-D", str(data), "-X", "stream", "-R", "-c", "fast"),
    ]
    started = False
    try:
        done = subprocess.run(as_owner(*backup), capture_output=True, text=True)  # noqa: S603 - fixed argv
        if done.returncode != 0:
            raise SystemExit(
                "bench.replica: pg_basebackup failed; the primary must accept a replication connection from "
                f"127.0.0.1 (pg_hba.conf: `host replication all 127.0.0.1/32 trust`, then reload):\n{done.stderr}"
            )
        (data / "postgresql.conf").write_text(CONFIG.format(port=port, folder=folder))
        (data / "pg_hba.conf").write_text(HBA)
        (data / "pg_ident.conf").write_text("")
        for name in ("postgresql.conf", "pg_hba.conf", "pg_ident.conf"):
            os.chown(data / name, owner.pw_uid, owner.pw_gid)
        start = [postgres_bin("pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "300", "start"]
        subprocess.run(as_owner(*start, cpus=cpus), check=True, capture_output=True)  # noqa: S603 - fixed argv
        started = True
        yield primary.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
    finally:
        if started:
            stop = as_owner(postgres_bin("pg_ctl"), "-D", str(data), "-m", "fast", "stop")
            subprocess.run(stop, capture_output=True)  # noqa: S603 - fixed argv
        shutil.rmtree(folder, ignore_errors=True)
