"""Console pages for API keys: the list with this month's usage and amount, create (the value is
shown once), a key's usage per day and its recent requests, rotate and revoke. Thin: each page
reads a form, calls app/services/apikeys.py and commits once."""

from __future__ import annotations

from datetime import date, timedelta

from flask import abort, current_app, flash, redirect, render_template, request, url_for

from app.core.extensions import db
from app.models import ApiKey
from app.services.apikeys import (
    ApiKeyError,
    KeyNotFound,
    edit_key,
    find_key,
    limits_of,
    revoke_key,
    rotate_key,
    visible_keys,
)
from app.services.apikeys import create_key as create_api_key
from app.services.billing.enterprise import terms_of
from app.services.billing.ledger import BillingError, account_for
from app.services.billing.plans import key_plan
from app.services.fees import FeeError, Month
from app.services.metering import BANDS, PLAN_FEES, PLAN_RATE, last_used, usage_for, utc_day
from app.web.api.widget_script import snippet as widget_snippet
from app.web.console import once
from app.web.console.blueprint import bp, console_page, console_user
from app.web.console.forms import ActionForm, ApiKeyForm, EditKeyForm, RotateKeyForm, lines
from app.web.key_activity import recent_requests


def _this_month() -> Month:
    today = utc_day()
    return Month(today.year, today.month)


def _key(key_id: str) -> ApiKey:
    try:
        return find_key(key_id, console_user())
    except KeyNotFound:
        abort(404)


def _list_page(form: ApiKeyForm, error: str | None = None, status: int = 200):
    keys = visible_keys(console_user())
    return render_template(
        "console/api_keys.html",
        form=form,
        error=error,
        usage=usage_for(keys),
        last_used=last_used(keys),
        month=_this_month(),
        bands=BANDS,
        plan_fees=PLAN_FEES,
        plan_rate=PLAN_RATE,
    ), status


def _value_page(key: ApiKey, value: str, created: bool):
    snippet = widget_snippet(value) if key.is_publishable else None
    return render_template("console/api_key_value.html", key=key, value=value, created=created, snippet=snippet)


def _field_of(message: str, form: ApiKeyForm):
    """The form field an ApiKeyError is about, so it is shown there too."""
    for word, field in (
        ("domain", form.domains),
        ("origin", form.domains),
        ("host", form.domains),
        ("name", form.name),
        ("kind", form.kind),
        ("plan", form.plan),
    ):
        if word in message:
            return field
    return None


@bp.get("/api-keys")
@console_page()
def api_keys():
    return _list_page(ApiKeyForm())


@bp.post("/api-keys")
@console_page()
def create_key():
    form = ApiKeyForm()
    if not form.validate_on_submit():
        return _list_page(form, error="Check the fields marked below.", status=400)
    if done := once.already_done(form.submission.data):
        flash(
            "This key was already created: the form was sent twice. Its value was shown once; "
            "if you did not copy it, rotate the key."
        )
        return redirect(url_for("console.api_key_detail", key_id=done), 303)
    user = console_user()
    try:
        plan = key_plan(account_for(user), form.plan.data)
    except BillingError as exc:
        form.plan.errors = [*form.plan.errors, f"{str(exc)[:1].upper()}{str(exc)[1:]}."]
        return _list_page(form, error=str(exc), status=400)
    try:
        key, value = create_api_key(
            user,
            form.name.data,
            form.kind.data,
            plan,
            lines(form.domains.data) if form.kind.data == "publishable" else [],
            actor=user,
        )
    except ApiKeyError as exc:  # checked before anything was written
        field = _field_of(str(exc), form)
        if field is not None:
            field.errors = [*field.errors, f"{str(exc)[:1].upper()}{str(exc)[1:]}."]
        return _list_page(form, error=str(exc), status=400)
    db.session.commit()
    once.remember(form.submission.data, key.id)
    return _value_page(key, value, created=True)


