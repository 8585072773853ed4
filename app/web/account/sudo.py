"""Sudo mode: the account's changes that could lower its assurance or hand it over (a second factor
added or removed, new recovery codes, a new email address) ask the member to prove again who they
are - their password, or a code from their authenticator app - and then do not ask again in this
session for SUDO_MODE_LIFETIME seconds (ten minutes). A stolen session alone cannot turn two-step
verification off, nor send the account's recovery mail elsewhere.

Only a confirmation opens the window, not the sign-in: a session taken right after the member
signed in gets no free pass. The window is kept in the session cookie (signed) with the login
session it belongs to, so signing out, or in again, closes it. A wrong proof counts like a failed
sign-in from this browser (`reauthentication_refusal`, the sign-in's known-browser rule).

Every such route asks `required()` first. Without JavaScript: a button's POST that arrives
unconfirmed is answered with the confirmation page, whose form posts the same fields back to the
same route with the proof added; a page with a form of its own (the email change) shows the proof
fields in it while the window is closed (`fresh()` tells the template).
"""

from __future__ import annotations

import time

from flask import Response, current_app, make_response, render_template, request, session
from flask_wtf import FlaskForm
from wtforms import PasswordField, StringField
from wtforms.validators import Length, Optional

from app.models import User
from app.services import second_factor
from app.services.members import MAX_PASSWORD_LENGTH
from app.services.passwords import passwords
from app.services.sessions import current_login
from app.web.auth.views import reauthentication_refusal

WINDOW = "sudo"  # session key: [the login session's id, the unix time of the confirmation]
WRONG_PASSWORD = "Your password is not right."
WRONG_PROOF = "That is not right: type your password, or a code your authenticator app shows now."
PROOF_FIELDS = frozenset({"csrf_token", "current", "sudo_code"})


class ConfirmForm(FlaskForm):
    """The proof: the password, or a code from the authenticator app (when the member has one)."""

    current = PasswordField("Your password", validators=[Optional(), Length(max=MAX_PASSWORD_LENGTH)])
    sudo_code = StringField("Or a code from your authenticator app", validators=[Optional(), Length(max=12)])


def lifetime() -> int:
    """Seconds a confirmation lasts."""
    return int(current_app.config["SUDO_MODE_LIFETIME"])


def fresh() -> bool:
    """This session confirmed who it is less than `lifetime()` seconds ago."""
    login, window = current_login(), session.get(WINDOW)
    if login is None or not isinstance(window, list) or len(window) != 2:
        return False
    login_id, confirmed_at = window
    return login_id == login.id and isinstance(confirmed_at, int) and 0 <= time.time() - confirmed_at < lifetime()


def required(user: User, action: str) -> Response | None:
    """None when the member may go on with `action` (words for "To ... , confirm it is you"): the
    window is open, or this request carries a right proof (which opens it). Otherwise the
    confirmation page: asking (200), after a wrong proof (401) or while the attempt must wait (429)."""
    if fresh():
        return None
    form = ConfirmForm()
    has_totp = second_factor.has_totp(user)

    def page(error: str | None = None, status: int = 200) -> Response:
        carried = [(k, v) for k, values in request.form.lists() if k not in PROOF_FIELDS for v in values]
        return make_response(
            render_template(
                "account/sudo.html",
                form=form,
                action=action,
                carried=carried,
                has_totp=has_totp,
                error=error,
                minutes=lifetime() // 60,
                max_length=MAX_PASSWORD_LENGTH,
            ),
            status,
        )

    password, code = form.current.data or "", (form.sudo_code.data or "").replace(" ", "")
    if not password and not code:
        return page()  # the account page's button, or a form left open past the window: ask
    if not form.validate_on_submit():
        return page(status=400)
    wrong = WRONG_PROOF if has_totp else WRONG_PASSWORD
    if password:
        refused = reauthentication_refusal(user, lambda: passwords.verify(user, password), page, wrong)
    else:
        refused = reauthentication_refusal(user, lambda: has_totp and _app_code_right(user, code), page, wrong)
    if refused is not None:
        return refused
    session[WINDOW] = [current_login().id, int(time.time())]
    return None


def _app_code_right(user: User, code: str) -> bool:
    """A code from the authenticator app, used up here; never a recovery code (those sign in)."""
    return code.isascii() and code.isdigit() and second_factor.verify(user, code) == "otp"
