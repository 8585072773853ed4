"""The billing account and its ledger: loads, the starter credit, the posting job, plans,
refunds, adjustments and statements - each money change once, to the cent, audited."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from app.core.extensions import db
from app.models import ApiKey, ApiUsage, AuditEvent, BillingEntry
from app.services.billing import standing
from app.services.billing.ledger import BillingError, account_for, adjust, balance, debit_from_balance
from app.services.billing.payments import begin_load, charge, load_amount, refund, save_card, settle
from app.services.billing.plans import change_plan, prorated, renew_plans
from app.services.billing.posting import post_usage, run_daily
from app.services.billing.statements import csv_text, statement
from app.services.fees import Month
from app.services.payments import SavedCard
from app.store import store
from tests.factories import make_member
from tests.key_support import make_developer, make_key, opened_on

D = Decimal


def meter(key: ApiKey, day: date, calls: int) -> None:
    db.session.add(ApiUsage(key_id=key.id, day=day, count=calls))
    db.session.commit()


def ledger_of(owner) -> list[tuple[str, Decimal]]:
    account = account_for(owner)
    return [(e.kind, e.amount) for e in store().billing.entries(account.id)]


def loaded(owner, amount: str = "100") -> None:
    """A card saved (with the starter credit) and `amount` loaded, through the offline provider."""
    account = account_for(owner)
    save_card(account, SavedCard("offline_card_test", "Offline test card"))
    db.session.commit()
    payment = begin_load(account_for(owner), load_amount(amount))
    db.session.commit()
    settle(payment, charge(payment))
    db.session.commit()


def test_the_first_card_brings_the_starter_credit_once_and_a_load_credits_its_amount():
    dev = make_developer()
    loaded(dev, "25")
    save_card(account_for(dev), SavedCard("offline_card_second", "Another"))  # a second card: no second credit
    db.session.commit()
    assert ledger_of(dev) == [("starter", D("5.00")), ("load", D("25.00"))]
    assert balance(account_for(dev)) == D("30.00")
    actions = [e.action for e in db.session.scalars(db.select(AuditEvent).order_by(AuditEvent.id))]
    assert actions.count("billing.posted") == 2 and "billing.card_added" in actions


@pytest.mark.parametrize("text", ["9.99", "0", "-10", "10.001", "abc", "10001"])
def test_a_load_is_from_10_to_10000_to_the_cent(text):
    with pytest.raises(BillingError):
        load_amount(text)
    assert load_amount("10") == D("10") and load_amount("$500") == D("500")


def test_a_load_needs_a_card():
    with pytest.raises(BillingError, match="add a card"):
        begin_load(account_for(make_developer()), D("10"))


def test_a_success_reported_twice_credits_once_and_a_late_failure_changes_nothing():
    from app.services.billing.payments import failed, succeeded

    dev = make_developer()
    loaded(dev, "10")
    payment = store().billing.payments_of(account_for(dev).id)[0]
    succeeded(payment, payment.provider_ref, payment.amount_cents)
    failed(payment, payment.provider_ref, "declined")
    db.session.commit()
    assert store().billing.payment(payment.id).status == "succeeded"
    assert ledger_of(dev) == [("starter", D("5.00")), ("load", D("10.00"))]


def test_the_posting_job_posts_each_finished_day_once_band_by_band():
    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    other, _ = make_key(owner=dev, funded=False, name="Second")
    loaded(dev, "500")
    opened_on(dev, date(2026, 2, 1))
    meter(key, date(2026, 3, 1), 60_000)
    meter(other, date(2026, 3, 1), 50_000)  # crosses 100,000 on the same day
    meter(key, date(2026, 3, 2), 10)
    meter(key, date(2026, 3, 3), 99)  # "today": not posted yet
    first = post_usage(through=date(2026, 3, 3), since=date(2026, 3, 1))
    db.session.commit()
    again = post_usage(through=date(2026, 3, 3), since=date(2026, 3, 1))
    db.session.commit()
    assert first.lines == 4 and again.lines == 0 and first.amount == D("2700.20")
    usage = db.session.scalars(db.select(BillingEntry).where(BillingEntry.kind == "usage").order_by(BillingEntry.id))
    lines = [(e.day.day, e.band, e.calls, e.amount) for e in usage]
    # Day 1's 110,000 calls (keys in id order) cross the first band's edge: 100,000 at 0.025, 10,000 at 0.020.
    by_band = {(day, band): (sum(c for d, b, c, _ in lines if (d, b) == (day, band))) for day, band, _, _ in lines}
    assert by_band == {(1, 1): 100_000, (1, 2): 10_000, (2, 2): 10}
    assert sum(a for *_, a in lines) == -D("2700.20")
    assert balance(account_for(dev)) == D("505.00") - D("2700.20")
    assert [a.action for a in db.session.scalars(db.select(AuditEvent))].count("billing.usage_posted") == 1


def test_two_overlapping_runs_post_once(app):
    dev = make_developer()
    key, _ = make_key(owner=dev)
    meter(key, date(2026, 3, 1), 1_000)
    opened_on(dev, date(2026, 2, 1))
    errors: list[Exception] = []

    def run() -> None:
        with app.app_context():
            try:
                post_usage(through=date(2026, 3, 2), since=date(2026, 3, 1))
                db.session.commit()
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    db.session.expire_all()
    assert [k for k, _ in ledger_of(dev)].count("usage") == 1


def test_two_concurrent_debits_never_take_the_balance_below_zero(app):
    """Balance 100, two debits of 60 at once: the account's row lock makes the second wait for the
    first's commit, then see 40 and refuse."""
    dev = make_developer()
    adjust(account_for(dev), D("100"), "opening")
    db.session.commit()
    account = account_for(dev)
    barrier, outcomes = threading.Barrier(2), []

    def debit(n: int) -> None:
        with app.app_context():
            barrier.wait()
            try:
                debit_from_balance(account, "plan_fee", D("60"), f"test-debit:{n}", "test")
                db.session.commit()
                outcomes.append("debited")
            except BillingError:
                db.session.rollback()
                outcomes.append("refused")

    threads = [threading.Thread(target=debit, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["debited", "refused"]
    assert balance(account_for(dev)) == D("40.00")


def test_buying_a_plan_is_pro_rated_and_the_keys_follow_at_once():
    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    loaded(dev, "500")
    assert prorated(D("500"), date(2026, 11, 21)) == D("166.67")  # 10 of 30 days
    change_plan(account_for(dev), "build", actor=dev, today=date(2026, 11, 21))
    db.session.commit()
    db.session.expire_all()
    assert db.session.get(ApiKey, key.id).plan == "build"
    assert ledger_of(dev)[-1] == ("plan_fee", D("-166.67"))
    with pytest.raises(BillingError, match="load credits first"):  # 3000-500 pro-rated: 833.33 > 338.33
        change_plan(account_for(dev), "scale", today=date(2026, 11, 21))
    change_plan(account_for(dev), "payg", today=date(2026, 11, 22))  # cancelled: at the month's end
    db.session.commit()
    assert account_for(dev).plan == "build" and account_for(dev).next_plan == "payg"
    renew_plans(date(2026, 12, 1))
    db.session.commit()
    db.session.expire_all()
    assert account_for(dev).plan == "payg" and db.session.get(ApiKey, key.id).plan == "payg"
    assert [k for k, _ in ledger_of(dev)].count("plan_fee") == 1  # nothing drawn for December


def test_a_plan_renews_once_a_month_and_lapses_when_the_balance_is_short():
    dev = make_developer()
    make_key(owner=dev, funded=False)
    adjust(account_for(dev), D("1000"), "test")
    change_plan(account_for(dev), "build", today=date(2026, 11, 30))  # 1 of 30 days: 16.67
    db.session.commit()
    assert renew_plans(date(2026, 12, 1)) and renew_plans(date(2026, 12, 2)) == []
    db.session.commit()
    assert [a for k, a in ledger_of(dev) if k == "plan_fee"] == [D("-16.67"), D("-500.00")]
    renew_plans(date(2027, 1, 1))  # 483.33 left: not enough for January
    db.session.commit()
    assert account_for(dev).plan == "payg"


def test_refunds_go_back_to_the_card_once_and_never_beyond_the_payment_or_the_balance():
    dev = make_developer()
    loaded(dev, "100")
    payment = store().billing.payments_of(account_for(dev).id)[0]
    refund(payment, D("30"), memo="asked by mail")
    db.session.commit()
    with pytest.raises(BillingError, match="left to refund"):
        refund(store().billing.payment(payment.id), D("70.01"))
    assert ledger_of(dev)[-1] == ("refund", D("-30.00")) and balance(account_for(dev)) == D("75.00")
    assert store().billing.payment(payment.id).refunded_cents == 3000


def test_adjustments_need_a_reason_and_are_audited_with_their_actor():
    admin = make_member(role="admin")
    dev = make_developer()
    with pytest.raises(BillingError, match="reason"):
        adjust(account_for(dev), D("5"), " ")
    adjust(account_for(dev), D("-2.50"), "goodwill reversed", actor=admin)
    db.session.commit()
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "billing.posted"))
    assert event.actor_id == admin.id and event.detail["amount"] == "-2.50" and event.detail["kind"] == "adjustment"


