"""Console pages for billing: a developer's account (balance, card, loading credits, plans, the
spend ceiling, statements), and the admins' view of every account (adjustments, enterprise terms,
each key's custom limits). Thin: each page reads a form, calls app/services/billing/ and commits
once - a load twice, around the provider's call (app/services/billing/payments.py says why)."""

from __future__ import annotations

from datetime import date

from flask import Response, abort, flash, redirect, render_template, request, url_for

from app.core.extensions import db
from app.models import Role, User
from app.services.apikeys import KeyNotFound, find_key
from app.services.billing import enterprise, standing
from app.services.billing.ledger import KINDS, BillingError, account_for, adjust, find_account, parse_amount
from app.services.billing.payments import (
    MIN_LOAD,
    PRESETS,
    STARTER_CREDIT,
    begin_load,
    charge,
    load_amount,
    save_card,
    settle,
    start_card_setup,
)
from app.services.billing.plans import NAMES, change_plan, fee, upgrade_price
from app.services.billing.statements import BAND_NAMES, csv_text, statement
from app.services.fees import FeeError, Month
from app.services.metering import PLAN_FEES, utc_day
from app.services.payments import PaymentError, payment_provider
from app.services.payments.offline import OFFLINE_TOKEN
from app.store import store
from app.store.billing import Account
from app.web.console import once
from app.web.console.blueprint import bp, console_page, console_user
from app.web.console.forms import ActionForm, AdjustForm, EnterpriseForm, KeyLimitsForm, LoadForm, PlanForm


def _month_of_today() -> Month:
    today = utc_day()
    return Month(today.year, today.month)


def _statement_months(account: Account) -> list[Month]:
    first, last = Month.of(account.created_at), _month_of_today()
    months = [last]
    while months[-1] > first and len(months) < 24:
        months.append(months[-1].previous)
    return months


def _account_page(account: Account, load_form: LoadForm | None = None, status: int = 200, error: str | None = None):
    billing = store().billing
    today = utc_day()
    return render_template(
        "console/billing.html",
        account=account,
        standing=standing.compute(account.owner_id),
        entries=list(reversed(billing.entries(account.id)))[:30],
        payments=billing.payments_of(account.id, 10),
        provider=payment_provider(),
        load_form=load_form or LoadForm(),
        plan_form=PlanForm(),
        action_form=ActionForm(),
        presets=PRESETS,
        min_load=MIN_LOAD,
        starter=STARTER_CREDIT,
        plans=[(plan, NAMES[plan], fee(plan), PLAN_FEES[plan][1]) for plan in PLAN_FEES],
        upgrade_prices={plan: upgrade_price(account, plan, today) for plan in PLAN_FEES},
        names=NAMES,
        kinds=KINDS,
        is_admin=console_user().role == Role.ADMIN,
        months=_statement_months(account),
        admin_view=console_user().role == Role.ADMIN and account.owner_id != console_user().id,
        error=error,
    ), status


@bp.get("/billing")
@console_page()
def billing():
    account = account_for(console_user())
    db.session.commit()  # the account is opened at the first visit
    return _account_page(account)


@bp.post("/billing/card")
@console_page()
def billing_card():
    if not ActionForm().validate_on_submit():
        abort(400)
    account = account_for(console_user())
    try:
        target = start_card_setup(account, console_user(), url_for("console.billing_card_return", _external=True))
    except PaymentError as exc:
        flash(str(exc), "error")
        return redirect(url_for("console.billing"), 303)
    db.session.commit()
    return redirect(target, 303)


@bp.get("/billing/card/return")
@console_page()
def billing_card_return():
    """Back from the provider's card page: save the card if it was saved there (the webhook says
    the same later; whichever comes first saves it)."""
    account = account_for(console_user())
    token = (request.args.get("setup") or "")[:200]
    card = payment_provider().finish_card_setup(account.id, token) if token else None
    if card is None:
        flash("No card was saved.", "error")
        return redirect(url_for("console.billing"), 303)
    starter = save_card(account, card, actor=console_user())
    db.session.commit()
    flash(f"{card.label} is saved." + (f" {starter.amount} USD of starter credit added." if starter.new else ""))
    return redirect(url_for("console.billing"), 303)


