"""The consent page: the app, and each requested scope in plain words. Allow or Deny."""

from __future__ import annotations

from flask import Blueprint, Response, redirect, render_template, request, url_for
from wtforms import HiddenField

from app.core.adapters import CheckedForm
from app.core.scopes import scope_list
from app.core.security import allow_form_redirect
from app.protocol import authorize
from app.protocol.untrusted import UntrustedRequest
from app.services.consent import describe
from app.services.sessions import current_login

bp = Blueprint("consent", __name__)


class ConsentForm(CheckedForm):
    interaction = HiddenField()


def _interaction_and_login():
    """The pending request, and the login that may answer it: None when the member must sign in
    (again) first, by the same rule as the authorization endpoint (`prompt=login`, `max_age`,
    `id_token_hint`), so the consent page is no way around it."""
    interaction = authorize.find_interaction(request.values.get("interaction"), with_login=True)
    login = current_login()  # read with the request
    return interaction, None if authorize.consent_needs_login(interaction, login) else login


@bp.get("/consent")
def show() -> Response | str:
    interaction, login = _interaction_and_login()
    if login is None:
        return redirect(url_for("auth.login", interaction=interaction.id))
    requested = interaction.client.get_allowed_scope(interaction.params.get("scope"))
    allow_form_redirect(interaction.params.get("redirect_uri") or interaction.client.get_default_redirect_uri())
    # The page writes its forms' two hidden fields out (the request's CSRF token and this id), as
    # the login page does: a ConsentForm built only to carry them signs a token it never shows.
    return render_template(
        "consent/consent.html",
        interaction_id=interaction.id,
        client=interaction.client,
        user=login.user,
        scopes=describe(scope_list(requested), login.user.tier),
    )


@bp.post("/consent")
def decide() -> Response:
    form = ConsentForm()
    interaction, login = _interaction_and_login()
    if login is None:
        return redirect(url_for("auth.login", interaction=interaction.id))
    if not form.validate_on_submit():
        raise UntrustedRequest("Form expired", "The consent form expired. Go back to the application and start again.")
    allow = request.form.get("decision") == "allow"
    ticked = request.form.getlist("scope")
    return authorize.complete_consent(interaction, allow, ticked)
