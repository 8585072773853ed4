"""Signing out at an app's request (OpenID Connect RP-Initiated Logout 1.0), as pages.

The protocol checks live in Authlib's EndSessionEndpoint (app/protocol/endpoints.py); this module
decides what the member sees:

- a valid `id_token_hint` naming the signed-in member (or nobody is signed in): the session ends
  at once, and the browser goes back to the app's registered `post_logout_redirect_uri`, with
  `state`, or to a "signed out" page;
- no valid hint, or a hint naming someone else: a confirmation page first, since anyone can
  link a member to this address (the spec's denial-of-service warning); after "Sign out" the
  same rules apply;
- a malformed request (a forged or foreign hint, `client_id` not the hint's audience): an
  error page and no redirect (RP-Initiated Logout section 4).
"""

from __future__ import annotations

from authlib.oauth2 import OAuth2Error
from flask import Blueprint, Response, g, render_template, request
from flask_wtf import FlaskForm
from wtforms import HiddenField

from app.core.capabilities import END_SESSION_PATH
from app.core.extensions import csrf
from app.core.security import allow_form_redirect
from app.protocol.server import server
from app.protocol.untrusted import UntrustedRequest
from app.services.sessions import current_login

bp = Blueprint("logout", __name__)

# The request parameters the confirmation page carries over to its POST.
CARRIED = ("id_token_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales", "logout_hint")
MAX_CARRIED_LENGTH = 8192


class ConfirmLogoutForm(FlaskForm):
    id_token_hint = HiddenField()
    client_id = HiddenField()
    post_logout_redirect_uri = HiddenField()
    state = HiddenField()
    ui_locales = HiddenField()
    logout_hint = HiddenField()


def _validated():
    """Authlib's validation of the request in flight; protocol errors become an error page."""
    try:
        return server.validate_endpoint_request("end_session")
    except OAuth2Error as error:
        raise UntrustedRequest(
            "Sign-out request not valid",
            "The application's sign-out request could not be verified. You have not been signed out by it; "
            "you can sign out from your Credits ID page.",
        ) from error


def _needs_confirmation(req) -> bool:
    login = current_login()
    if req.needs_confirmation:  # no valid id_token_hint
        return True
    # A hint for another member than the one signed in here: ask before signing this one out.
    return login is not None and req.id_token_claims.get("sub") != login.user.sub


def _finish(req) -> Response | str:
    """End the session, then go back to the app when allowed, else say so on a page."""
    response = server.create_endpoint_response("end_session", req)
    if response is not None:
        return response
    return render_template("auth/logout_done.html", client=req.client)


def end_session_request(data: dict) -> Response | str:
    """GET or POST from the app (no CSRF token: the request comes from another site)."""
    req = _validated()
    if _needs_confirmation(req):
        target = data.get("post_logout_redirect_uri")
        if req.client is not None and target in (req.client.post_logout_redirect_uris or []):
            allow_form_redirect(target)
        form = ConfirmLogoutForm(formdata=None, data={k: str(data.get(k) or "")[:MAX_CARRIED_LENGTH] for k in CARRIED})
        return render_template("auth/logout_confirm.html", form=form, client=req.client, login=current_login())
    return _finish(req)


def confirm_end_session() -> Response | str:
    """The member pressed "Sign out" on our confirmation page (CSRF-protected)."""
    form = ConfirmLogoutForm()
    if not form.validate_on_submit():
        raise UntrustedRequest("Form expired", "The sign-out form expired. Go back and try again.")
    g.end_session_confirmed = True
    return _finish(_validated())


# -- the routes, at the protocol's end-session path (discovery's end_session_endpoint) ----------


@bp.route(END_SESSION_PATH, methods=["GET", "POST"])
@csrf.exempt  # apps send members here from their own pages (RP-Initiated Logout section 2)
def end_session() -> Response | str:
    return end_session_request(request.values)


@bp.post(END_SESSION_PATH + "/confirm")
def end_session_confirm() -> Response | str:
    return confirm_end_session()