@bp.route("/billing/card/offline", methods=["GET", "POST"])
@console_page()
def billing_offline_card():
    """The offline provider's stand-in for a card page: plainly not a real one."""
    provider = payment_provider()
    if provider.live:
        abort(404)
    form = ActionForm()
    if request.method == "POST":
        if not form.validate_on_submit():
            abort(400)
        account = account_for(console_user())
        card = provider.finish_card_setup(account.id, OFFLINE_TOKEN)
        assert card is not None
        starter = save_card(account, card, actor=console_user())
        db.session.commit()
        flash(
            "The offline test card is saved."
            + (f" {starter.amount} USD of starter credit added." if starter.new else "")
        )
        return redirect(url_for("console.billing"), 303)
    return render_template("console/billing_offline_card.html", form=form, provider=provider, starter=STARTER_CREDIT)


@bp.post("/billing/load")
@console_page()
def billing_load():
    form = LoadForm()
    account = account_for(console_user())
    if not form.validate_on_submit():
        return _account_page(account, form, 400, error="Choose or type an amount to load.")
    if once.already_done(form.submission.data):
        flash("These credits were already loaded: the form was sent twice.")
        return redirect(url_for("console.billing"), 303)
    try:
        payment = begin_load(account, load_amount(form.amount.data))
    except BillingError as exc:
        message = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
        form.amount.errors = [*form.amount.errors, message]
        return _account_page(account, form, 400, error=message)
    db.session.commit()  # the pending payment first: a webhook may beat the provider's answer
    once.remember(form.submission.data, payment.id)
    outcome = charge(payment)
    settled = settle(payment, outcome)
    db.session.commit()
    if settled.status == "succeeded":
        flash(f"{settled.amount_cents / 100:.2f} USD of credits loaded.")
    elif settled.status == "failed":
        flash(f"The card was not charged: {outcome.message or 'the payment failed'}", "error")
    else:
        flash("The payment is being processed: the credits appear when it succeeds.")
    return redirect(url_for("console.billing"), 303)


