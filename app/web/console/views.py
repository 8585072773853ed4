"""Console pages for apps and fees. Thin: each reads a form, calls app.services.apps (which only
flushes) and commits once, the change with its audit row, before it answers."""

from __future__ import annotations

from datetime import timedelta

from flask import abort, flash, redirect, render_template, request, url_for

from app.core.extensions import db
from app.models import Consent, Role
from app.models.base import utcnow
from app.services.activity import activity
from app.services.apps import (
    NotAllowed,
    app_for,
    apps_page,
    delete_app,
    disable_app,
    edit_app,
    enable_app,
    find_app,
    may_enable,
    register_app,
    rotate_app_secret,
)
from app.services.audit import AuditFilter, audit_page, describe, who
from app.services.fees import CURRENCY, MONTHLY_FEE, POLICY, FeeError, Month, ledger
from app.services.members import MemberError, find_member
from app.services.registration import RegistrationError, registration_problems
from app.store import store
from app.web.charts import bar_chart
from app.web.console import once
from app.web.console.blueprint import bp, console_page, console_user, page_number
from app.web.console.forms import ActionForm, AppForm, DeleteForm, RotateSecretForm


def _form_page(form: AppForm, client=None, error: str | None = None, status: int = 200):
    return render_template(
        "console/app_form.html",
        form=form,
        client=client,
        error=error,
        is_admin=console_user().role == Role.ADMIN,
        fee=MONTHLY_FEE,
        currency=CURRENCY,
    ), status


def _refused(form: AppForm, client=None, problems: dict[str, list[str]] | None = None, other: str | None = None):
    """Every problem at once, each on its field: WTForms' own checks and the registration rules
    (a field WTForms already flagged keeps its own message), then a summary linking to each."""
    if problems is None:
        problems = registration_problems(
            _spec_from(form), client.is_public if client else form.client_type.data == "public"
        )
    for name, found in problems.items():
        field = form[name] if name in form else None  # noqa: SIM401 - a WTForms form has no get()
        if field is not None and not field.errors:
            field.errors = list(field.errors) + found
    return _form_page(form, client, error=other or "Check the fields marked below.", status=400)


def _spec_from(form: AppForm):
    """The registration asked for; the admin-only switches keep their defaults for developers."""
    spec = form.to_spec()
    if console_user().role != Role.ADMIN:
        spec.trusted, spec.require_pkce = False, True
    return spec


def _secret_page(client, secret: str, created: bool):
    return render_template(
        "console/secret.html", client=client, secret=secret, created=created, fee=MONTHLY_FEE, currency=CURRENCY
    )


def _already_done(client_id: str, what: str):
    """A repeated submission (a reload of the secret page): to the app, acting no second time."""
    flash(f"{what} Its secret was shown once and is not stored; if you did not copy it, rotate it.")
    return redirect(url_for("console.app_detail", client_id=client_id), 303)


@bp.get("", strict_slashes=False)
@console_page()
def apps():
    """Every app the user may see, deleted ones marked; search by name, client id (and, for admins,
    owner email); 25 a page."""
    q = (request.args.get("q") or "").strip()[:120]
    page = apps_page(console_user(), q, page_number())
    return render_template(
        "console/apps.html", page=page, q=q, fee=MONTHLY_FEE, currency=CURRENCY, action_form=ActionForm()
    )


@bp.route("/apps/new", methods=["GET", "POST"])
@console_page()
def register():
    form = AppForm()
    if request.method == "GET":
        return _form_page(form)
    if not form.validate_on_submit():
        return _refused(form)
    if done := once.already_done(form.submission.data):
        return _already_done(done, "This app is already registered: the form was sent twice.")
    spec = _spec_from(form)
    actor = console_user()
    spec.owner_id = actor.id
    if form.owner_email.data and actor.role == Role.ADMIN:
        try:
            owner = find_member(form.owner_email.data)
        except MemberError as exc:
            form.owner_email.errors = [f"{exc}."]
            return _refused(form, problems={})
        if owner.role == Role.MEMBER:
            form.owner_email.errors = [f"{owner.email} is not a developer."]
            return _refused(form, problems={})
        spec.owner_id = owner.id
    try:
        client, secret = register_app(spec, actor)
    except RegistrationError as exc:
        return _refused(form, problems=exc.fields, other=None if exc.fields else str(exc))
    db.session.commit()
    once.remember(form.submission.data, client.client_id)
    if secret is None:
        flash(
            f"{client.name} is registered ({MONTHLY_FEE} {CURRENCY} per month from this month on). Its client id "
            f"is {client.client_id}; a public app has no secret."
        )
        return redirect(url_for("console.app_detail", client_id=client.client_id))
    return _secret_page(client, secret, created=True)


