"""Console pages for the audit log (admins; developers see their own apps' events), signing
keys and members (admins only). Each page that changes something calls the services (which only
flush), commits once, and only then mails or says what it did."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flask import abort, flash, redirect, render_template, request, url_for
from sqlalchemy import select

from app.core.extensions import db
from app.models import Role, Tier, User
from app.models.base import utcnow
from app.protocol.jwks import KeyStoreError, keystore
from app.services.activity import DAYS, SIGN_IN, activity
from app.services.audit import ACTIONS, AuditFilter, audit_page, describe, origin, record, who
from app.services.mail import send_later
from app.services.member_overview import member_overview
from app.services.members import MemberError, create_member, set_role, set_tier, suspend_member, unsuspend_member
from app.services.verification import invite
from app.store import store
from app.web.charts import bar_chart
from app.web.console.blueprint import bp, console_page, console_user, page_number
from app.web.console.forms import ActionForm, InviteForm, MemberForm, SuspendForm

USERS_PAGE_SIZE = 50


MATCH_LIMIT = 500  # a search naming more apps or members than this is too broad to be useful


def _day(raw: str, label: str) -> datetime:
    try:
        return datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{label} must be a date such as 2026-11-24, got {raw!r}") from None


def _matching_apps(user: User, text: str) -> tuple[int, ...]:
    """Apps `user` may see whose client id is `text`, or whose name or client id contains it."""
    return store().apps.matching_ids(text, owner_id=None if user.role == Role.ADMIN else user.id, limit=MATCH_LIMIT)


def _matching_members(text: str) -> tuple[str, ...]:
    email = User.normalize_email(text)[:254]
    return tuple(
        db.session.scalars(select(User.id).where(User.email.contains(email, autoescape=True)).limit(MATCH_LIMIT))
    )


@bp.get("/audit")
@console_page()
def audit():
    """Newest first, 50 a page; filter by app (part of its name or client id), by member (part of
    the email; admins only), by event type, and by a range of days (UTC)."""
    user = console_user()
    args = {name: (request.args.get(name) or "").strip()[:254] for name in ("app", "member", "action", "from", "to")}
    error = None
    found: dict = {}
    if args["app"]:
        found["client_ids"] = _matching_apps(user, args["app"])
        if not found["client_ids"]:
            error = f"No application of yours has the client id {args['app']!r} or a name containing it."
    if args["member"] and error is None:
        if user.role != Role.ADMIN:
            # Developers see no member's identity in the log, so they may not search by one (an
            # answer would also tell them whether an email has an account).
            error = "Only administrators can filter by member."
        else:
            found["member_ids"] = _matching_members(args["member"])
            if not found["member_ids"]:
                error = f"No member has the email {args['member']!r} or one containing it."
    if args["action"] and error is None:
        if args["action"] not in ACTIONS:
            error = f"Unknown event type {args['action']!r}."
        else:
            found["action"] = args["action"]
    try:
        if args["from"]:
            found["since"] = _day(args["from"], "From")
        if args["to"]:
            found["until"] = _day(args["to"], "To") + timedelta(days=1)  # the whole last day
    except ValueError as exc:
        error = error or str(exc)
    if error is None and found.get("since") and found.get("until") and found["since"] >= found["until"]:
        error = "The range starts after it ends."
    context = {"filters": args, "actions": ACTIONS, "describe": describe, "who": who, "origin": origin}
    if error:
        return render_template("console/audit.html", page=None, error=error, **context), 400
    owner = None if user.role == Role.ADMIN else user
    page = audit_page(AuditFilter(owner=owner, **found), page_number())
    return render_template("console/audit.html", page=page, error=None, **context)


@bp.get("/activity")
@console_page(admin=True)
def activity_overview():
    """The provider's sign-ins, consents and active members per day, and the busiest apps."""
    since = utcnow() - timedelta(days=DAYS)
    top_apps = store().apps.busiest(SIGN_IN, since, limit=10)
    return render_template("console/activity.html", act=activity(), chart=bar_chart, top_apps=top_apps)


