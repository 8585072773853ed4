"""The account's two-step verification pages: set up an authenticator app (with recovery codes,
shown once), make new recovery codes, remove it; add and remove passkeys. Each change asks the
member to confirm it is them (sudo mode, app/web/account/sudo.py).

The rules live in app.services.second_factor and app.services.passkeys, which only flush; each route here
commits its unit of work once, and only then mails the security notice."""

from __future__ import annotations

from urllib.parse import quote

from flask import Blueprint, Response, flash, make_response, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import HiddenField, StringField
from wtforms.validators import DataRequired, Length

from app.core.extensions import db
from app.models import User
from app.models.base import utcnow
from app.services import passkeys, second_factor
from app.services.audit import record
from app.services.mail import send_later
from app.services.members import MAX_PASSWORD_LENGTH
from app.services.notices import security_notice
from app.services.sessions import current_user
from app.web.account import sudo
from app.web.qr_code import qr_svg

bp = Blueprint("two_step", __name__, url_prefix="/account/two-step")

ADD_PASSKEY = "add a passkey"
WRONG_CODE = (
    "That code is not right: type the 6 digits the app shows now (check the phone's clock if it keeps failing)."
)


class SetupForm(FlaskForm):
    code = StringField("Code from the app", validators=[DataRequired(), Length(max=12)])


def _signed_out() -> Response:
    return redirect(url_for("auth.login", next=url_for("account.show")), 303)


@bp.route("/setup", methods=["GET", "POST"])
def setup() -> Response:
    user = current_user()
    if user is None:
        return _signed_out()
    if second_factor.has_totp(user):
        flash("An authenticator app is already set up. Remove it first to use another one.")
        return redirect(url_for("account.show"), 303)
    form = SetupForm()
    secret = second_factor.pending_secret(user)
    if request.method == "GET" and secret is None:
        secret = second_factor.begin_totp(user)  # a new key, kept (sealed) until a first code confirms it
        db.session.commit()  # this request's unit of work: the key must outlive the page that shows it
    elif secret is None:  # submitted without a key shown first (or it was replaced): start over
        return redirect(url_for("two_step.setup"), 303)

    uri = second_factor.provisioning_uri(user, secret)

    def page(error: str | None = None, status: int = 200) -> Response:
        return make_response(
            render_template(
                "account/two_step_setup.html",
                form=form,
                error=error,
                max_length=MAX_PASSWORD_LENGTH,
                secret=" ".join(secret[i : i + 4] for i in range(0, len(secret), 4)),
                raw_secret=secret,
                email=user.email,
                uri=uri,
                qr=qr_svg(uri, "QR code to add Credits ID to your authenticator app"),
                sudo_form=sudo.ConfirmForm(),
                confirmed=sudo.fresh(),
            ),
            status,
        )

    if request.method == "GET":
        return page()
    if not form.validate_on_submit():
        return page(status=400)
    refused = sudo.required(user, "turn on two-step verification with this authenticator app")
    if refused is not None:
        return refused
    codes = second_factor.confirm_totp(user, form.code.data.replace(" ", ""))
    if codes is None:
        return page(error=WRONG_CODE, status=400)
    db.session.commit()
    send_later(security_notice(user, "Two-step verification with an authenticator app was turned on"))
    if not codes:  # recovery codes from an earlier passkey stay as they are
        flash("Two-step verification with your authenticator app is on. Your recovery codes stay the same.")
        return redirect(url_for("account.show"), 303)
    return _recovery_codes_page(user, codes, new_setup=True)


def recovery_codes_text(user: User, codes: list[str]) -> str:
    """The recovery codes as the .txt file the page offers to download (and print shows)."""
    return (
        f"Credits ID recovery codes for {user.email}\n"
        f"Made {utcnow():%Y-%m-%d %H:%M} UTC. Each code signs you in once, in place of your\n"
        "authenticator app or passkey. Keep them somewhere safe; making new ones voids these.\n\n"
        + "\n".join(codes)
        + "\n"
    )


def _recovery_codes_page(user: User, codes: list[str], new_setup: bool, passkey: str | None = None) -> Response:
    """The codes, shown once, with ways to keep them: copy and print (static/recovery_codes.js),
    and a .txt download that needs no script (a data: link: the codes are never stored in the
    clear, so there is nothing to fetch later). "I have saved them" waits for one of the three."""
    text = recovery_codes_text(user, codes)
    return make_response(
        render_template(
            "account/recovery_codes.html",
            codes=codes,
            new_setup=new_setup,
            passkey=passkey,
            download_href="data:text/plain;charset=utf-8," + quote(text),
        )
    )


@bp.post("/recovery-codes")
def recovery_codes() -> Response:
    """New recovery codes (the old ones stop working), shown once."""
    user = current_user()
    if user is None:
        return _signed_out()
    if not second_factor.has_second_factor(user):
        return redirect(url_for("account.show"), 303)
    refused = sudo.required(user, "make new recovery codes (the ones you have stop working)")
    if refused is not None:
        return refused
    codes = second_factor.new_recovery_codes(user)
    record("2fa.recovery_codes_renewed", actor=user, subject=user)
    db.session.commit()
    send_later(security_notice(user, "New recovery codes were made (the previous ones no longer work)"))
    return _recovery_codes_page(user, codes, new_setup=False)


