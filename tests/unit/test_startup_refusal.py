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
            "SMTP_URL": "smtp://mail.example.com:587",
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


# -- issue 50, item 11: --help before any configuration, and every problem in one run -------------


@pytest.mark.parametrize("argv", [("--help",), ("users", "--help"), ("clients", "show", "--help"), ()])
def test_help_works_without_any_configuration(argv):
    done = refused(sys.executable, "-m", "flask", *argv, SMTP_URL="")
    assert done.returncode == (0 if argv else 2), done.stderr  # a bare `flask` is click's usage error, with the help
    assert "Usage: " in done.stdout + done.stderr and "Traceback" not in done.stderr
    if argv[:1] == ("users",):
        assert "list" in done.stdout and "show" in done.stdout
    # It says why a real command would stop, on stderr.
    assert "SECRET_KEY must be set" in done.stderr and "SMTP_URL must be set" in done.stderr


def test_every_configuration_problem_is_reported_in_one_run():
    done = refused(
        sys.executable,
        "-m",
        "flask",
        "users",
        "list",
        APP_ENV="prod",
        ACCESS_TOKEN_LIFETIME="an hour",
        ISSUER_URL="http://id.example.com",
        SMTP_URL="",
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "credits-id: 5 settings to fix:"
    assert lines[1:] == [
        "  - ACCESS_TOKEN_LIFETIME must be a whole number, got 'an hour'",
        "  - APP_ENV must be one of production, development, got 'prod'",
        "  - ISSUER_URL must use https unless it is a loopback host (127.0.0.1, localhost, [::1])",
        "  - SECRET_KEY must be set to a random value of at least 32 characters outside development",
        "  - SMTP_URL must be set outside development: password-reset and verification mails need it",
    ]


@pytest.mark.parametrize("value", ["prod", "dev", "test", "Development", ""])
def test_app_env_takes_only_its_documented_values(value):
    done = refused(sys.executable, "-m", "flask", "keys", "list", APP_ENV=value, SECRET_KEY="s" * 40)
    assert done.returncode != 0
    assert done.stderr.strip() == f"credits-id: APP_ENV must be one of production, development, got {value!r}"
