"""The forgot-password pages: ask for a link, then set a new password through it. The rules live
in app.services.recovery (flush only); each route commits once, then sends the mail."""

from __future__ import annotations

from functools import partial

from flask import (
    Blueprint,
    Response,
    current_app,
    flash,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, HiddenField, PasswordField
from wtforms.validators import DataRequired, EqualTo, Length, ValidationError

from app.core.email_address import InvalidEmail, stored_form
from app.core.extensions import db
from app.models import LinkPurpose, User
from app.protocol.authorize import find_interaction
from app.protocol.untrusted import UntrustedRequest
from app.services import links, password_strength, throttle
from app.services.devices import remember_device
from app.services.mail import send_later
from app.services.members import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, MemberError
from app.services.notices import security_notice
from app.services.recovery import complete_reset, request_reset, reset_link
from app.web.auth.views import safe_next, throttled
from app.web.background import run_after_response

bp = Blueprint("recovery", __name__)

TOO_MANY_REQUESTS = "Too many requests for links from your network. Try again later."
# The strength hint asks once a quarter-second of typing at most: a person stays far below this.
STRENGTH_IP_LIMIT = "120 per minute"
AFTER_RESET = "after_reset"  # session key: the login page of the app's sign-in the reset was asked from


class ForgotForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired(message="Enter your email address."), Length(max=254)])

    def validate_email(self, field: EmailField) -> None:
        """The address rule of every form that takes one (a syntax check: says nothing of members)."""
        try:
            stored_form(field.data)
        except InvalidEmail as error:
            raise ValidationError(str(error)) from None


PASSWORD_HELP = (
    f"At least {MIN_PASSWORD_LENGTH} characters, and not easily guessed: a few uncommon words together work well."
)


def refuse_weak(field: PasswordField, words: list[str]) -> None:
    """The form's side of the strength rule: zxcvbn's reason as the field's error (the length
    rule answers first: a short password gets one error, not two)."""
    if field.data and MIN_PASSWORD_LENGTH <= len(field.data) <= MAX_PASSWORD_LENGTH:
        reason = password_strength.weakness(field.data, words)
        if reason is not None:
            raise ValidationError(reason)


def new_password_context(user: User) -> dict[str, object]:
    """What a page with a new-password field needs: the lengths, and the member's own words for
    the strength hint."""
    return {
        "max_length": MAX_PASSWORD_LENGTH,
        "min_length": MIN_PASSWORD_LENGTH,
        "strength_words": f"{user.email} {user.name}",
    }


class NewPasswordForm(FlaskForm):
    """Choosing a new password, after a forgotten one (ResetForm) or knowing the current one (the
    account page's PasswordForm): the same rules and words in both."""

    new = PasswordField(
        "New password",
        validators=[
            DataRequired(),
            Length(
                min=MIN_PASSWORD_LENGTH,
                max=MAX_PASSWORD_LENGTH,
                message=f"Use {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters.",
            ),
        ],
        description=PASSWORD_HELP,
    )
    confirm = PasswordField(
        "New password again", validators=[DataRequired(), EqualTo("new", message="The two new passwords differ.")]
    )
    disconnect_apps = BooleanField(
        "Also disconnect every app",
        description=("If someone else may have used your password: every app loses access and must ask you again."),
    )

    # The member's own words (address, name), which the strength check is told: set by the view.
    strength_words: list[str] = []

    def validate_new(self, field: PasswordField) -> None:
        """Not easily guessed (app/services/password_strength.py): the reason under the field."""
        refuse_weak(field, self.strength_words)


class ResetForm(NewPasswordForm):
    token = HiddenField()


def mail_ip_wait() -> int:
    """MAIL_IP_LIMIT: 0, or the seconds until this IP may ask for another link (known and unknown
    emails spend it alike)."""
    spent = throttle.spend(throttle.parsed_limit(current_app.config["MAIL_IP_LIMIT"]), "mail-ip", throttle.client_ip())
    return 0 if spent is None or spent.allowed else spent.reset


def _app_sign_in(uid: str | None) -> tuple[str | None, str | None]:
    """Started from an app's sign-in (the login page's `interaction`): the login page that goes
    on with it, and the app's name; (None, None) without one, or for one this browser cannot go
    on with. An expired request still counts when it can be rebuilt: the login page starts it again."""
    if not uid:
        return None, None
    uid = uid[:64]
    try:
        interaction = find_interaction(uid)
    except UntrustedRequest as error:
        if error.restart is None:
            return None, None
        return url_for("auth.login", interaction=uid), error.app_name
    return url_for("auth.login", interaction=uid), interaction.app.name


