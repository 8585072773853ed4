"""The member's account page: profile, membership, connected apps (revoke), password, sign out.

Each route is one unit of work: the services it calls only flush; the route commits once, then
mails what announces the change."""

from __future__ import annotations

from functools import partial

from flask import Blueprint, Response, abort, flash, make_response, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import EmailField, PasswordField
from wtforms.validators import DataRequired, Length

from app.core.extensions import db
from app.core.scopes import SCOPES, tier_allows
from app.models import Tier
from app.services import passkeys, password_strength, second_factor, verification
from app.services.audit import record
from app.services.connections import connections, is_connected
from app.services.consent import revoke_consent
from app.services.mail import send_later
from app.services.members import MAX_PASSWORD_LENGTH, MemberError, change_password
from app.services.notices import security_notice
from app.services.session_list import end_session, live_sessions
from app.services.sessions import current_login, current_user, end_all_logins, end_login, start_login, touch
from app.store import store
from app.web.account import sudo
from app.web.auth.recovery_views import NewPasswordForm, new_password_context
from app.web.auth.views import password_refusal

bp = Blueprint("account", __name__, url_prefix="/account")

# What each membership lets apps read, in the consent page's words (the sign-in scopes aside).
DATA_SCOPES = ("profile", "email", "credits:read", "analytics:read")


class ActionForm(FlaskForm):
    """A button that changes something: only the CSRF token."""


class EmailForm(FlaskForm):
    email = EmailField("New email address", validators=[DataRequired(), Length(max=254)])


class PasswordForm(NewPasswordForm):
    current = PasswordField("Current password", validators=[DataRequired(), Length(max=MAX_PASSWORD_LENGTH)])


def tiers() -> list[dict]:
    return [
        {"name": t.value, "includes": [SCOPES[s].description for s in DATA_SCOPES if tier_allows(s, t.value)]}
        for t in Tier
    ]


@bp.get("", strict_slashes=False)
def show():
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")))
    login = current_login()
    touch(login)
    db.session.commit()  # "last active" on the sessions list below
    return render_template(
        "account/account.html",
        user=user,
        tiers=tiers(),
        connections=connections(user),
        form=ActionForm(),
        pending_email=verification.pending_email_change(user),
        sessions=live_sessions(user, login.id),
        two_step=second_factor.has_totp(user),
        passkeys=passkeys.passkeys_of(user),
        any_second_factor=second_factor.has_second_factor(user),
        passkeys_available=passkeys.available(),
        recovery_left=second_factor.recovery_codes_left(user),
    )


@bp.post("/apps/<client_id>/revoke")
def revoke(client_id: str):
    """Remove the consent and revoke every access and refresh token of that app for this member."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")))
    client = store().apps.registered(client_id[:255])
    if client is None or not is_connected(user, client):
        flash("That app is not connected to your account.", "error")
        return redirect(url_for("account.show"), 303)
    revoked = revoke_consent(user, client)
    record("consent.revoked", actor=user, client=client, tokens_revoked=revoked)
    db.session.commit()
    flash(f"{client.name} is disconnected: it can no longer read your data, and its sign-in has ended.")
    return redirect(url_for("account.show"), 303)


@bp.post("/sessions/<int:session_id>/sign-out")
def end_one_session(session_id: int):
    """Sign one session out (a lost phone, a shared computer). This browser's own session is the
    plain "Sign out" button."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")), 303)
    if not ActionForm().validate_on_submit():
        abort(400)
    if session_id == current_login().id:
        return sign_out()
    if not end_session(user, session_id):
        flash("That session had already ended.", "error")
        return redirect(url_for("account.show"), 303)
    record("session.signed_out", actor=user, session_id=session_id)
    db.session.commit()
    flash("That session is signed out.")
    return redirect(url_for("account.show"), 303)


@bp.post("/sign-out")
def sign_out():
    end_login()
    db.session.commit()
    flash("You are signed out.")
    return redirect(url_for("auth.login"), 303)


