"""The fee ledger across month boundaries, with time frozen (time-machine): 99 per app per
calendar month in which it is registered, first month in full, no pro-rating."""

import json
from datetime import UTC, datetime

import pytest
import time_machine

from app.core.extensions import db
from app.services.apps import delete_app, disable_app
from app.services.fees import MONTHLY_FEE, POLICY, FeeError, Month, ledger, month_report
from tests.factories import make_client, make_member


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def register(name: str, when: str, owner=None):
    with time_machine.travel(at(when), tick=False):
        client, _ = make_client(name=name, owner_id=owner.id if owner else None)
    return client


def months_of(report, client) -> list[str]:
    return sorted(line.month for line in report.lines if line.client_id == client.client_id)


@pytest.fixture
def history():
    """Four apps whose lives cross the January/February/March 2026 boundaries."""
    ana = make_member(email="ana@example.test", role="developer")
    bo = make_member(email="bo@example.test", role="developer")
    last_minute = register("Last minute", "2026-01-31T23:59:59", ana)  # January charged in full
    first_second = register("First second", "2026-02-01T00:00:00", ana)  # not in January
    short_lived = register("Short lived", "2026-01-15T12:00:00", bo)
    with time_machine.travel(at("2026-02-28T23:59:59"), tick=False):
        delete_app(short_lived, actor=None)  # charged for February, not for March
        db.session.commit()  # as the console and the CLI do
    at_midnight = register("Deleted at midnight", "2026-01-10T08:00:00", bo)
    with time_machine.travel(at("2026-02-01T00:00:00"), tick=False):
        delete_app(at_midnight, actor=None)  # gone the instant February began: not charged for it
        db.session.commit()  # as the console and the CLI do
    return {
        "ana": ana,
        "bo": bo,
        "last_minute": last_minute,
        "first_second": first_second,
        "short_lived": short_lived,
        "at_midnight": at_midnight,
    }


def test_month_boundaries(history):
    with time_machine.travel(at("2026-03-10T09:00:00"), tick=False):
        report = ledger(Month(2025, 12), Month(2026, 3))
    assert months_of(report, history["last_minute"]) == ["2026-01", "2026-02", "2026-03"]
    assert months_of(report, history["first_second"]) == ["2026-02", "2026-03"]
    assert months_of(report, history["short_lived"]) == ["2026-01", "2026-02"]
    assert months_of(report, history["at_midnight"]) == ["2026-01"]
    assert report.by_month == {
        "2025-12": 0,
        "2026-01": 3 * MONTHLY_FEE,
        "2026-02": 3 * MONTHLY_FEE,
        "2026-03": 2 * MONTHLY_FEE,
    }
    assert report.total == 8 * MONTHLY_FEE
    assert all(line.amount == 99 for line in report.lines)
    # Newest month first, and deleted apps stay in the history with their status.
    assert report.lines[0].month == "2026-03"
    assert {line.status for line in report.lines if line.client_id == history["short_lived"].client_id} == {"deleted"}


def test_totals_per_owner(history):
    with time_machine.travel(at("2026-03-10T09:00:00"), tick=False):
        report = ledger(Month(2026, 1), Month(2026, 3))
    owners = {o["owner_email"]: o for o in report.by_owner}
    assert owners["ana@example.test"] == {
        "owner_id": history["ana"].id,
        "owner_email": "ana@example.test",
        "apps": 2,
        "amount": 5 * MONTHLY_FEE,
    }
    assert owners["bo@example.test"]["apps"] == 2
    assert owners["bo@example.test"]["amount"] == 3 * MONTHLY_FEE


def test_one_owner_sees_only_their_apps(history):
    with time_machine.travel(at("2026-03-10T09:00:00"), tick=False):
        report = ledger(Month(2026, 1), Month(2026, 3), owner=history["bo"])
    assert {line.owner_email for line in report.lines} == {"bo@example.test"}
    assert report.total == 3 * MONTHLY_FEE


def test_current_month_charged_in_full_and_future_months_refused(history):
    with time_machine.travel(at("2026-02-03T00:00:00"), tick=False):
        report = ledger(Month(2026, 2), Month(2026, 6))  # clipped to the current month
        assert report.last == Month(2026, 2)
        assert report.by_month == {"2026-02": 3 * MONTHLY_FEE}
        with pytest.raises(FeeError, match="has not started yet"):
            month_report(Month(2026, 3))


def test_disabled_app_is_still_charged():
    with time_machine.travel(at("2026-04-20T10:00:00"), tick=False):
        client, _ = make_client(name="Paused")
        disable_app(client, actor=None)
        report = month_report(Month(2026, 4))
    assert [(line.client_id, line.status, line.amount) for line in report.lines] == [
        (client.client_id, "disabled", MONTHLY_FEE)
    ]


def test_year_boundary():
    client = register("New year", "2025-12-31T23:00:00")
    with time_machine.travel(at("2026-01-01T00:30:00"), tick=False):
        report = ledger(Month(2025, 11), Month(2026, 1))
    assert months_of(report, client) == ["2025-12", "2026-01"]
    assert report.by_month == {"2025-11": 0, "2025-12": 99, "2026-01": 99}


@pytest.mark.parametrize("text", ["2026-13", "2026-00", "26-01", "2026/01", "", "2026-1", "abcd-ef", "1969-12"])
def test_bad_months_are_refused(text):
    with pytest.raises(FeeError, match="YYYY-MM"):
        Month.parse(text)


def test_bad_ranges_are_refused():
    with time_machine.travel(at("2026-05-01T00:00:00"), tick=False):
        with pytest.raises(FeeError, match="after it ends"):
            ledger(Month(2026, 3), Month(2026, 1))
        with pytest.raises(FeeError, match="at most 36 months"):
            ledger(Month(2020, 1), Month(2026, 5))


def test_cli_report_json(app, history):
    runner = app.test_cli_runner()
    with time_machine.travel(at("2026-03-10T09:00:00"), tick=False):
        result = runner.invoke(args=["fees", "report", "--month", "2026-02", "--json"])
        human = runner.invoke(args=["fees", "report", "--month", "2026-02"])
        future = runner.invoke(args=["fees", "report", "--month", "2026-04"])
        bad = runner.invoke(args=["fees", "report", "--month", "Feb"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["from"] == data["to"] == "2026-02"
    assert data["total"] == 3 * MONTHLY_FEE
    assert data["policy"] == POLICY
    assert sorted(line["app_name"] for line in data["lines"]) == ["First second", "Last minute", "Short lived"]
    assert all(line["currency"] == "USD" and line["amount"] == 99 for line in data["lines"])
    assert data["total_by_month"] == {"2026-02": 297}
    assert human.exit_code == 0 and "Total: 297 USD" in human.output
    assert future.exit_code != 0 and "has not started yet" in future.output
    assert bad.exit_code != 0 and "YYYY-MM" in bad.output


def test_ledger_reads_rows_not_memory(history):
    """The ledger is derived from the stored history: a fresh session gives the same answer."""
    db.session.expire_all()
    with time_machine.travel(at("2026-03-10T09:00:00"), tick=False):
        assert ledger(Month(2026, 1), Month(2026, 3)).total == 8 * MONTHLY_FEE
