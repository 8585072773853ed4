"""The operator's `flask` commands as a terminal runs them (issue 50, item 11): each one a real
subprocess against its own SQLite database - `users list|show`, `clients show|update`, `--scope`
refusing unknown names, `keys revoke` checking the kid before it asks, `fees report` on this month
by default, and the monthly fee named when an app is registered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from tests.conftest import ROOT

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def flask(tmp_path_factory):
    home = tmp_path_factory.mktemp("operator")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "SECRET_KEY", "ISSUER_URL"))}
    environ.update(
        APP_ENV="development",
        FLASK_APP="wsgi",
        PYTHONPATH=str(ROOT),
        DATABASE_URL=f"sqlite:///{home / 'operator.sqlite3'}",
        KEYS_DIR=str(home / "keys"),
        MAIL_OUTBOX_DIR=str(home / "outbox"),
        SMTP_URL="",
        REDIS_URL="",
    )

    def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "flask", *args],
            cwd=ROOT,
            env=environ,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in done.stderr, done.stderr
        if check:
            assert done.returncode == 0, done.stderr
        return done

    run("db", "upgrade")
    run("keys", "ensure")
    run(
        "users",
        "create",
        "--email",
        "ada@example.test",
        "--name",
        "Ada Admin",
        "--admin",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    run(
        "users",
        "create",
        "--email",
        "bo@example.test",
        "--name",
        "Bo Member",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    return run


def test_users_list_and_show(flask):
    listed = flask("users", "list").stdout
    assert "ada@example.test" in listed and "admin" in listed and "bo@example.test" in listed
    only_admins = json.loads(flask("users", "list", "--role", "admin", "--json").stdout)
    assert [u["email"] for u in only_admins] == ["ada@example.test"]
    assert flask("users", "list", "--search", "nobody").stdout.strip() == "no members match"

    shown = flask("users", "show", "bo@example.test").stdout
    assert "Bo Member <bo@example.test> (not verified)" in shown
    assert "two-step sign-in: off" in shown and "last sign-in: never" in shown and "Member created" in shown
    data = json.loads(flask("users", "show", "bo@example.test", "--json").stdout)
    assert data["email_verified"] is False and data["sessions"] == [] and data["api_keys"] == []
    missing = flask("users", "show", "nobody@example.test", check=False)
    assert missing.returncode == 1 and "nobody@example.test" in missing.stderr


def test_clients_create_names_the_fee_then_show_and_update(flask):
    created = flask(
        "clients",
        "create",
        "--name",
        "Liner Notes",
        "--redirect-uri",
        "https://app.example.com/cb",
        "--client-id",
        "liner",
    ).stdout
    assert "The registration fee is 99 USD a month" in created
    as_json = json.loads(
        flask("clients", "create", "--name", "Other", "--redirect-uri", "https://o.example.com/cb", "--json").stdout
    )
    assert as_json["monthly_fee"] == 99 and as_json["currency"] == "USD"

    shown = flask("clients", "show", "liner").stdout
    assert "name: Liner Notes" in shown and "  https://app.example.com/cb" in shown and "monthly_fee: 99" in shown
    assert "client_secret:" not in shown  # not stored, so never shown

    updated = json.loads(
        flask(
            "clients",
            "update",
            "liner",
            "--name",
            "Liner Notes 2",
            "--redirect-uri",
            "https://app.example.com/cb2",
            "--redirect-uri",
            "https://app.example.com/cb3",
            "--scope",
            "openid email",
            "--json",
        ).stdout
    )
    assert updated["name"] == "Liner Notes 2"
    assert updated["redirect_uris"] == ["https://app.example.com/cb2", "https://app.example.com/cb3"]
    assert updated["scope"] == "openid email" and set(updated["changed"]) >= {"name", "redirect_uris", "allowed_scopes"}
    assert flask("clients", "update", "liner", "--name", "Liner Notes 2").stdout.strip() == "liner: nothing changed"
    refused = flask("clients", "update", "liner", "--redirect-uri", "http://evil.example.com/cb", check=False)
    assert refused.returncode == 1 and "http" in refused.stderr
    assert (
        json.loads(flask("clients", "show", "liner", "--json").stdout)["redirect_uris"][0]
        == "https://app.example.com/cb2"
    )
    nothing = flask("clients", "update", "liner", check=False)
    assert nothing.returncode == 1 and "nothing to change" in nothing.stderr
    assert flask("clients", "show", "no-such-app", check=False).returncode == 1


@pytest.mark.parametrize(
    "command",
    [("clients", "create", "--name", "X", "--redirect-uri", "https://x.example/cb"), ("clients", "update", "liner")],
)
def test_scope_refuses_unknown_scopes_by_name(flask, command):
    done = flask(*command, "--scope", "openid emial credits:write", check=False)
    assert done.returncode == 2
    assert "unknown scopes 'emial', 'credits:write'" in done.stderr and "openid profile email" in done.stderr


def test_keys_revoke_checks_the_kid_before_asking(flask):
    typo = flask("keys", "revoke", "no-such-kid", check=False, stdin="")
    assert typo.returncode == 1 and "no key with kid no-such-kid" in typo.stderr and "Unpublish" not in typo.stdout
    [only] = json.loads(flask("keys", "list", "--json").stdout)
    # "--" ends the options: a kid (an RFC 7638 thumbprint, base64url) may start with "-"
    alone = flask("keys", "revoke", "--", only["kid"], check=False, stdin="")
    assert alone.returncode == 1 and "only signing key" in alone.stderr and "Unpublish" not in alone.stdout


def test_fees_report_defaults_to_this_month(flask):
    today = datetime.now(UTC)
    report = json.loads(flask("fees", "report", "--json").stdout)
    assert report["from"] == f"{today:%Y-%m}"
    human = flask("fees", "report").stdout
    assert human.startswith(f"Fees for {today:%Y-%m} ") and "Total:" in human
    bad = flask("fees", "report", "--month", "2026-13", check=False)
    assert bad.returncode == 1
