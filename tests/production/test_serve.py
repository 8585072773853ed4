"""serve.py, the production server's launcher: granian's settings from the WEB_* variables, metrics
that start empty, and a worker that dies replaced instead of taking the server down."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from serve import (
    catalog_cpus,
    catalog_niceness,
    catalog_pool_bind,
    catalog_pool_options,
    fresh_metrics_dir,
    metrics_address,
    retired_settings,
    server_options,
    tool_server_bind,
    tool_server_options,
)
from tests.conftest import ROOT, free_port, server_env
from tests.key_support import key_header, make_key
from tests.production.servers import running


def test_metrics_bind_is_read_and_checked():
    assert metrics_address({}) is None
    assert metrics_address({"METRICS_BIND": "10.0.0.5:9464"}) == ("10.0.0.5", 9464)
    assert metrics_address({"METRICS_BIND": "[::1]:9464"}) == ("::1", 9464)
    assert metrics_address({"METRICS_BIND": "127.0.0.1:9464", "METRICS_ENABLED": "false"}) is None
    for bad in ("9464", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000"):
        with pytest.raises(SystemExit, match="METRICS_BIND must be host:port"):
            metrics_address({"METRICS_BIND": bad})


def test_settings_come_from_the_environment():
    options = server_options(
        {
            "WEB_BIND": "0.0.0.0:9000",
            "WEB_CONCURRENCY": "3",
            "WEB_THREADS": "6",
            "WEB_GRACEFUL_TIMEOUT": "12",
            "WEB_WORKERS_MAX_RSS": "512",
            "WEB_KEEPALIVE": "10",
            "LOG_LEVEL": "WARNING",
        }
    )
    assert (options["address"], options["port"]) == ("0.0.0.0", 9000)
    assert (options["workers"], options["blocking_threads"]) == (3, 6)
    assert options["workers_kill_timeout"] == 12 and options["workers_max_rss"] == 512
    assert options["log_level"].value == "warning"
    assert options["http1_settings"].header_read_timeout == 10_000  # milliseconds
    assert options["target"] == "wsgi:app" and options["respawn_failed_workers"] is True
    assert options["log_access"] is False  # the app writes the access line (path only)


def test_defaults_for_a_small_machine():
    options = server_options({})
    assert (options["address"], options["port"]) == ("127.0.0.1", 8000)
    assert options["workers"] == (os.cpu_count() or 1) and options["blocking_threads"] == 2
    assert options["workers_max_rss"] is None  # workers are not replaced for their memory unless asked
    assert options["http1_settings"].header_read_timeout == 30_000


def test_the_tool_server_is_granian_in_asgi_mode_on_its_own_port():
    assert tool_server_bind({}) == ("127.0.0.1", 8001)  # on by default, beside the provider
    for off in ("off", "", "false"):
        assert tool_server_bind({"MCP_BIND": off}) is None
    for bad in ("127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000"):
        with pytest.raises(SystemExit, match="MCP_BIND must be host:port"):
            tool_server_bind({"MCP_BIND": bad})
    options = tool_server_options({"MCP_BIND": "0.0.0.0:9001", "MCP_CONCURRENCY": "3", "WEB_GRACEFUL_TIMEOUT": "12"})
    assert (options["address"], options["port"], options["workers"]) == ("0.0.0.0", 9001, 3)
    assert options["target"] == "asgi:create_tool_server" and options["factory"] is True
    assert options["interface"].value == "asgi"
    assert options["workers_kill_timeout"] == 12 and options["log_access"] is False
    assert "blocking_threads" not in options
    assert tool_server_options({})["workers"] == (os.cpu_count() or 1)
    with pytest.raises(SystemExit, match="MCP_BIND is off"):
        tool_server_options({"MCP_BIND": "off"})


def test_a_keepalive_granian_cannot_take_stops_the_start():
    with pytest.raises(SystemExit, match="WEB_KEEPALIVE must be between 1 and 60"):
        server_options({"WEB_KEEPALIVE": "75"})


def test_an_ipv6_bind_address():
    options = server_options({"WEB_BIND": "[::1]:8443"})
    assert (options["address"], options["port"]) == ("::1", 8443)


def test_gunicorn_settings_that_no_longer_apply_are_named():
    lines = retired_settings({"WEB_TIMEOUT": "30", "WEB_MAX_REQUESTS": "1000", "WEB_THREADS": "4"})
    assert [line.split()[0] for line in lines] == ["WEB_TIMEOUT", "WEB_MAX_REQUESTS"]
    assert "WEB_WORKERS_MAX_RSS" in lines[1]
    assert retired_settings({"WEB_TIMEOUT": ""}) == []  # set but empty: nothing to say


def test_the_server_says_so_in_its_log_at_start(app, settings, tmp_path):
    with running(settings, tmp_path, WEB_TIMEOUT="30") as server:
        warnings = [line for line in server.log_lines() if line.get("logger") == "credits_id.serve"]
    assert [w["level"] for w in warnings] == ["WARNING"]
    assert warnings[0]["message"].startswith("WEB_TIMEOUT is set but no longer used")


def test_metrics_of_a_previous_run_are_cleared(tmp_path, monkeypatch):
    folder = tmp_path / "metrics"
    (folder / "old").mkdir(parents=True)
    (folder / "counter_123.db").write_bytes(b"stale")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    assert fresh_metrics_dir() == (folder, False)  # the operator's folder: emptied, not removed
    assert folder.is_dir() and not list(folder.iterdir())


def test_a_folder_of_its_own_when_none_is_set(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    folder, own = fresh_metrics_dir()
    try:
        assert own and folder.is_dir() and os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(folder)
    finally:
        folder.rmdir()


def _workers(main_pid: int) -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{main_pid}/task").iterdir():
        children |= {int(pid) for pid in (task / "children").read_text().split()}
    return children


def test_a_worker_that_dies_is_replaced(app, settings, tmp_path):
    with running(settings, tmp_path, workers=1, threads=2) as server:
        (worker,) = _workers(server.proc.pid)
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            replacement = _workers(server.proc.pid) - {worker}
            if replacement:
                try:
                    if requests.get(server("/healthz"), timeout=5).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
            time.sleep(0.2)
        else:
            raise AssertionError(f"no worker answered after the kill: {server.log_text()[-2000:]}")
        assert server.proc.poll() is None  # the server itself kept running
        assert "Unexpected exit from worker-1" in server.log_text()


def _get(sock) -> bytes:
    """One request on an open connection: the answer, or b"" when the server has closed it."""
    answer = b""
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        while b'"ok"' not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    except ConnectionError:
        pass
    return answer


def test_an_idle_keep_alive_connection_is_closed_after_web_keepalive(app, settings, tmp_path):
    with running(settings, tmp_path, WEB_KEEPALIVE="1") as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            assert _get(sock).startswith(b"HTTP/1.1 200")
            assert _get(sock).startswith(b"HTTP/1.1 200")  # kept alive between requests
            time.sleep(2.5)
            assert _get(sock) == b""  # closed by the server while idle


def test_the_start_warns_when_the_catalog_may_take_every_thread():
    from serve import catalog_thread_warning

    assert catalog_thread_warning({}) is None  # two threads, one catalog slot: one always free
    assert catalog_thread_warning({"WEB_THREADS": "4", "CATALOG_SEARCH_CONCURRENCY": "3"}) is None
    assert catalog_thread_warning({"CATALOG_SEARCH_CONCURRENCY": "0", "WEB_THREADS": "1"}) is None  # no limit asked for
    line = catalog_thread_warning({"WEB_THREADS": "1"})
    assert line is not None and "keep WEB_THREADS above CATALOG_SEARCH_CONCURRENCY" in line
    assert catalog_thread_warning({"WEB_THREADS": "2", "CATALOG_SEARCH_CONCURRENCY": "2"}) is not None


def test_the_catalog_pool_is_off_unless_asked_for():
    assert catalog_pool_bind({}) is None  # the provider's workers serve the catalog too
    for off in ("off", "", "no"):
        assert catalog_pool_bind({"CATALOG_BIND": off}) is None
    with pytest.raises(SystemExit, match="CATALOG_BIND must be host:port"):
        catalog_pool_bind({"CATALOG_BIND": "127.0.0.1:http"})
    options = catalog_pool_options({"CATALOG_BIND": "127.0.0.1:9002", "WEB_THREADS": "3"})
    assert (options["address"], options["port"], options["workers"]) == ("127.0.0.1", 9002, 1)
    assert options["target"] == "wsgi:app" and options["interface"].value == "wsgi"  # the same app
    assert options["blocking_threads"] == 3
    assert catalog_pool_options({"CATALOG_BIND": "127.0.0.1:9002", "CATALOG_CONCURRENCY": "2"})["workers"] == 2
    with pytest.raises(SystemExit, match="CATALOG_BIND is off"):
        catalog_pool_options({})
    assert catalog_niceness({}) == 10 and catalog_niceness({"CATALOG_NICE": "0"}) == 0
    for bad in ("20", "-1", "low"):
        with pytest.raises(SystemExit, match="CATALOG_NICE must be a whole number from 0 to 19"):
            catalog_niceness({"CATALOG_NICE": bad})


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")
def test_catalog_cpus_are_a_list_the_machine_can_honour_leaving_the_sign_in_some():
    allowed = os.sched_getaffinity(0)
    assert catalog_cpus({}) is None and catalog_cpus({"CATALOG_CPUS": " "}) is None
    if len(allowed) >= 2:
        first, *rest = sorted(allowed)
        assert catalog_cpus({"CATALOG_CPUS": str(first)}) == ({first}, set(rest))
        assert catalog_cpus({"CATALOG_CPUS": f"{first}-{first}, {first}"}) == ({first}, set(rest))
    for bad in ("one", "1-", "3-2", "-1", "1;2"):
        with pytest.raises(SystemExit, match="CATALOG_CPUS must list CPUs"):
            catalog_cpus({"CATALOG_CPUS": bad})
    for unusable in (",".join(map(str, sorted(allowed))), str(max(allowed) + 64)):  # every CPU, none there
        with pytest.raises(SystemExit, match="leave at least one to the sign-in"):
            catalog_cpus({"CATALOG_CPUS": unusable})


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to split"
)
def test_catalog_cpus_with_no_catalog_server_to_run_there_stop_the_start(settings):
    cpu = str(min(os.sched_getaffinity(0)))
    environment = server_env(settings, CATALOG_CPUS=cpu, CATALOG_BIND="off", MCP_BIND="off")
    done = subprocess.run(
        [sys.executable, "serve.py"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "neither CATALOG_BIND nor MCP_BIND starts a server there" in done.stderr


def _cpus_of(pid: int) -> set[frozenset[int]]:
    """The CPUs each thread of `pid` may run on."""
    return {frozenset(os.sched_getaffinity(int(tid))) for tid in os.listdir(f"/proc/{pid}/task")}


def _descendants(pid: int) -> set[int]:
    found = set()
    for child in _workers(pid):
        found |= {child} | _descendants(child)
    return found


def test_the_catalog_pool_serves_the_catalog_below_the_sign_ins_priority_on_cpus_of_its_own(app, settings, tmp_path):
    _, secret = make_key("secret")
    port = free_port()
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    pinned = {"CATALOG_CPUS": str(allowed[-1])} if len(allowed) >= 2 else {}  # CI's machine has two
    with running(settings, tmp_path, CATALOG_BIND=f"127.0.0.1:{port}", CATALOG_NICE="7", **pinned) as server:
        pool = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(pool + "/healthz", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, server.log_text()[-2000:]
            time.sleep(0.2)
        answer = requests.get(pool + "/v1/roles", headers=key_header(secret), timeout=10)
        assert answer.status_code == 200 and answer.json()["data"]  # the catalog, served by the pool
        assert requests.get(server("/v1/roles"), headers=key_header(secret), timeout=10).status_code == 200
        processes = _descendants(server.proc.pid)
        pool_side = {
            p for p in processes if "catalog" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
        }
        pool_side |= {d for p in pool_side for d in _descendants(p)}
        assert pool_side and processes - pool_side  # the pool's processes, and the provider's workers
        base = os.getpriority(os.PRIO_PROCESS, 0)  # this test's own (CI may run it niced)
        assert {os.getpriority(os.PRIO_PROCESS, p) for p in pool_side} == {min(19, base + 7)}  # workers inherit it
        assert {os.getpriority(os.PRIO_PROCESS, p) for p in processes - pool_side} == {base}
        assert any(line.get("message", "").startswith("catalog pool on") for line in server.log_lines())
        if pinned:  # every thread of the pool on the catalog's CPU; the provider, its workers, on the others
            catalog, sign_in = frozenset(allowed[-1:]), frozenset(allowed[:-1])
            assert set().union(*(_cpus_of(p) for p in pool_side)) == {catalog}
            assert set().union(*(_cpus_of(p) for p in processes - pool_side | {server.proc.pid})) == {sign_in}
            assert any(
                line.get("message", "")
                == f"catalog on CPUs {allowed[-1]}, sign-in on CPUs {','.join(map(str, allowed[:-1]))}"
                for line in server.log_lines()
            )
