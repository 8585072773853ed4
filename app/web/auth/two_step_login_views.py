"""The sign-in's pages after (or instead of) the password: the second step (a code from the
authenticator app, a passkey, or - on a page of its own, with a text keyboard - a recovery code)
and the passkey sign-in without password. The browser carries (in its signed session cookie) only who typed the right password, when, the
pending request and the handle of its passkey challenge (the challenge is kept server-side:
app/services/passkeys.py); the session starts once the second factor is right.

The checks live in app.services.second_factor and app.services.passkeys, which only flush; each route
here commits its unit of work once."""

from __future__ import annotations

import time
from collections.abc import Callable

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf import FlaskForm
from wtforms import HiddenField, StringField
from wtforms.validators import DataRequired, Length

from app.core import metrics
from app.core.extensions import db
from app.models import User
from app.protocol.authorize import find_interaction
from app.protocol.untrusted import UntrustedRequest
from app.services import passkeys, second_factor, throttle
from app.services.audit import record
from app.web.auth.views import (
    PENDING_SECOND_FACTOR,
    SUSPENDED,
    begin_session,
    interaction_or_restart,
    onward,
    throttled,
    too_many_attempts,
)

bp = Blueprint("two_step_login", __name__)

PENDING_LIFETIME = 300  # seconds between the right password and the code
WRONG_CODE = "That code is not right. Type the 6 digits your app shows now."
# A right code from the app, but its 30-second step was used already (typed twice, or an older
# code after a newer one): the member needs to wait, not to doubt the app.
JUST_USED = "That code was just used. Wait for your app to show the next one (every 30 seconds), then type it."
WRONG_RECOVERY_CODE = "That recovery code is not right, or it was used already: each works once."
NO_CODE = "Type the code from your authenticator app."
NO_RECOVERY_CODE = "Type one of your recovery codes."


class CodeForm(FlaskForm):
    code = StringField("Code", validators=[DataRequired(), Length(max=40)])


def _pending() -> tuple[User, object, str] | None:
    """The member awaiting the second step, their pending request and `next`; None if none (or
    stale, or the member was suspended meanwhile)."""
    data = session.get(PENDING_SECOND_FACTOR)
    if not isinstance(data, dict) or time.time() - data.get("t", 0) > PENDING_LIFETIME:
        return None
    user = db.session.get(User, str(data.get("u"))[:36])
    if user is None or user.is_suspended:
        return None
    try:
        interaction, restart = interaction_or_restart(data.get("i") or None)
    except UntrustedRequest:
        interaction, restart = None, None
    # An app's request that expired meanwhile is started again once the second step is done.
    return user, interaction, restart or data.get("n") or ""


def _start_again() -> Response:
    session.pop(PENDING_SECOND_FACTOR, None)
    flash("Sign in again: the sign-in took too long, or was not started.", "error")
    return redirect(url_for("auth.login"), 303)


class CredentialForm(FlaskForm):
    credential = HiddenField()


def _page(user: User, form: CodeForm, error: str | None = None, status: int = 200) -> Response:
    """The second step: a code field if the member has an authenticator app, a passkey button if
    they have passkeys (with a fresh challenge, kept server-side: the route commits it), and the
    way to the recovery-code step."""
    options = passkeys.authentication_options(user, "2fa")
    return make_response(
        render_template(
            "auth/second_factor.html",
            form=form,
            error=error,
            totp=second_factor.has_totp(user),
            passkey_options=options,
            recovery=second_factor.recovery_codes_left(user) > 0,
            passkey_form=CredentialForm(),
        ),
        status,
    )


def _recovery_page(user: User, form: CodeForm, error: str | None = None, status: int = 200) -> Response:
    """The recovery-code step: its own page, with a text keyboard (the codes have letters; the app
    code's field asks phones for a digits-only keypad)."""
    return make_response(
        render_template(
            "auth/recovery_code.html",
            form=form,
            error=error,
            totp=second_factor.has_totp(user),
            passkey=bool(passkeys.passkeys_of(user)),
        ),
        status,
    )


def _check(
    user: User,
    form: CodeForm,
    page: Callable[..., Response],
    check: Callable[[str], str | None],
    missing: str,
    wrong: str,
) -> Response | str:
    """The shared part of the two code steps: the form (`missing` when empty), the per-member
    throttle (guessing codes is throttled like passwords from an unknown browser), then
    `check(code)`. Returns what was used ("otp", "recovery"), or the page to answer, with `wrong`
    or JUST_USED (committed by the caller)."""
    if not form.validate_on_submit():
        return page(user, form, error=missing, status=400)
    attempt = throttle.Attempt("2fa:" + user.id)
    wait = attempt.wait()
    if wait:
        return throttled(page(user, form, error=too_many_attempts(wait)), wait)
    used = check(form.code.data)
    if used in ("otp", "recovery"):
        attempt.succeeded()
        return used
    attempt.failed()
    record("2fa.failed", actor=user, subject=user, **({"reason": "reused"} if used == "reused" else {}))
    metrics.login_failed()
    error = JUST_USED if used == "reused" else wrong
    return page(user, form, error=error, status=throttle.FAILED_LOGIN_STATUS)


def _begin(user: User, interaction, used: str):
    """The second step passed: the session begins (flushed; the route commits, then goes on). A
    recovery code used says how many are left, and to make new ones when few are."""
    notice = None
    if used == "recovery":
        left = second_factor.recovery_codes_left(user)
        notice = (
            f"You signed in with a recovery code; {left} left."
            + (" Make new ones on your account page." if left <= 3 else ""),
            "error" if left <= 3 else "message",
        )
    return begin_session(user, interaction, amr=("pwd", "otp"), notice=notice)