@bp.post("/sign-out-everywhere")
def sign_out_everywhere():
    """End every session of the member, on every device (apps keep their own tokens: revoke an
    app above to cut it off)."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login"), 303)
    ended = end_all_logins(user)
    record("signout.everywhere", actor=user, sessions_ended=ended)
    cancelled = verification.cancel_email_change(user, actor=user)
    end_login()
    db.session.commit()
    flash(
        f"You are signed out everywhere ({ended} {'session' if ended == 1 else 'sessions'} ended)"
        + (f", and the change of your address to {cancelled} is cancelled." if cancelled else ".")
    )
    return redirect(url_for("auth.login"), 303)


WRONG_CURRENT_PASSWORD = "Your current password is not right."


def _password_page(form: PasswordForm, error: str | None = None, status: int = 200) -> Response:
    return make_response(
        render_template("account/password.html", form=form, error=error, **new_password_context(current_user())),
        status,
    )


@bp.route("/password", methods=["GET", "POST"])
def password() -> Response:
    """Change the password, knowing the current one. Every other session ends (whoever signed in
    with the old password is signed out); this browser gets a fresh session. A wrong current
    password counts against the account like a failed sign-in from an unknown browser: a stolen
    session cannot guess faster than the login page allows."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.password")))
    form = PasswordForm()
    form.strength_words = password_strength.member_words(user.email, user.name)
    if request.method == "GET":
        return _password_page(form)
    if not form.validate_on_submit():
        return _password_page(form, status=400)
    refused = password_refusal(user, form.current.data, partial(_password_page, form), WRONG_CURRENT_PASSWORD)
    if refused is not None:
        return refused
    amr = tuple(current_login().amr.split())  # this browser keeps how it signed in
    try:
        ended = change_password(user, form.new.data, actor=user, disconnect_apps=form.disconnect_apps.data)
    except MemberError as exc:  # the form checked the same rules: refused before anything was written
        return _password_page(form, error=str(exc), status=400)
    start_login(user, amr=amr)
    db.session.commit()
    send_later(security_notice(user, "Your password was changed"))
    flash(
        "Your password is changed. You are signed out everywhere else"
        + (", and every app is disconnected" if "tokens_revoked" in ended else "")
        + (
            f"; the change of your address to {ended['email_change_cancelled']} is cancelled"
            if "email_change_cancelled" in ended
            else ""
        )
        + "."
    )
    return redirect(url_for("account.show"), 303)


@bp.post("/email/verify")
def send_verification_link():
    """Mail a link that verifies the member's current address."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")), 303)
    if not ActionForm().validate_on_submit():
        abort(400)
    if user.email_verified:
        flash(f"{user.email} is already verified.")
        return redirect(url_for("account.show"), 303)
    mail = verification.send_verification(user)
    db.session.commit()
    if mail is not None:
        send_later(mail)
    flash(f"A verification link is on its way to {user.email}. Open it to verify the address.")
    return redirect(url_for("account.show"), 303)


def _email_page(form: EmailForm, error: str | None = None, status: int = 200) -> Response:
    user = current_user()
    return make_response(
        render_template(
            "account/email.html",
            form=form,
            error=error,
            user=user,
            max_length=MAX_PASSWORD_LENGTH,
            sudo_form=sudo.ConfirmForm(),
            confirmed=sudo.fresh(),
            has_totp=second_factor.has_totp(user),
        ),
        status,
    )


@bp.route("/email", methods=["GET", "POST"])
def email() -> Response:
    """Change the address: the member confirms it is them (sudo mode), then a link goes to the new
    address (the current one is told); the address changes only when that link is followed (a typo
    cannot lock the member out of their mail)."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.email")))
    form = EmailForm()
    if request.method == "GET":
        return _email_page(form)
    if not form.validate_on_submit():
        return _email_page(form, status=400)
    refused = sudo.required(user, f"change your email address to {form.email.data.strip()}")
    if refused is not None:
        return refused
    try:
        mails = verification.request_email_change(user, form.email.data)
    except MemberError as exc:  # refused before anything was written
        return _email_page(form, error=str(exc), status=400)
    db.session.commit()
    for mail in mails:
        send_later(mail)
    flash(
        f"A link is on its way to {mails[0].to}. Your address changes when you open it; until then you sign in "
        f"with {user.email}."
    )
    return redirect(url_for("account.show"), 303)


@bp.post("/email/cancel")
def cancel_email_change() -> Response:
    """Call off a pending change of address: its link stops working."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")), 303)
    if not ActionForm().validate_on_submit():
        abort(400)
    if verification.cancel_email_change(user, actor=user):
        flash(f"The change of address is cancelled: the link no longer works, and your address stays {user.email}.")
    else:
        flash("No change of address was waiting.", "error")
    db.session.commit()
    return redirect(url_for("account.show"), 303)