def test_the_statement_reconciles_to_the_ledger_to_the_cent_across_month_ends():
    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    loaded(dev, "100")
    opened_on(dev, date(2026, 10, 1))
    meter(key, date(2026, 10, 31), 3)  # the month's last day: posted on November 1st
    meter(key, date(2026, 11, 1), 1)
    november = datetime(2026, 11, 1, 0, 5, tzinfo=UTC)
    db.session.execute(db.update(BillingEntry).values(posted_at=datetime(2026, 10, 15, tzinfo=UTC)))
    db.session.commit()
    from unittest import mock

    with mock.patch("app.services.billing.ledger.utcnow", return_value=november):
        post_usage(through=date(2026, 11, 2), since=date(2026, 10, 1))
    db.session.commit()
    october, nov = (
        statement(account_for(dev), Month(2026, 10)),
        statement(account_for(dev), Month(2026, 11)),
    )
    assert october.opening == D("0.00") and october.closing == D("105.00") and october.reconciles
    assert nov.opening == D("105.00") and nov.reconciles and nov.closing == balance(account_for(dev))
    assert [(e.day, e.calls, e.amount) for e in nov.usage] == [
        (date(2026, 10, 31), 3, D("-0.08")),
        (date(2026, 11, 1), 1, D("-0.03")),
    ]
    text = csv_text(nov)
    assert "opening balance" in text and "105.00" in text and "closing balance" in text and "104.89" in text


