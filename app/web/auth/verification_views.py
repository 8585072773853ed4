"""The pages of verification and invitation links: confirm an address, set a first password. The
rules live in app.services.verification (flush only); each route commits once, then sends the mail."""

from __future__ import annotations

from flask import Blueprint, Response, flash, make_response, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import HiddenField, PasswordField
from wtforms.validators import DataRequired, EqualTo, Length

from app.core.extensions import db
from app.models import LinkPurpose
from app.services import links, password_strength
from app.services.devices import remember_device
from app.services.mail import send_later
from app.services.members import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, MemberError
from app.services.sessions import current_user
from app.services.verification import accept_invitation, confirm
from app.web.auth.recovery_views import PASSWORD_HELP, new_password_context, refuse_weak

bp = Blueprint("verification", __name__)


class ConfirmForm(FlaskForm):
    token = HiddenField()


class InvitationForm(FlaskForm):
    token = HiddenField()
    new = PasswordField(
        "Password",
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
        "Password again", validators=[DataRequired(), EqualTo("new", message="The two passwords differ.")]
    )
    strength_words: list[str] = []  # the member's address and name, set by the view

    def validate_new(self, field: PasswordField) -> None:
        refuse_weak(field, self.strength_words)


def _invalid(what: str, again: str) -> Response:
    return make_response(render_template("auth/link_invalid.html", what=what, again=again), 400)


@bp.route("/email/verify", methods=["GET", "POST"])
def verify_email() -> Response | str:
    """A page with a button rather than a change on GET: mail scanners that open links must not
    use them up (or change an address) on their own."""
    form = ConfirmForm()
    token = request.values.get("token")
    link = links.find(token, LinkPurpose.VERIFY)
    if link is None:
        return _invalid("verification", url_for("account.show"))
    changing = link.email != link.user.email
    if request.method == "GET" or not form.validate_on_submit():
        form.token.data = token
        return render_template("auth/verify_email.html", form=form, email=link.email, changing=changing)
    user = link.user
    try:
        mails = confirm(link)
    except links.LinkAlreadyUsed:  # another request used the link first; nothing was written here
        return _invalid("verification", url_for("account.show"))
    except MemberError as exc:
        db.session.rollback()  # the new address was taken meanwhile: a failed flush must be rolled back
        return make_response(
            render_template("auth/verify_email.html", form=form, email=link.email, changing=changing, error=str(exc)),
            409,
        )
    db.session.commit()
    for mail in mails:
        send_later(mail)
    message = f"Your email address is now {user.email}." if changing else f"{user.email} is verified."
    viewer = current_user()
    if viewer is not None and viewer.id == user.id:
        flash(message)
        return redirect(url_for("account.show"), 303)
    flash(message + " Sign in to see your account.")
    return redirect(url_for("auth.login"), 303)


@bp.route("/invitation", methods=["GET", "POST"])
def invitation() -> Response | str:
    form = InvitationForm()
    token = request.values.get("token")
    link = links.find(token, LinkPurpose.INVITE)
    if link is None:
        return _invalid("invitation", url_for("recovery.forgot"))
    form.strength_words = password_strength.member_words(link.user.email, link.user.name)

    def page(status: int = 200, error: str | None = None) -> Response:
        return make_response(
            render_template(
                "auth/invitation.html", form=form, user=link.user, error=error, **new_password_context(link.user)
            ),
            status,
        )

    if request.method == "GET":
        form.token.data = token
        return page()
    if not form.validate_on_submit():
        return page(400)
    user = link.user
    try:
        accept_invitation(link, form.new.data)
    except MemberError as exc:  # refused before anything was written: the link stays usable
        return page(400, str(exc))
    except links.LinkAlreadyUsed:  # another request used the link first; nothing was written here
        return _invalid("invitation", url_for("recovery.forgot"))
    remember_device(user)
    db.session.commit()
    flash("Your password is set and your email address is verified. Sign in with your new password.")
    return redirect(url_for("auth.login"), 303)