@bp.get("/api-keys/<key_id>")
@console_page()
def api_key_detail(key_id: str):
    key = _key(key_id)
    try:
        month = Month.parse(request.args["month"]) if request.args.get("month") else _this_month()
    except FeeError as exc:
        flash(str(exc), "error")
        month = _this_month()
    usage = usage_for([key], date(month.year, month.month, 1))[0]
    return render_template(
        "console/api_key_detail.html",
        key=key,
        usage=usage,
        month=month,
        last_used=last_used([key]).get(key.id),
        rotate_form=RotateKeyForm(),
        plan_fees=PLAN_FEES,
        terms=terms_of(key.owner_id),  # enterprise terms: custom limits, data storage
        limits=limits_of(key),
        recent=recent_requests(key),  # its newest requests, refusals included
        keep=current_app.config["KEY_ACTIVITY_KEEP"],
        keep_days=current_app.config["KEY_ACTIVITY_DAYS"],
        # The value was shown once: the snippet names the key by its visible start.
        snippet=widget_snippet(f"{key.prefix}…") if key.is_publishable and not key.is_revoked else None,
    )


@bp.post("/api-keys/<key_id>/rotate")
@console_page()
def rotate_api_key(key_id: str):
    key = _key(key_id)
    form = RotateKeyForm()
    if not form.validate_on_submit():
        abort(400)
    if once.already_done(form.submission.data) == key.id:
        flash(
            "The key was already rotated: the form was sent twice. Its new value was shown once; "
            "if you did not copy it, rotate it again."
        )
        return redirect(url_for("console.api_key_detail", key_id=key.id), 303)
    try:
        value = rotate_key(key, timedelta(seconds=int(form.grace.data)) or None, actor=console_user())
    except ApiKeyError as exc:  # checked before anything was written
        flash(str(exc), "error")
        return redirect(url_for("console.api_key_detail", key_id=key.id))
    db.session.commit()
    once.remember(form.submission.data, key.id)
    return _value_page(key, value, created=False)


@bp.route("/api-keys/<key_id>/revoke", methods=["GET", "POST"])
@console_page()
def revoke_api_key(key_id: str):
    """Revoking cannot be undone, so the button on the key's page leads here first: a page naming
    the key (its name, its visible start, when it was last used) and what revoking does, with the
    one form that revokes. A plain link and a form: no script needed."""
    key = _key(key_id)
    form = ActionForm()
    if request.method == "GET":
        return render_template(
            "console/api_key_revoke.html", key=key, form=form, last_used=last_used([key]).get(key.id)
        )
    if not form.validate_on_submit():
        abort(400)
    changed = revoke_key(key, actor=console_user())
    db.session.commit()
    flash(
        f"{key.name} is revoked: requests with it are refused from now on."
        if changed
        else f"{key.name} was already revoked."
    )
    return redirect(url_for("console.api_key_detail", key_id=key.id))


@bp.route("/api-keys/<key_id>/edit", methods=["GET", "POST"])
@console_page()
def edit_api_key(key_id: str):
    """Rename a key, or change the domains a publishable key works from (its value stays)."""
    key = _key(key_id)
    if key.is_revoked:
        flash(f"{key.name} is revoked: it cannot be changed.", "error")
        return redirect(url_for("console.api_key_detail", key_id=key.id))
    form = EditKeyForm()
    if request.method == "GET":
        form.name.data, form.domains.data = key.name, "\n".join(key.domains or [])
        return render_template("console/api_key_edit.html", key=key, form=form)
    if not form.validate_on_submit():
        if form.csrf_token.errors:
            abort(400)
        return render_template("console/api_key_edit.html", key=key, form=form), 400
    try:
        changed = edit_key(key, form.name.data, lines(form.domains.data), actor=console_user())
    except ApiKeyError as exc:  # checked before anything was written
        field = form.domains if any(w in str(exc) for w in ("domain", "host", "wildcard", "origin")) else form.name
        field.errors = [*field.errors, f"{str(exc)[:1].upper()}{str(exc)[1:]}."]
        return render_template("console/api_key_edit.html", key=key, form=form), 400
    db.session.commit()
    flash(f"Saved: {', '.join(changed)}." if changed else "Nothing changed.")
    return redirect(url_for("console.api_key_detail", key_id=key.id), 303)