@bp.get("/apps/<client_id>")
@console_page()
def app_detail(client_id: str):
    """A deleted app's page stays readable (it is in the ledger); its actions are gone."""
    client = app_for(console_user(), client_id, include_deleted=True)
    now = utcnow()
    live_tokens = store().tokens.live_count(client.id, now)
    consents = db.session.scalar(db.select(db.func.count(Consent.id)).where(Consent.client_id == client.id))
    events = audit_page(AuditFilter(client=client), size=10).items
    return render_template(
        "console/app_detail.html",
        client=client,
        live_tokens=live_tokens,
        consents=consents,
        events=events,
        act=activity(client.id, now),
        chart=bar_chart,
        action_form=ActionForm(),
        rotate_form=RotateSecretForm(),
        fee=MONTHLY_FEE,
        currency=CURRENCY,
        now=now,
        describe=describe,
        who=who,
        may_enable=may_enable(client, console_user()),
    )


@bp.route("/apps/<client_id>/edit", methods=["GET", "POST"])
@console_page()
def edit(client_id: str):
    client = app_for(console_user(), client_id)
    form = AppForm()
    if request.method == "GET":
        form.fill_from(client)
        return _form_page(form, client)
    if not form.validate_on_submit():
        return _refused(form, client)
    try:
        changed = edit_app(client, _spec_from(form), console_user())
    except RegistrationError as exc:
        return _refused(form, client, problems=exc.fields, other=None if exc.fields else str(exc))
    db.session.commit()
    flash(f"Saved: {', '.join(changed)}." if changed else "Nothing changed.")
    return redirect(url_for("console.app_detail", client_id=client.client_id))


@bp.post("/apps/<client_id>/rotate-secret")
@console_page()
def rotate(client_id: str):
    client = app_for(console_user(), client_id)
    form = RotateSecretForm()
    if not form.validate_on_submit():
        abort(400)
    if once.already_done(form.submission.data) == client.client_id:
        return _already_done(client.client_id, "The secret was already rotated: the form was sent twice.")
    grace = timedelta(seconds=int(form.grace.data))
    try:
        secret = rotate_app_secret(client, console_user(), grace or None)
    except RegistrationError as exc:
        flash(str(exc), "error")
        return redirect(url_for("console.app_detail", client_id=client.client_id))
    db.session.commit()
    once.remember(form.submission.data, client.client_id)
    return _secret_page(find_app(client.client_id), secret, created=False)  # as it now is (the grace period)


@bp.post("/apps/<client_id>/disable")
@console_page()
def disable(client_id: str):
    client = app_for(console_user(), client_id)
    changed = disable_app(client, console_user())
    db.session.commit()
    flash(
        f"{client.name} is disabled: sign-ins show an error page and its tokens are refused."
        if changed
        else f"{client.name} was already disabled."
    )
    return redirect(url_for("console.app_detail", client_id=client.client_id))


@bp.post("/apps/<client_id>/enable")
@console_page()
def enable(client_id: str):
    client = app_for(console_user(), client_id)
    try:
        changed = enable_app(client, console_user())
    except NotAllowed as refused:
        flash(str(refused), "error")
        return redirect(url_for("console.app_detail", client_id=client.client_id))
    db.session.commit()
    flash(f"{client.name} is enabled again." if changed else f"{client.name} was already enabled.")
    return redirect(url_for("console.app_detail", client_id=client.client_id))


@bp.route("/apps/<client_id>/delete", methods=["GET", "POST"])
@console_page()
def delete(client_id: str):
    client = app_for(console_user(), client_id)
    form = DeleteForm()
    if request.method == "GET":
        return render_template("console/delete.html", client=client, form=form)
    if not form.validate_on_submit():
        abort(400)
    if not form.names(client):
        form.confirm_name.errors.append(f"Type {client.name} exactly to delete it; nothing was deleted.")
        return render_template("console/delete.html", client=client, form=form), 400
    counts = delete_app(client, console_user())
    db.session.commit()
    flash(
        f"{client.name} is deleted: {counts['tokens_revoked']} tokens revoked, "
        f"{counts['consents_removed']} consents removed."
    )
    return redirect(url_for("console.apps"))


@bp.get("/fees")
@console_page()
def fees():
    """The ledger between two months (default: the last 12), one developer's apps or, for an
    admin, everyone's with a total per owner."""
    current = Month.of(utcnow())
    error = None
    try:
        last = Month.parse(request.args["to"]) if request.args.get("to") else current
        first = Month.parse(request.args["from"]) if request.args.get("from") else _months_back(last, 11)
        user = console_user()
        report = ledger(first, last, owner=None if user.role == Role.ADMIN else user)
    except FeeError as exc:
        error = str(exc)
        report = ledger(
            _months_back(current, 11), current, owner=None if console_user().role == Role.ADMIN else console_user()
        )
    return render_template(
        "console/fees.html", report=report, policy=POLICY, fee=MONTHLY_FEE, currency=CURRENCY, error=error
    ), (400 if error else 200)


def _months_back(month: Month, n: int) -> Month:
    for _ in range(n):
        month = month.previous
    return month
