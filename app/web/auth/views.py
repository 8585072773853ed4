"""The login page. It knows nothing of OAuth beyond the interaction reference it was given:
after a successful login it sends the browser back to resume the parked request.

Each route here (and in the other sign-in views) is one unit of work: the services it calls only
flush, and the route commits once, before the redirect that relies on the change."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from flask import Blueprint, Response, flash, make_response, redirect, render_template, request, session, url_for
from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField
from wtforms.validators import DataRequired, Length

from app.core import metrics
from app.core.adapters import CheckedForm
from app.core.extensions import db
from app.core.security import allow_form_redirect
from app.models import User
from app.protocol.authorize import find_interaction, resume, signed_in_for
from app.protocol.untrusted import UntrustedRequest
from app.services import throttle
from app.services.audit import event_row, record
from app.services.devices import known_device, remember_device
from app.services.members import store_password_hash
from app.services.passkeys import available as passkeys_available
from app.services.passwords import passwords
from app.services.roles import can_use_console
from app.services.second_factor import member_signing_in
from app.services.sessions import current_user, end_login, start_login
from app.store.members import MemberFacts
from app.store.pending_requests import PendingRequest

bp = Blueprint("auth", __name__)

INVALID_CREDENTIALS = "Incorrect email or password."
PENDING_SECOND_FACTOR = "2fa"  # session key: the member whose password was right, awaiting the code
SUSPENDED = "This account is suspended. Contact support to find out why and how to lift it."


def too_many_attempts(wait: int) -> str:
    """The answer while an account (or IP) must wait: the same words for every email."""
    return f"Too many sign-in attempts. Try again in {wait} second{'s' if wait != 1 else ''}."


class ActionForm(FlaskForm):
    """A button that changes something: only the CSRF token."""


class LoginForm(CheckedForm):
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    interaction = HiddenField()
    next = HiddenField()


# A path on this site and nothing else: printable ASCII only (browsers and Werkzeug drop tabs and
# line breaks from a Location, so "/\t/evil.example" would become "//evil.example"), one leading
# slash, no backslash (some browsers read "/\\evil.example" as a host).
_LOCAL_PATH = re.compile(r"/(?!/)[\x21-\x5b\x5d-\x7e]*")  # printable ASCII without the backslash (\x5c)


def interaction_or_restart(uid: str | None) -> tuple[PendingRequest | None, str | None]:
    """The pending request `uid` of this browser (None without one), or, when it expired and can
    be rebuilt, None and the path that starts it again (app/protocol/authorize.py `restart_path`):
    an expired request is no dead end. Any other refusal is the error page."""
    if not uid:
        return None, None
    try:
        return find_interaction(uid), None
    except UntrustedRequest as error:
        if error.restart is None:
            raise
        return None, error.restart


def safe_next(target: str | None) -> str | None:
    """Only same-site paths: never an open redirect."""
    if target and _LOCAL_PATH.fullmatch(target):
        return target
    return None


def throttled(page: Response | tuple, wait: int) -> Response:
    """A page answered 429 with Retry-After: the same for every email, known or not."""
    response = make_response(page)
    response.status_code = 429
    response.headers["Retry-After"] = str(wait)
    return response


def password_refusal(user: User, password: str, page: Callable[..., Response], wrong: str) -> Response | None:
    """A signed-in member retyping their password (to change it): None when it is right; else
    `page` answered as `reauthentication_refusal` says."""
    return reauthentication_refusal(user, lambda: passwords.verify(user, password), page, wrong)


def reauthentication_refusal(
    user: User, proof: Callable[[], bool], page: Callable[..., Response], wrong: str
) -> Response | None:
    """A signed-in member proving again who they are (the password, or a code from their
    authenticator app): None when `proof()` holds; else `page` answered 401 with `wrong`, or 429
    while the attempt must wait. The sign-in's rule applies: a browser that signed in to the
    account before is never kept waiting by an outsider's failures with the member's email, and a
    wrong proof counts like a failed sign-in from this browser (its own budget, then the account's),
    so a stolen session cannot guess faster than the login page allows."""
    attempt = throttle.Attempt(throttle.account_key(user.email), known_device(user))
    wait = attempt.wait()
    if wait:
        return throttled(page(error=too_many_attempts(wait)), wait)
    if not proof():
        attempt.failed()
        return page(error=wrong, status=throttle.FAILED_LOGIN_STATUS)
    attempt.succeeded()  # the place the attempt took in the counts is given back
    return None


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response | str:
    form = LoginForm()
    uid = request.values.get("interaction") or None
    interaction, restart = interaction_or_restart(uid)
    if restart is not None:
        if request.method == "GET":
            return redirect(restart, 303)  # the same request, parked anew: the login page again
        # The password was typed after the request expired: sign in, then start it again.
        uid, form.next.data = None, restart
    if request.method == "GET":
        form.interaction.data = uid
        form.next.data = safe_next(request.args.get("next")) or ""
        if interaction is not None:
            form.email.data = interaction.params.get("login_hint", "")[:254]
        signed_in_as = current_user()
        if signed_in_as is not None and not form.email.data:
            form.email.data = signed_in_as.email  # asked again (prompt=login, max_age): "continue as"
        return _page(form, interaction)

    if not form.validate_on_submit():
        return _page(form, interaction, error="Enter your email and password.", status=400)
    user, asks_second_factor = member_signing_in(form.email.data)
    client = interaction.client if interaction is not None else None
    attempt = throttle.Attempt(throttle.account_key(form.email.data), known_device(user))
    wait = attempt.wait()
    if wait:
        return throttled(_page(form, interaction, error=too_many_attempts(wait)), wait)
    matches, upgraded = passwords.check(user.password_hash if user is not None else None, form.password.data)
    if user is None or not matches:
        attempt.failed()
        record("signin.failed", actor=user, client=client)  # an unknown email is not stored
        db.session.commit()  # the failed attempt is this request's unit of work: its audit line stays
        metrics.login_failed()
        return _page(form, interaction, error=INVALID_CREDENTIALS, status=throttle.FAILED_LOGIN_STATUS)

    attempt.succeeded()
    if upgraded is not None:
        store_password_hash(user.id, upgraded)  # the configured cost changed: this member is now on it
    if user.is_suspended:
        # Only someone who knows the password learns this (an unknown email never gets here).
        record("signin.failed", actor=user, client=client, reason="suspended")
        db.session.commit()  # the refused sign-in is this request's unit of work: its audit line stays
        metrics.login_failed()
        return _page(form, interaction, error=SUSPENDED, status=403)
    if asks_second_factor:
        # The password is right; the sign-in completes on the second-factor page.
        session[PENDING_SECOND_FACTOR] = {
            "u": user.id,
            "t": int(time.time()),
            "i": uid or "",
            "n": safe_next(form.next.data) or "",
        }
        db.session.commit()  # a password hash upgraded above
        return redirect(url_for("two_step_login.code"), 303)
    interaction = begin_session(user, interaction, amr=("pwd",))
    db.session.commit()
    return onward(interaction, form.next.data)


def begin_session(
    user: MemberFacts, interaction: PendingRequest | None, amr: tuple[str, ...], notice: tuple[str, str] | None = None
) -> PendingRequest | None:
    """Every factor checked: a known browser from now on, a fresh session, the audit line, and the
    parked request (if any) bound to the new session, which is returned. `notice` (message,
    category) is flashed in the new session. Flushes only: the route commits, then answers with
    `onward`."""
    client = interaction.client if interaction is not None else None
    remember_device(user)
    event = event_row("signin.ok", actor=user, client=client, amr=" ".join(amr) if amr != ("pwd",) else None)
    session_row = start_login(user, amr=amr, event=event, attach_to=interaction.id if interaction else None)
    if notice is not None:
        flash(*notice)
    metrics.login_succeeded(user.id)
    if interaction is not None:
        return signed_in_for(interaction, session_row)
    return None


def onward(interaction: PendingRequest | None, next_path: str | None) -> Response:
    """After a committed sign-in: on to the parked request, or to `next` (a path on this site)."""
    if interaction is not None:
        # On with the parked request at once: to the consent page, or back to the app with its
        # code (no separate "resume" hop: one redirect fewer for every sign-in).
        return resume(interaction)
    return redirect(safe_next(next_path) or url_for("auth.signed_in"))


def _page(form: LoginForm, interaction, error: str | None = None, status: int = 200):
    if interaction is not None:
        allow_form_redirect(interaction.params.get("redirect_uri") or interaction.client.get_default_redirect_uri())
    return (
        render_template(
            "auth/login.html",
            form=form,
            client=interaction.client if interaction else None,
            error=error,
            signed_in_as=current_user(),
            passkeys=passkeys_available(),
        ),
        status,
    )


@bp.post("/login/switch")
def switch_account() -> Response:
    """ "Not you?": sign this browser out and show the login page again, for the same pending
    request (the interaction is bound to the browser, not to the member, so it survives)."""
    if not ActionForm().validate_on_submit():
        return redirect(url_for("auth.login"), 303)
    uid = request.form.get("interaction") or None
    if uid:
        find_interaction(uid)  # still open and this browser's: else the error page, and still signed in
    end_login()
    db.session.commit()
    return redirect(url_for("auth.login", interaction=uid, next=safe_next(request.form.get("next"))), 303)


@bp.get("/")
def home() -> Response:
    return redirect(url_for("auth.signed_in"))


@bp.get("/signed-in")
def signed_in() -> Response | str:
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login"))
    return render_template("auth/signed_in.html", user=user, can_use_console=can_use_console(user))


@bp.post("/logout")
def logout() -> Response:
    end_login()
    db.session.commit()
    flash("You are signed out.")  # as the account page's button says it
    return redirect(url_for("auth.login"), 303)
