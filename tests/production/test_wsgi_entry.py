"""The WSGI entry point the server loads (`wsgi:app`): the app, with the long-lived objects loaded at
start frozen out of the cyclic garbage collector (no full-heap walk in the middle of a request)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, server_env

PROBE = "import gc, flask, wsgi; print(isinstance(wsgi.app, flask.Flask), gc.get_freeze_count())"


def test_entry_point_builds_the_app_and_freezes_what_it_loaded(settings):
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=server_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out[0] == "True"
    assert int(out[1]) > 50_000, out  # the app and its libraries: ~130k objects