@bp.get("/keys")
@console_page(admin=True)
def keys():
    keys = [{**k, "can_retire": _retire_refusal(k) is None} for k in keystore.describe()]
    pending = next((k for k in keys if k["state"] == "next"), None)
    return render_template(
        "console/keys.html", keys=keys, pending=pending, form=ActionForm(), publish_delay=keystore.publish_delay
    )


@bp.get("/keys/rotate")
@console_page(admin=True)
def confirm_rotate_key():
    """A step before rotating: what will happen, and a button that does it (no script needed)."""
    keys = keystore.describe()
    pending = next((k for k in keys if k["state"] == "next"), None)
    return render_template(
        "console/key_confirm.html",
        action="rotate",
        key=None,
        pending=pending,
        form=ActionForm(),
        publish_delay=keystore.publish_delay,
    )


@bp.get("/keys/<kid>/retire")
@console_page(admin=True)
def confirm_retire_key(kid: str):
    key = next((k for k in keystore.describe() if k["kid"] == kid), None)
    if key is None:
        abort(404)
    return render_template(
        "console/key_confirm.html",
        action="retire",
        key=key,
        refusal=_retire_refusal(key),
        form=ActionForm(),
        publish_delay=keystore.publish_delay,
    )


@bp.post("/keys/rotate")
@console_page(admin=True)
def rotate_key():
    """Publish a new key now; it signs after KEY_PUBLISH_DELAY, when the current one retires
    (it stays published until every ID token it signed has expired)."""
    try:
        row = keystore.rotate(actor=console_user())
    except KeyStoreError as exc:
        flash(f"Not rotated: {exc}.", "error")
        return redirect(url_for("console.keys"))
    db.session.commit()
    flash(f"New key {row.kid} is published and signs from {row.activates_at.isoformat()}.")
    return redirect(url_for("console.keys"))


@bp.post("/keys/<kid>/retire")
@console_page(admin=True)
def retire_key(kid: str):
    """Stop signing with a key that can sign now. A key still waiting to sign ("next") is not
    retired here: the key it replaces is already set to retire when it starts, so retiring it
    would leave nothing to sign with."""
    key = next((k for k in keystore.describe() if k["kid"] == kid), None)
    reason = "no such key" if key is None else _retire_refusal(key)
    if reason:
        flash(f"Not retired: {reason}.", "error")
        return redirect(url_for("console.keys"))
    try:
        row = keystore.retire(kid, actor=console_user())
    except KeyStoreError as exc:
        flash(f"Not retired: {exc}.", "error")
        return redirect(url_for("console.keys"))
    db.session.commit()
    flash(f"Key {row.kid} no longer signs; it stays published until {row.expires_at.isoformat()}.")
    return redirect(url_for("console.keys"))


def _retire_refusal(key: dict) -> str | None:
    if key["state"] == "next":
        return "it has not started signing yet"
    if key["retired_at"] is not None and datetime.fromisoformat(key["retired_at"]) <= utcnow():
        return "it is already retired"
    return None


@bp.get("/users")
@console_page(admin=True)
def users():
    q = (request.args.get("q") or "").strip()[:254]
    number = page_number()
    stmt = select(User).order_by(User.email)
    if q:
        stmt = stmt.where(User.email.contains(q.lower(), autoescape=True))
    rows = db.session.scalars(stmt.offset((number - 1) * USERS_PAGE_SIZE).limit(USERS_PAGE_SIZE + 1)).all()
    return render_template(
        "console/users.html",
        users=rows[:USERS_PAGE_SIZE],
        form=ActionForm(),
        q=q,
        number=number,
        has_next=len(rows) > USERS_PAGE_SIZE,
        roles=list(Role),
        tiers=list(Tier),
        invite_form=InviteForm(),
    )