@bp.route("/password/forgot", methods=["GET", "POST"])
def forgot() -> Response | str:
    """Ask for a reset link. Started from an app's sign-in, the way back to it is kept in this
    browser's session: after the new password, the login page goes on with the app's request."""
    form = ForgotForm()
    uid = request.values.get("interaction") or None
    back, app_name = _app_sign_in(uid)

    def page(**extra: object) -> str:
        return render_template(
            "auth/forgot.html", form=form, back=back or url_for("auth.login"), app_name=app_name, uid=uid, **extra
        )

    if request.method == "GET":
        form.email.data = request.args.get("email", "")[:254]
        return page()
    if not form.validate_on_submit():
        error = form.email.errors[0] if form.email.errors else "Enter your email address."
        return make_response(page(error=error), 400)
    wait = mail_ip_wait()
    if wait:
        return throttled(page(error=TOO_MANY_REQUESTS), wait)
    if back is not None:
        session[AFTER_RESET] = {"p": back, "a": app_name}
    # The lookup, the link and the mail run after the answer: the same answer, and as quick,
    # whether or not a member has the address.
    run_after_response(partial(request_reset, form.email.data), "reset-link")
    return render_template(
        "auth/forgot_sent.html",
        email=form.email.data.strip(),
        minutes=links.lifetime(LinkPurpose.RESET) // 60,
        back=back or url_for("auth.login"),
        app_name=app_name,
        uid=uid,
    )


@bp.post("/password/strength")
def strength() -> Response:
    """The hint under a new-password field as the member types (static/passwords.js): the same
    estimator the form's rule uses, so the hint and the refusal never disagree. The password is
    checked and forgotten: nothing is stored or logged. `words` is the member's address and name
    as the page shows them (so their own name counts as guessable)."""
    spent = throttle.spend(throttle.parsed_limit(STRENGTH_IP_LIMIT), "strength-ip", throttle.client_ip())
    if spent is not None and not spent.allowed:  # a hint, not a password oracle for a script
        return throttled(jsonify(error="too many strength checks"), spent.reset)
    password = (request.form.get("password") or "")[:MAX_PASSWORD_LENGTH]
    email, _, name = (request.form.get("words") or "")[:500].partition(" ")  # "address name", as the page has it
    result = password_strength.estimate(password, password_strength.member_words(email, name))
    if 0 < len(password) < MIN_PASSWORD_LENGTH:
        result = password_strength.Strength(
            result.score, result.label, False, f"Use at least {MIN_PASSWORD_LENGTH} characters."
        )
    return jsonify(score=result.score, label=result.label, acceptable=result.acceptable, reason=result.reason)


def _link_invalid() -> Response:
    return make_response(
        render_template("auth/link_invalid.html", again=url_for("recovery.forgot"), what="password reset"), 400
    )


@bp.route("/password/reset", methods=["GET", "POST"])
def reset() -> Response | str:
    form = ResetForm()
    token = request.values.get("token")
    link = reset_link(token)
    if link is None:
        return _link_invalid()
    form.strength_words = password_strength.member_words(link.user.email, link.user.name)
    if request.method == "GET":
        form.token.data = token
        return render_template("auth/reset.html", form=form, email=link.user.email, **new_password_context(link.user))
    if not form.validate_on_submit():
        return make_response(
            render_template("auth/reset.html", form=form, email=link.user.email, **new_password_context(link.user)), 400
        )
    try:
        ended = complete_reset(link, form.new.data, form.disconnect_apps.data)
    except MemberError as exc:  # refused before anything was written: the link stays usable
        return make_response(
            render_template(
                "auth/reset.html", form=form, email=link.user.email, error=str(exc), **new_password_context(link.user)
            ),
            400,
        )
    except links.LinkAlreadyUsed:  # another request used the link first; nothing was written here
        return _link_invalid()
    remember_device(link.user)  # this browser proved the mailbox: a known browser for the account
    db.session.commit()
    send_later(security_notice(link.user, "Your password was reset with a link sent to this address"))
    # Asked for from an app's sign-in in this browser: the login page goes on with it.
    after = session.pop(AFTER_RESET, None)
    back = safe_next(after.get("p")) if isinstance(after, dict) else None
    app_name = after.get("a") if back and isinstance(after.get("a"), str) else None
    flash(
        "Your password is changed and you are signed out everywhere"
        + (", and every app is disconnected" if "tokens_revoked" in ended else "")
        + (
            f"; the change of your address to {ended['email_change_cancelled']} is cancelled"
            if "email_change_cancelled" in ended
            else ""
        )
        + ". Sign in with your new password"
        + (f" to continue to {app_name}." if app_name else ".")
    )
    return redirect(back or url_for("auth.login"), 303)