def test_the_statement_lists_the_sign_in_program_fees_of_the_owners_apps():
    from app.services.apps import register_app
    from app.services.registration import NewClient

    dev = make_developer()
    register_app(NewClient(name="Fee app", redirect_uris=["https://fee.example/cb"]), dev)
    db.session.commit()
    today = date.today()
    s = statement(account_for(dev), Month(today.year, today.month))
    assert [line.app_name for line in s.signin_fees] == ["Fee app"] and s.signin_total == D("99")
    assert "sign-in program fees due" in csv_text(s)


def test_calls_made_before_the_account_was_opened_are_never_billed():
    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    meter(key, date(2026, 3, 1), 500)  # before billing: no account yet
    assert post_usage(through=date(2026, 3, 2), since=date(2026, 3, 1)).lines == 0  # no account: skipped
    opened_on(dev, date(2026, 3, 2))
    meter(key, date(2026, 3, 2), 40)
    run = post_usage(through=date(2026, 3, 3), since=date(2026, 3, 1))
    db.session.commit()
    assert run.lines == 1 and run.amount == D("1.00") and ledger_of(dev) == [("usage", D("-1.00"))]


def test_standing_counts_unposted_calls_and_measures_the_ceiling():
    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    assert standing.compute(dev.id).exhausted  # no account, no credits
    adjust(account_for(dev), D("10"), "test")
    db.session.commit()
    today = date.today()
    meter(key, today, 400)  # 10.00 at 0.025, not posted yet
    now = standing.compute(dev.id, today)
    assert now.balance == D("10.00") and now.unposted == D("10.00") and now.exhausted
    assert now.ceiling == D("100") and now.month_spend == D("10.00")  # 10 x the minimum load
    account = store().billing.change(account_for(dev).id, {"enterprise": True})
    assert account.enterprise and not standing.compute(dev.id, today).exhausted
    assert standing.compute(dev.id, today).ceiling is None


def test_an_upgrade_costs_the_difference_pro_rated_and_a_downgrade_waits_for_the_month_end():
    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    adjust(account_for(dev), D("5000"), "test")
    change_plan(account_for(dev), "build", today=date(2026, 11, 21))
    change_plan(account_for(dev), "scale", today=date(2026, 11, 21))  # (3,000 - 500) x 10/30
    db.session.commit()
    assert [a for k, a in ledger_of(dev) if k == "plan_fee"] == [D("-166.67"), D("-833.33")]
    first, following = date(2026, 11, 1), date(2026, 12, 1)
    assert store().billing.plan_money(account_for(dev).id, first, following) == D("1000.00")  # 50,000 calls covered
    change_plan(account_for(dev), "build", today=date(2026, 11, 25))
    db.session.commit()
    db.session.expire_all()
    assert account_for(dev).plan == "scale" and db.session.get(ApiKey, key.id).plan == "scale"
    renew_plans(date(2026, 12, 1))
    db.session.commit()
    db.session.expire_all()
    assert account_for(dev).plan == "build" and db.session.get(ApiKey, key.id).plan == "build"
    assert [a for k, a in ledger_of(dev) if k == "plan_fee"][-1] == D("-500.00")
    assert run_daily(date(2026, 12, 2)).renewals == []  # the month is paid: nothing more