@bp.post("/billing/plan")
@console_page()
def billing_plan():
    form = PlanForm()
    if not form.validate_on_submit():
        abort(400)
    account = account_for(console_user())
    try:
        changed = change_plan(account, form.plan.data, actor=console_user())
    except BillingError as exc:
        flash(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", "error")
        return redirect(url_for("console.billing"), 303)
    db.session.commit()
    if changed.next_plan:
        flash(f"{NAMES[changed.plan]} stays until the month ends; then {NAMES[changed.next_plan]}.")
    else:
        flash(f"You are on {NAMES[changed.plan]}: your keys' limits changed now.")
    return redirect(url_for("console.billing"), 303)


def _statement(account: Account, month_text: str, as_csv: bool):
    try:
        month = Month.parse(month_text)
        found = statement(account, month)
    except FeeError as exc:
        flash(str(exc), "error")
        return redirect(url_for("console.billing"), 303)
    if as_csv:
        return Response(
            csv_text(found),
            mimetype="text/csv",
            headers={"Content-Disposition": f'attachment; filename="credits-id-statement-{month}.csv"'},
        )
    return render_template("console/billing_statement.html", s=found, names=NAMES, band_names=BAND_NAMES, kinds=KINDS)


@bp.get("/billing/statements/<month_text>")
@console_page()
def billing_statement(month_text: str):
    return _statement(account_for(console_user()), month_text, False)


@bp.get("/billing/statements/<month_text>.csv")
@console_page()
def billing_statement_csv(month_text: str):
    return _statement(account_for(console_user()), month_text, True)


# -- admins -----------------------------------------------------------------------------------------


def _admin_account(account_id: str) -> Account:
    try:
        return find_account(account_id)
    except BillingError:
        abort(404)


@bp.get("/billing/accounts")
@console_page(admin=True)
def billing_accounts():
    return render_template("console/billing_accounts.html", lines=store().billing.with_owners(), names=NAMES)


def _admin_page(account: Account, adjust_form=None, terms_form=None, status: int = 200):
    billing = store().billing
    terms = terms_form or EnterpriseForm(
        enterprise=account.enterprise,
        storage_allowed=account.storage_allowed,
        terms_until=account.terms_until.isoformat() if account.terms_until else "",
        note=account.terms_note or "",
    )
    keys = store().api_keys.console_keys(account.owner_id)
    return render_template(
        "console/billing_account.html",
        account=account,
        owner=db.session.get(User, account.owner_id),
        standing=standing.compute(account.owner_id),
        entries=list(reversed(billing.entries(account.id))),
        payments=billing.payments_of(account.id, 50),
        adjust_form=adjust_form or AdjustForm(),
        terms_form=terms,
        limits_form=KeyLimitsForm(),
        keys=keys,
        months=_statement_months(account),
        names=NAMES,
        kinds=KINDS,
    ), status


@bp.get("/billing/accounts/<account_id>")
@console_page(admin=True)
def billing_account(account_id: str):
    return _admin_page(_admin_account(account_id))


@bp.post("/billing/accounts/<account_id>/adjust")
@console_page(admin=True)
def billing_adjust(account_id: str):
    account = _admin_account(account_id)
    form = AdjustForm()
    if not form.validate_on_submit():
        return _admin_page(account, adjust_form=form, status=400)
    try:
        posted = adjust(account, parse_amount(form.amount.data, positive=False), form.memo.data, actor=console_user())
    except BillingError as exc:
        form.amount.errors = [*form.amount.errors, f"{str(exc)[:1].upper()}{str(exc)[1:]}."]
        return _admin_page(account, adjust_form=form, status=400)
    db.session.commit()
    flash(f"Adjustment of {posted.amount} USD posted.")
    return redirect(url_for("console.billing_account", account_id=account.id), 303)


@bp.post("/billing/accounts/<account_id>/enterprise")
@console_page(admin=True)
def billing_enterprise(account_id: str):
    account = _admin_account(account_id)
    form = EnterpriseForm()
    if not form.validate_on_submit():
        return _admin_page(account, terms_form=form, status=400)
    try:
        until = date.fromisoformat(form.terms_until.data) if form.terms_until.data else None
        enterprise.set_terms(
            account, form.enterprise.data, form.storage_allowed.data, until, form.note.data or "", actor=console_user()
        )
    except ValueError as exc:  # BillingError is a ValueError, and so is a date that is not one
        form.terms_until.errors = [*form.terms_until.errors, f"{str(exc)[:1].upper()}{str(exc)[1:]}."]
        return _admin_page(account, terms_form=form, status=400)
    db.session.commit()
    flash("Enterprise terms saved." if form.enterprise.data else "The account is on standard terms.")
    return redirect(url_for("console.billing_account", account_id=account.id), 303)


@bp.post("/billing/keys/<key_id>/limits")
@console_page(admin=True)
def billing_key_limits(key_id: str):
    try:
        key = find_key(key_id, console_user())
    except KeyNotFound:
        abort(404)
    form = KeyLimitsForm()
    if not form.validate_on_submit():
        abort(400)
    account = account_for(key.owner_id)
    try:
        per_minute = int(form.per_minute.data) if form.per_minute.data else None
        per_second = int(form.per_second.data) if form.per_second.data else None
        enterprise.set_key_limits(key, per_minute, per_second, actor=console_user())
    except ValueError as exc:
        flash(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", "error")
        return redirect(url_for("console.billing_account", account_id=account.id), 303)
    db.session.commit()
    flash(f"Limits of {key.name} saved: they apply from its next request.")
    return redirect(url_for("console.billing_account", account_id=account.id), 303)


@bp.get("/billing/accounts/<account_id>/statements/<month_text>")
@console_page(admin=True)
def billing_account_statement(account_id: str, month_text: str):
    return _statement(_admin_account(account_id), month_text, False)


@bp.get("/billing/accounts/<account_id>/statements/<month_text>.csv")
@console_page(admin=True)
def billing_account_statement_csv(account_id: str, month_text: str):
    return _statement(_admin_account(account_id), month_text, True)
