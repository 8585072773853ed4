"""The authorization endpoint's decisions, in the order OIDC Core 3.1.2 takes them:

1. trust: is the client known and the redirect_uri registered for it? If not, an error page
   and never a redirect (RFC 6749 4.1.2.1);
2. validity: response_type, PKCE, scope, prompt, max_age (errors redirect, with `iss`);
3. login: is a member signed in, recently enough? Else park the request, hand off to /login;
4. consent: has the member granted these scopes to this app? Else hand off to /consent;
5. issue the code.

Login and consent pages live outside this module; they call `resume` or `complete_consent`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    AccessDeniedError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Request,
)
from authlib.oidc.core.errors import (
    ConsentRequiredError,
    LoginRequiredError,
    RequestNotSupportedError,
    RequestURINotSupportedError,
)
from flask import current_app, redirect, url_for
from werkzeug.wrappers import Response

from app.core import metrics
from app.core.assurance import MFA, acr_for, wants_mfa
from app.core.capabilities import AUTHORIZE_PATH
from app.core.extensions import db
from app.core.scopes import grantable, join, scope_list
from app.models.base import new_secret, sha256_hex, utcnow
from app.protocol.adapters import OnlyCodeResponseType, StoredAuthorizationRequest
from app.protocol.endpoints import read_id_token_hint
from app.protocol.grants import draw_code
from app.protocol.resources import authorized_resource
from app.protocol.server import issuer_parameter, server
from app.protocol.untrusted import UntrustedRequest
from app.services.agent_clients import agent_app
from app.services.audit import event_row
from app.services.client_documents import DocumentRefused, looks_like_document_id
from app.services.consent import answer_request, consented_scope, decide_granted, missing_scopes, remembered_scopes
from app.services.second_factor import has_second_factor
from app.services.sessions import browser_id, current_login, known_login, login_cookie, touch
from app.store import store
from app.store.apps import App
from app.store.logins import Login
from app.store.pending_requests import PendingRequest

# The parameters parked with a pending request; anything else is ignored (OIDC Core 3.1.2.1).
PARKED_PARAMS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "prompt",
    "max_age",
    "login_hint",
    "id_token_hint",
    "display",
    "ui_locales",
    "claims_locales",
    "acr_values",
    "response_mode",
    "resource",
)
MAX_PARAM_LENGTH = 4096
# OIDC Core 3.1.2.1: seconds, a non-negative integer. ASCII digits only: str.isdigit() also
# accepts "²", which int() then refuses.
MAX_AGE = re.compile(r"[0-9]{1,12}")
KNOWN_PROMPTS = {"none", "login", "consent", "select_account"}


# A second answer to a request already answered (a double click, a reload): the first one went through.
ANSWERED_ALREADY = "Your first answer was sent to the application: go back to it."


UNKNOWN_CLIENT_HINT = (
    "No app has this client_id: it is matched exactly (no spaces, same case). Copy it from the app's "
    "page in the Credits ID console, and check that the app points at this issuer (its discovery URL) "
    "and not another environment's. A deleted app's client_id stays refused."
)
MISSING_CLIENT_HINT = (
    "Send the app's client_id (from its page in the Credits ID console) with the authorization request."
)

REDIRECT_HINT = (
    "Redirect URIs are matched exactly (scheme, host, port, path and query). Register this address "
    "for the app in the Credits ID console (its page, then Edit), or send one of the addresses "
    "registered there."
)


def _agent(client_id: str) -> App:
    """An AI agent known by its Client ID Metadata Document (app/services/agent_clients.py), or
    an error page saying why its document cannot be used (never a redirect: its redirect URIs
    are what could not be checked)."""
    try:
        agent = agent_app(client_id)
        db.session.commit()  # the copy just read is kept whatever this request's outcome (the cache)
        return agent
    except DocumentRefused as refused:
        raise UntrustedRequest(
            "Agent not recognised",
            "The AI agent that sent you here could not be identified, so you were not signed in to it.",
            developer_hint=f"Client ID Metadata Document {client_id[:255]}: {refused}",
        ) from None


def trusted_destination(payload: Any) -> tuple[App, str]:
    """The client and the redirect_uri errors may be sent to, or UntrustedRequest."""
    client_id = payload.data.get("client_id")
    if not client_id:
        raise UntrustedRequest(
            "Missing application",
            "The sign-in link does not name an application (client_id).",
            developer_hint=MISSING_CLIENT_HINT,
        )
    client = (
        _agent(str(client_id))
        if looks_like_document_id(str(client_id))
        else store().apps.by_client_id(str(client_id)[:255])
    )
    if client is None or client.is_deleted:
        raise UntrustedRequest(
            "Unknown application",
            "The application that sent you here is not registered with Credits ID.",
            client_id=str(client_id),
            developer_hint=UNKNOWN_CLIENT_HINT,
        )
    if not client.is_active:
        raise UntrustedRequest(
            "Application disabled",
            f"{client.name} has been disabled by its administrator.",
            403,
            app_name=client.name,
            developer_hint="A disabled app's sign-ins and tokens are refused until it is enabled again in the console.",
        )
    requested = payload.data.get("redirect_uri")
    if requested is not None:
        if len(payload.datalist.get("redirect_uri", [])) > 1:
            raise UntrustedRequest(
                "Unregistered redirect address",
                f"{client.name} sent more than one address to return you to.",
                app_name=client.name,
                developer_hint="Send redirect_uri once.",
            )
        if not client.check_redirect_uri(requested):
            raise UntrustedRequest(
                "Unregistered redirect address",
                f"The address {client.name} asked to return you to is not registered for it.",
                app_name=client.name,
                redirect_uri=str(requested),
                developer_hint=REDIRECT_HINT,
            )
        return client, requested
    default = client.get_default_redirect_uri()
    if default is None:
        raise UntrustedRequest(
            "Missing redirect address",
            f"{client.name} must say where to return you (redirect_uri).",
            app_name=client.name,
            developer_hint="An app with more than one registered redirect URI must send redirect_uri with each request.",
        )
    return client, default


def _validate_shape(oauth_request: OAuth2Request) -> None:
    """Checks Authlib leaves to us: request objects, response_type presence, sizes, prompt, max_age,
    response_mode, and the resource asked for (RFC 8707: one the provider protects)."""
    payload = oauth_request.payload
    # OIDC Core 6.1 and 6.2: a provider that does not take request objects says so rather than
    # ignoring them (the parameters inside would be lost without a word). Checked first: a client
    # sending one may have put response_type inside it. Discovery advertises both as unsupported.
    if payload.data.get("request") is not None:
        raise RequestNotSupportedError("Request objects ('request') are not supported: send the parameters as such.")
    if payload.data.get("request_uri") is not None:
        raise RequestURINotSupportedError("'request_uri' is not supported: send the parameters as such.")
    response_type = payload.data.get("response_type")
    if not response_type:
        raise InvalidRequestError("Missing 'response_type' parameter.")
    if response_type != "code":
        raise OnlyCodeResponseType(response_type)
    for name in PARKED_PARAMS:
        if len(payload.data.get(name) or "") > MAX_PARAM_LENGTH:
            raise InvalidRequestError(f"The '{name}' parameter is too long.")
    prompts = set(scope_list(payload.data.get("prompt")))
    if "none" in prompts and len(prompts) > 1:
        raise InvalidRequestError("prompt=none cannot be combined with other values.")
    max_age = payload.data.get("max_age")
    if max_age is not None and not MAX_AGE.fullmatch(max_age):
        raise InvalidRequestError("'max_age' must be a non-negative integer.")
    if payload.data.get("response_mode") not in (None, "query"):
        raise InvalidRequestError("Only response_mode=query is supported.")
    authorized_resource(oauth_request)


def _hinted_subject(params: Mapping[str, Any]) -> str | None:
    """The `sub` of a valid `id_token_hint` (OIDC Core 3.1.2.1; expired hints are fine), or None.
    A hint we did not issue is `invalid_request`."""
    hint = params.get("id_token_hint")
    if not hint:
        return None
    return read_id_token_hint(hint)["sub"]


def _login_is_fresh(login: Login, max_age: str | None) -> bool:
    if max_age is None:
        return True
    return utcnow() - login.auth_time <= timedelta(seconds=int(max_age))


def must_sign_in(
    params: Mapping[str, Any], login: Login | None, interaction: PendingRequest | None, hinted: str | None
) -> bool:
    """Whether the member must sign in (again) before the request goes on: no session, `prompt=login`,
    a login older than `max_age`, `acr_values` asking for two factors from a member who signed in
    with one but has a second, or an `id_token_hint` naming another member (OIDC Core 3.1.2.1),
    unless the login happened for this very request. Signing in again asks every factor again. One rule for the authorization endpoint
    and the consent page, so the consent page is no way around a required login."""
    if login is None:
        return True
    if interaction is not None and interaction.login_session_id == login.id:
        return False
    if "login" in scope_list(params.get("prompt")) or not _login_is_fresh(login, params.get("max_age")):
        return True
    if wants_mfa(params.get("acr_values")) and acr_for(login.amr.split()) != MFA and has_second_factor(login.user):
        return True  # the app asks for two factors and the member has a second one: sign in with it
    return hinted is not None and hinted != login.user.sub


def consent_needs_login(interaction: PendingRequest, login: Login | None) -> bool:
    """The consent page's use of the rule above (the request was checked when it was parked; a
    hint that no longer verifies sends the member to the login page, and from there the request
    ends with the error)."""
    try:
        hinted = _hinted_subject(interaction.params)
    except OAuth2Error:
        return True
    return must_sign_in(interaction.params, login, interaction, hinted)


def run(oauth_request: OAuth2Request, interaction: PendingRequest | None = None) -> Response:
    """Take the request as far as it can go: an error, a hand-off to a page, or a code."""
    payload = oauth_request.payload
    client, redirect_uri = trusted_destination(payload)
    try:
        _validate_shape(oauth_request)
        login = current_login()
        user = login.user if login else None
        grant = server.get_consent_grant(request=oauth_request, end_user=user)
        requested = scope_list(grant.request.scope)
        if "openid" not in requested:
            raise InvalidScopeError("The 'openid' scope is required.")

        prompts = set(scope_list(payload.data.get("prompt")))
        hinted = _hinted_subject(payload.data)  # checked even when no login is needed
        if login is None or must_sign_in(payload.data, login, interaction, hinted):
            if "none" in prompts:
                raise LoginRequiredError()
            return _hand_off("auth.login", oauth_request, client, interaction, login)
        user = login.user

        wanted = grantable(requested, user.tier)
        if client.trusted:
            granted = wanted
        else:
            # prompt=consent asks whatever was remembered: no need to read it.
            if "consent" in prompts or missing_scopes(wanted, remembered_scopes(user, client)):
                if "none" in prompts:
                    raise ConsentRequiredError()
                return _hand_off("consent.show", oauth_request, client, interaction, login)
            granted = wanted
        if interaction is not None and not store().requests.consume(interaction.id):
            raise UntrustedRequest(
                "Request already completed", "This sign-in request has already been used.", hint=ANSWERED_ALREADY
            )
        return _issue_code(oauth_request, grant, login, granted)
    except OAuth2Error as error:
        return error_redirect(oauth_request, error, redirect_uri)


def resume(interaction: PendingRequest) -> Response:
    """Continue a parked request right after the member signed in on the login page (the browser
    carried only the interaction's reference)."""
    return run(StoredAuthorizationRequest(interaction.params), interaction)


def complete_consent(interaction: PendingRequest, allow: bool, ticked: list[str] | None) -> Response:
    """The member's answer on the consent page: a code, or `access_denied`. Single use: the
    interaction is consumed atomically before anything is issued, in the same step as the consent
    it records, its audit line and the code (`answer_request`)."""
    oauth_request = StoredAuthorizationRequest(interaction.params)
    client, redirect_uri = trusted_destination(oauth_request.payload)
    login = current_login()
    if login is None:  # the consent page asks for a sign-in first (consent_needs_login); signed out since
        raise UntrustedRequest(
            "Signed out", "You were signed out before answering. Go back to the application and start again."
        )
    answered = False  # consumed by this answer, with the consent, its audit line and the code
    try:
        if not allow:
            raise AccessDeniedError("The member denied the request.")
        grant = server.get_consent_grant(request=oauth_request, end_user=login.user)
        asked = scope_list(grant.request.scope)
        granted = decide_granted(asked, ticked, login.user.tier)
        remembered = interaction.remembered
        if remembered is None:  # not read with the login
            remembered = tuple(remembered_scopes(login.user, client))
        event = event_row("consent.granted", actor=login.user, client=client, scopes=granted)
        scope = consented_scope(remembered, asked, granted)
        code = draw_code(_decided(oauth_request, login, granted), login.user_id)  # stored with the answer
        if not answer_request(interaction.id, login.user, client, scope, event, code.columns):
            raise _answered_already()
        answered = True
        metrics.consent_answered(allow, login.user.id, client.client_id)
        return _issue_code(oauth_request, grant, login, granted)
    except OAuth2Error as error:
        if not answered:  # denied, or no longer valid: the request is consumed all the same
            if not store().requests.consume(interaction.id):
                raise _answered_already() from None
            metrics.consent_answered(allow, login.user.id, client.client_id)
        db.session.commit()  # the request stays answered: a second answer is refused
        return error_redirect(oauth_request, error, redirect_uri)


def _answered_already() -> UntrustedRequest:
    return UntrustedRequest(
        "Request already completed", "This sign-in request has already been answered.", hint=ANSWERED_ALREADY
    )


def _decided(oauth_request: OAuth2Request, login: Login, granted: list[str]) -> OAuth2Request:
    """What the code will carry, set on the request: the granted scope, the login's time and methods."""
    oauth_request.granted_scope = join(granted)
    oauth_request.auth_time = login.auth_time
    oauth_request.amr = login.amr
    return oauth_request


def _issue_code(oauth_request: OAuth2Request, grant: Any, login: Login, granted: list[str]) -> Response:
    _decided(oauth_request, login, granted)
    touch(login)  # the account page's "last active"
    response = server.create_authorization_response(request=oauth_request, grant_user=login.user, grant=grant)
    # One unit of work for the answer: the request consumed, the consent, its audit line, the
    # session's last use and the code land together, before the browser is sent back with it.
    db.session.commit()
    return response


def error_redirect(oauth_request: OAuth2Request, error: OAuth2Error, redirect_uri: str) -> Response:
    """An OAuth error sent back to the (already validated) redirect_uri, with state and iss."""
    error.redirect_uri = redirect_uri
    error.state = oauth_request.payload.data.get("state")
    response = server.handle_error_response(oauth_request, error)
    issuer_parameter.add_issuer_parameter(server, response)
    return response


# -- pending requests (interactions) ------------------------------------------------------


def _hand_off(
    endpoint: str,
    oauth_request: OAuth2Request,
    client: App,
    interaction: PendingRequest | None,
    login: Login | None,
) -> Response:
    if interaction is None:
        interaction = park(oauth_request, client, login.user_id if login is not None else None)
        db.session.commit()  # the page the browser goes to next reads it
    return redirect(url_for(endpoint, interaction=interaction.id))


def park(oauth_request: OAuth2Request, client: App, user_id: str | None = None) -> PendingRequest:
    """Store the validated request; `user_id` is the member already signed in, if any (the login
    page sets it otherwise), so that disconnecting the app closes the request."""
    data = oauth_request.payload.data
    return store().requests.park(
        new_secret(24),
        {
            "client_id": client.id,
            "user_id": user_id,
            "params": {k: data.get(k) for k in PARKED_PARAMS if data.get(k) is not None},
            "browser_hash": sha256_hex(browser_id()),
            "expires_at": utcnow() + timedelta(seconds=int(current_app.config["INTERACTION_LIFETIME"])),
        },
        client,
    )


def find_interaction(uid: str | None, with_login: bool = False) -> PendingRequest:
    """The open interaction `uid` started by this browser, or UntrustedRequest. `with_login`: the
    browser's login is read in the same query (`current_login` then asks no more)."""
    interaction = None
    if uid and len(uid) <= 64:
        if with_login:
            interaction, login = store().requests.find_with_login(uid, login_cookie())
            if interaction is not None:  # (no row: the login is unknown, not absent)
                known_login(login)
        else:
            interaction = store().requests.find(uid)
    if interaction is None or interaction.browser_hash != sha256_hex(browser_id()):
        raise UntrustedRequest(
            "Sign-in request not found",
            "This sign-in request is unknown or was started in another browser. Go back to the application and start again.",
        )
    app = interaction.app
    app_name = app.name if not app.is_deleted else None
    if interaction.consumed_at is not None:
        raise UntrustedRequest(
            "Request already completed",
            "This sign-in request was already answered (the page was sent twice, or reloaded).",
            hint=ANSWERED_ALREADY,
            app_name=app_name,
        )
    if not interaction.is_open():
        minutes = max(1, int(current_app.config["INTERACTION_LIFETIME"]) // 60)
        restart = restart_path(interaction)
        raise UntrustedRequest(
            "Sign-in request expired",
            f"This sign-in request to {app_name or 'the application'} was open for {minutes} minutes and has "
            + ("expired. Start it again: you go on where you left off." if restart else "expired."),
            app_name=app_name,
            restart=restart,
            homepage=app.homepage_url if app.is_active else None,
        )
    return interaction


def restart_path(interaction: PendingRequest) -> str | None:
    """The authorization request of an expired `interaction` again, as a path on this site, when
    it can be rebuilt: its app is still active and its parameters were parked whole (the app's
    client_id among them). The endpoint checks it all again - redirect URI included - as for any
    request, and the app gets its answer with the state it sent, so its own check still holds."""
    params = {k: str(v) for k, v in interaction.params.items() if k in PARKED_PARAMS}
    if not interaction.app.is_active or params.get("client_id") != interaction.app.client_id:
        return None
    if "response_type" not in params:
        return None
    return f"{AUTHORIZE_PATH}?{urlencode(params)}"


def signed_in_for(interaction: PendingRequest, login: Login) -> PendingRequest:
    """The request as it reads once the member signed in for it on the login page (`start_login`
    attached the login to it: that satisfies `prompt=login` and `max_age`, and a disconnect of the
    app now closes the request)."""
    return interaction.with_login(login.id, login.user_id)
