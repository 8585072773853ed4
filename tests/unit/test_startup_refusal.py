"""A start-up refusal (issue 21, item 8): `flask` commands and serve.py print one line naming the
setting and exit non-zero, with no traceback for the operator to read through."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

LINE = "credits-id: SECRET_KEY must be set to a random value of at least 32 characters outside development"


def refused(*argv: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "APP_ENV", "ISSUER_URL"}}
    environ.update(
        {
            "APP_ENV": "production",
            "ISSUER_URL": "https://id.example.com",
            "FLASK_APP": "wsgi",
            "PYTHONPATH": str(ROOT),
            **env,
        }
    )
    return subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "argv",
    [
        ("-m", "flask", "db", "upgrade"),
        ("-m", "flask", "keys", "list"),
        ("serve.py",),
    ],
    ids=["flask-db-upgrade", "flask-keys-list", "serve"],
)
def test_missing_secret_key_is_one_line_and_a_non_zero_exit(argv):
    done = refused(sys.executable, *argv)
    assert done.returncode != 0
    assert done.stderr.strip() == LINE
    assert "Traceback" not in done.stderr + done.stdout


def test_every_refusal_names_its_setting():
    done = refused(
        sys.executable, "-m", "flask", "db", "upgrade", SECRET_KEY="s" * 40, ISSUER_URL="http://id.example.com"
    )
    assert done.returncode != 0
    assert done.stderr.strip() == (
        "credits-id: ISSUER_URL must use https unless it is a loopback host (127.0.0.1, localhost, [::1])"
    )


def test_the_demo_app_without_its_secret_is_one_line_too():
    done = refused(sys.executable, "-m", "examples.demo_app", DEMO_CLIENT_SECRET="")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("liner-notes demo: DEMO_CLIENT_SECRET is not set")