@bp.post("/users/invite")
@console_page(admin=True)
def invite_user():
    """Create a member without a password: they get a mail with a link to choose one (which
    verifies the address too)."""
    form = InviteForm()
    if not form.validate_on_submit():
        flash("Give the new member's email and name.", "error")
        return redirect(url_for("console.users"), 303)
    try:
        user = create_member(form.email.data, form.name.data, None, tier=form.tier.data, role=form.role.data)
    except MemberError as exc:  # checked before anything was written
        flash(str(exc), "error")
        return redirect(url_for("console.users"), 303)
    record("user.created", actor=console_user(), subject=user, role=user.role, tier=user.tier)
    mail = invite(user)
    db.session.commit()
    send_later(mail)
    flash(f"{user.email} is invited: a link to choose a password is on its way (valid 7 days).")
    return redirect(url_for("console.users", q=user.email), 303)


def _member(user_id: str) -> User:
    user = db.session.get(User, user_id[:36])
    if user is None:
        abort(404)
    return user


def _back_to(user: User, code: int = 302):
    """Where an action on a member returns: their page when it was sent from there, else the list."""
    if request.form.get("from") == "member":
        return redirect(url_for("console.member", user_id=user.id), code)
    return redirect(url_for("console.users", q=user.email), code)


@bp.get("/users/<user_id>")
@console_page(admin=True)
def member(user_id: str):
    """One member on one page: what they have (verified email, two-step methods, sessions, apps,
    keys, latest events) and what an admin can do about it (role, membership, suspension)."""
    user = _member(user_id)
    return render_template(
        "console/member.html",
        m=member_overview(user),
        form=ActionForm(),
        roles=list(Role),
        tiers=list(Tier),
        describe=describe,
        who=who,
        origin=origin,
        is_self=user.id == console_user().id,
    )


@bp.post("/users/<user_id>")
@console_page(admin=True)
def update_user(user_id: str):
    user = _member(user_id)
    form = MemberForm()
    if not form.validate_on_submit():
        abort(400)
    try:
        set_role(user, form.role.data, actor=console_user())
        set_tier(user, form.tier.data, actor=console_user())
    except MemberError as exc:
        db.session.rollback()  # the page's unit of work: a role changed before a refused tier
        flash(str(exc), "error")
        return _back_to(user)
    db.session.commit()
    flash(f"{user.email}: role {user.role}, {user.tier} membership.")
    return _back_to(user)


def _lift_suspension(user: User):
    if not ActionForm().validate_on_submit():
        abort(400)
    unsuspend_member(user, actor=console_user())
    db.session.commit()
    flash(f"{user.email} may sign in again; their API keys that were not revoked work again.")
    return _back_to(user, 303)


def _suspend_page(user: User, form: SuspendForm, status: int = 200):
    return render_template("console/suspend.html", user=user, form=form, is_self=user.id == console_user().id), status


@bp.get("/users/<user_id>/suspend")
@console_page(admin=True)
def confirm_suspend(user_id: str):
    """The step before suspending: what it does, and the reason the admin must give."""
    return _suspend_page(_member(user_id), SuspendForm())


@bp.post("/users/<user_id>/suspend")
@console_page(admin=True)
def suspend_user(user_id: str):
    """Suspend (sign-in refused, sessions ended, tokens revoked; a reason is required and kept in
    the audit) or, with `lift`, restore."""
    user = _member(user_id)
    if request.form.get("lift"):
        return _lift_suspension(user)
    form = SuspendForm()
    if user.id == console_user().id:
        if not ActionForm().validate_on_submit():
            abort(400)
        flash("You cannot suspend your own account.", "error")
        return redirect(url_for("console.member", user_id=user.id), 303)
    if not form.validate_on_submit():
        if form.csrf_token.errors:
            abort(400)
        return _suspend_page(user, form, 400)
    try:
        ended = suspend_member(user, actor=console_user(), reason=form.reason.data.strip())
    except MemberError as exc:  # checked before anything was written
        flash(str(exc), "error")
        return redirect(url_for("console.member", user_id=user.id), 303)
    db.session.commit()
    flash(
        f"{user.email} is suspended: {ended.get('sessions_ended', 0)} sessions ended, "
        f"{ended.get('tokens_revoked', 0)} tokens revoked, {ended.get('api_keys_paused', 0)} API keys paused."
        if ended
        else f"{user.email} was already suspended."
    )
    return redirect(url_for("console.member", user_id=user.id), 303)
