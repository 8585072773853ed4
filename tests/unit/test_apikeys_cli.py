"""`flask api-keys create|list|rotate|revoke|usage --json`: the same service and audit trail as the
console; values printed once, refusals as clean errors with nothing written."""

from __future__ import annotations

import json
from datetime import date

import pytest

from app.core.extensions import db
from app.models import ApiKey, AuditEvent, Role
from app.services.apikeys import live_key
from app.services.metering import meter_request, utc_day
from tests.factories import make_member


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(args=["api-keys", *args])


def run_json(cli, *args):
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_create_list_rotate_revoke(cli):
    dev = make_member(role=Role.DEVELOPER)
    created = run_json(cli, "create", "--owner", dev.email, "--name", "Server", "--plan", "build")
    assert created["key"].startswith("msk_") and created["plan"] == "build" and created["status"] == "active"
    assert live_key(created["key"]).id == created["id"]
    pub = run_json(
        cli,
        "create",
        "--owner",
        dev.email,
        "--name",
        "Widget",
        "--kind",
        "publishable",
        "--domain",
        "shop.example",
        "--domain",
        "https://blog.example",
    )
    assert pub["key"].startswith("mpk_") and pub["domains"] == ["shop.example", "blog.example"]

    listed = run_json(cli, "list", "--owner", dev.email)
    assert {row["id"] for row in listed} == {created["id"], pub["id"]}
    assert all("key" not in row and "secret_hash" not in row for row in listed)
    assert {row["month_amount"] for row in listed} == {"500.00", "0.00"}

    rotated = run_json(cli, "rotate", created["id"], "--grace", "3600")
    assert rotated["key"] != created["key"] and rotated["previous_valid_until"]
    assert live_key(created["key"]) is not None and live_key(rotated["key"]) is not None
    revoked = run_json(cli, "revoke", created["id"])
    assert revoked["changed"] is True and revoked["status"] == "revoked"
    assert live_key(rotated["key"]) is None and live_key(created["key"]) is None
    assert run_json(cli, "revoke", created["id"])["changed"] is False
    events = db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id)).all()
    assert [(e.action, e.source) for e in events] == [
        ("apikey.created", "cli"),
        ("apikey.created", "cli"),
        ("apikey.rotated", "cli"),
        ("apikey.revoked", "cli"),
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["create", "--owner", "nobody@example.test", "--name", "x"], "no member"),
        (["create", "--owner", "{member}", "--name", "x"], "only developers and admins"),
        (["create", "--owner", "{dev}", "--name", "x", "--kind", "publishable"], "at least one domain"),
        (["create", "--owner", "{dev}", "--name", "x", "--domain", "a.example"], "no domains"),
        (["rotate", "no-such-key"], "no API key"),
        (["revoke", "no-such-key"], "no API key"),
        (["usage", "no-such-key"], "no API key"),
    ],
)
def test_refusals_are_clean_errors_and_write_nothing(cli, args, message):
    dev, member = make_member(role=Role.DEVELOPER), make_member()
    args = [a.format(dev=dev.email, member=member.email) for a in args]
    result = cli(*args, "--json")
    assert result.exit_code != 0 and message in result.output
    assert db.session.scalar(db.select(db.func.count(ApiKey.id))) == 0


def test_usage_per_day_and_the_months_amount(cli):
    dev = make_member(role=Role.DEVELOPER)
    created = run_json(cli, "create", "--owner", dev.email, "--name", "Server")
    key = db.session.get(ApiKey, created["id"])
    for day in (date(2026, 10, 2), date(2026, 10, 2), date(2026, 10, 30), date(2026, 9, 30)):
        meter_request(key, day)
    meter_request(key, utc_day())
    db.session.commit()
    usage = run_json(cli, "usage", created["id"], "--month", "2026-10")
    assert usage["days"] == {"2026-10-02": 2, "2026-10-30": 1}
    assert usage["month_requests"] == 3 and usage["month_amount"] == "0.08"
    assert run_json(cli, "usage", created["id"])["month_requests"] >= 1
    assert cli("usage", created["id"], "--month", "2026-13").exit_code != 0