@bp.post("/remove")
def remove() -> Response:
    """Remove the authenticator app and its recovery codes: sign-in asks for the password only."""
    user = current_user()
    if user is None:
        return _signed_out()
    if not second_factor.has_totp(user):
        return redirect(url_for("account.show"), 303)
    refused = sudo.required(user, "turn off the authenticator app (and, without a passkey, your recovery codes)")
    if refused is not None:
        return refused
    second_factor.remove_totp(user, actor=user)
    db.session.commit()
    send_later(security_notice(user, "The authenticator app was removed from your two-step verification"))
    flash("Two-step verification is off: signing in asks for your password only.")
    return redirect(url_for("account.show"), 303)


# -- passkeys -----------------------------------------------------------------------------------


class PasskeyForm(FlaskForm):
    name = StringField(
        "Name of this passkey",
        validators=[Length(max=64)],
        description='To tell your passkeys apart, such as "Work laptop" or "Phone".',
    )


class CredentialForm(FlaskForm):
    name = HiddenField()
    credential = HiddenField()


@bp.post("/passkeys/new")
def new_passkey() -> Response:
    """Step 1: a name (and, unless confirmed lately, the password), then the page that asks the
    browser for a new passkey."""
    user = current_user()
    if user is None:
        return _signed_out()
    form = PasskeyForm()

    def page(error: str | None = None, status: int = 200, name_error: str | None = None) -> Response:
        return make_response(
            render_template(
                "account/passkey_new.html",
                form=form,
                error=error,
                name_error=name_error,
                max_length=MAX_PASSWORD_LENGTH,
                sudo_form=sudo.ConfirmForm(),
                confirmed=sudo.fresh(),
                has_totp=second_factor.has_totp(user),
            ),
            status,
        )

    if "name" not in request.form:
        return page()  # the account page's button: ask for a name (and the proof)
    if not form.validate_on_submit():
        return page(status=400)
    name = (form.name.data or "").strip()
    if name and passkeys.name_in_use(user, name):
        return page(status=400, name_error=f'You have a passkey called "{name}" already: choose another name.')
    refused = sudo.required(user, ADD_PASSKEY)
    if refused is not None:
        return refused
    try:
        options = passkeys.registration_options(user)
    except passkeys.PasskeyError as exc:
        return page(error=str(exc), status=409)
    db.session.commit()  # the ceremony's challenge, kept server-side
    return make_response(
        render_template(
            "account/passkey_create.html", options=options, form=CredentialForm(name=form.name.data or "Passkey")
        )
    )


@bp.post("/passkeys")
def add_passkey() -> Response:
    """Step 2: the browser's new passkey, checked and kept (its public key)."""
    user = current_user()
    if user is None:
        return _signed_out()
    form = CredentialForm()
    if not form.validate_on_submit():
        return redirect(url_for("account.show"), 303)
    # The same rule as removing one: a confirmation of less than SUDO_MODE_LIFETIME ago. Lapsed
    # during the ceremony, the confirmation page carries the new passkey's answer through.
    refused = sudo.required(user, ADD_PASSKEY)
    if refused is not None:
        return refused
    try:
        passkey = passkeys.register(user, form.credential.data, form.name.data)
    except passkeys.PasskeyError as exc:  # refused before any passkey was written
        db.session.commit()  # the challenge it answered stays used
        flash(str(exc), "error")
        return redirect(url_for("account.show"), 303)
    codes = second_factor.new_recovery_codes(user) if second_factor.recovery_codes_left(user) == 0 else None
    db.session.commit()
    send_later(security_notice(user, f'A passkey ("{passkey.name}") was added'))
    if codes:  # the first second factor: recovery codes for when the device is lost
        return _recovery_codes_page(user, codes, new_setup=True, passkey=passkey.name)
    flash(f'Passkey "{passkey.name}" added: use it to sign in without your password, or after it.')
    return redirect(url_for("account.show"), 303)


class RemoveForm(FlaskForm):
    """The removal confirmation: `confirm` says the member saw the page that names the passkey."""

    confirm = HiddenField()


@bp.post("/passkeys/<int:passkey_id>/remove")
def remove_passkey(passkey_id: int) -> Response:
    """Remove a passkey, never in one click: the account page's button leads to a page that names
    it (and says what goes with it), whose button - with the proof, unless confirmed lately, the
    rule adding one follows - removes it."""
    user = current_user()
    if user is None:
        return _signed_out()
    passkey = next((p for p in passkeys.passkeys_of(user) if p.id == passkey_id), None)
    form = RemoveForm()
    if not form.validate_on_submit() or passkey is None:
        flash("That passkey is not registered for your account.", "error")
        return redirect(url_for("account.show"), 303)
    if form.confirm.data != "yes":
        others = len(passkeys.passkeys_of(user)) - 1
        return make_response(
            render_template(
                "account/passkey_remove.html",
                passkey=passkey,
                form=form,
                sudo_form=sudo.ConfirmForm(),
                confirmed=sudo.fresh(),
                has_totp=second_factor.has_totp(user),
                last_factor=others == 0 and not second_factor.has_totp(user),
                max_length=MAX_PASSWORD_LENGTH,
            )
        )
    refused = sudo.required(user, f'remove the passkey "{passkey.name}"')
    if refused is not None:
        return refused
    passkeys.remove(user, passkey_id, actor=user)
    db.session.commit()
    send_later(security_notice(user, f'A passkey ("{passkey.name}") was removed'))
    flash(f'The passkey "{passkey.name}" is removed: it no longer signs you in.')
    return redirect(url_for("account.show"), 303)