@bp.route("/login/second-factor", methods=["GET", "POST"])
def code() -> Response:
    """The code from the authenticator app (a recovery code typed here is still taken: some
    members will, and it is as good as on its own page)."""
    pending = _pending()
    if pending is None:
        return _start_again()
    user, interaction, next_path = pending
    form = CodeForm()
    if request.method == "GET":
        page = _page(user, form)
        db.session.commit()  # the page's passkey challenge
        return page
    outcome = _check(user, form, _page, lambda code: second_factor.verify(user, code), NO_CODE, WRONG_CODE)
    if isinstance(outcome, str):
        interaction = _begin(user, interaction, outcome)
        db.session.commit()  # with the recovery code used up, if one was
        return onward(interaction, next_path)
    db.session.commit()  # a failed attempt's audit line stays, with the page's passkey challenge
    return outcome


@bp.route("/login/second-factor/recovery", methods=["GET", "POST"])
def recovery_code() -> Response:
    """A recovery code in place of the app or passkey (lost phone): its own step, text keyboard."""
    pending = _pending()
    if pending is None:
        return _start_again()
    user, interaction, next_path = pending
    form = CodeForm()
    if request.method == "GET":
        return _recovery_page(user, form)
    outcome = _check(
        user,
        form,
        _recovery_page,
        lambda code: "recovery" if second_factor.use_recovery_code(user, code) else None,
        NO_RECOVERY_CODE,
        WRONG_RECOVERY_CODE,
    )
    if isinstance(outcome, str):
        interaction = _begin(user, interaction, outcome)
        db.session.commit()  # with the recovery code used up, if one was
        return onward(interaction, next_path)
    db.session.commit()  # a failed attempt's audit line stays
    return outcome


@bp.post("/login/second-factor/passkey")
def passkey() -> Response:
    """The second step with a passkey of the member who typed the right password."""
    pending = _pending()
    if pending is None:
        return _start_again()
    user, interaction, next_path = pending
    form = CredentialForm()
    try:
        if not form.validate_on_submit():
            raise passkeys.PasskeyError("The passkey form expired. Try again.")
        passkeys.authenticate(form.credential.data, "2fa", user=user)
    except passkeys.PasskeyError as exc:
        record("2fa.failed", actor=user, subject=user, kind="passkey")
        page = _page(user, CodeForm(), error=str(exc), status=throttle.FAILED_LOGIN_STATUS)
        # The failed attempt's audit line stays, the challenge it answered stays used, and the
        # page's new one is kept.
        db.session.commit()
        metrics.login_failed()
        return page
    interaction = begin_session(user, interaction, amr=("pwd", "hwk"))
    db.session.commit()  # with the challenge used and the passkey's new signature count
    return onward(interaction, next_path)


@bp.post("/login/passkey")
def passkey_sign_in() -> Response:
    """A sign-in without password: the page that asks the browser for any passkey of this site
    (first the options, then, with `credential`, the answer). The pending request rides along."""
    uid = request.form.get("interaction") or None
    interaction = find_interaction(uid) if uid else None  # an unknown request is the usual error page
    form = PasswordlessForm()
    if not form.validate_on_submit():
        return redirect(url_for("auth.login", interaction=uid), 303)
    if not form.credential.data:
        page = _passwordless_page(form)
        db.session.commit()  # the page's passkey challenge
        return page
    try:
        found = passkeys.authenticate(form.credential.data, "signin")
    except passkeys.PasskeyError as exc:
        page = _passwordless_page(form, error=str(exc), status=throttle.FAILED_LOGIN_STATUS)
        db.session.commit()  # the challenge answered stays used; the page's new one is kept
        metrics.login_failed()  # no audit line: no member to write it against
        return page
    user = db.session.get(User, found.user_id)
    if user.is_suspended:
        record("signin.failed", actor=user, reason="suspended")
        page = _passwordless_page(form, error=SUSPENDED, status=403)
        db.session.commit()  # the refused sign-in's audit line stays, with the page's new challenge
        return page
    interaction = begin_session(user, interaction, amr=("hwk",))
    db.session.commit()  # with the challenge used and the passkey's new signature count
    return onward(interaction, form.next.data)


@bp.post("/login/passkey/options")
def passkey_autofill_options() -> Response:
    """The options of a passkey sign-in offered in the login page's email field (conditional
    mediation: the browser lists this site's passkeys in its autofill): fetched by
    static/passkeys.js, with the page's CSRF token, only where the browser can do it. The
    challenge is kept server-side like the passkey page's; the answer goes to /login/passkey."""
    if not passkeys.available():
        abort(404)  # the script offers no autofill; anyone else meets the error page
    options = passkeys.authentication_options(None, "signin")
    db.session.commit()  # the challenge
    return make_response(options, 200, {"Content-Type": "application/json"})


class PasswordlessForm(FlaskForm):
    interaction = HiddenField()
    next = HiddenField()
    credential = HiddenField()


def _passwordless_page(form: PasswordlessForm, error: str | None = None, status: int = 200) -> Response:
    """The page that asks the browser for a passkey, with a fresh challenge (kept server-side: the
    route commits it)."""
    form.credential.data = ""
    return make_response(
        render_template(
            "auth/passkey.html", form=form, error=error, options=passkeys.authentication_options(None, "signin")
        ),
        status,
    )
