"""Userinfo (OIDC Core 5.3): the member's claims, for a bearer of an access token with `openid`.

Authlib's endpoint answers it inside Flask: every error (no token, a bad one, too narrow a scope,
in RFC 6750's words with `WWW-Authenticate`) and anything unusual (POST, a query string). The
common case - a relying party's `GET` with a good token - is answered at the front
(app/protocol/front.py), before Flask, by the same rules: the one bearer rule (tokens.live_bearer),
Authlib's own scope check, the same claims (oidc.user_claims) in the same JSON, with the same
headers. A request the front declines reaches Flask with the front's lookup kept
(tokens.request_bearer): a refused token costs one query, as it did before the front.
"""

from __future__ import annotations

from typing import Any

from authlib.consts import default_json_headers
from authlib.oidc.core import UserInfo as UserInfoClaims
from authlib.oidc.core import UserInfoEndpoint
from flask import Flask, current_app, request
from sqlalchemy.exc import SQLAlchemyError

from app.core import logs
from app.core.capabilities import USERINFO_PATH
from app.core.security import BEARER_READ_HEADERS
from app.protocol import tokens
from app.protocol.adapters import ChallengingBearerTokenValidator
from app.protocol.front import Answer, Answerer, serving
from app.protocol.oidc import user_claims
from app.store.members import Member
from app.store.tokens import StoredToken

REQUIRED_SCOPE = "openid"
ENDPOINT = "oauth.userinfo"


class AccessTokenValidator(ChallengingBearerTokenValidator):
    """Userinfo's bearer tokens, by the same rule as the /v1 data API's (tokens.live_bearer)."""

    def authenticate_token(self, token_string: str) -> StoredToken | None:
        """`token_string` is the request's own header's token (BearerOnlyResourceProtector reads it
        with tokens.bearer_value), so the lookup the front may have made already answers."""
        return tokens.request_bearer(request.environ)


class UserInfo(UserInfoEndpoint):
    """Authlib's endpoint, with our claims and issuer."""

    def generate_user_info(self, user: Member, scope: str) -> UserInfoClaims:
        return user_claims(user, scope)

    def get_issuer(self) -> str:
        return current_app.config["ISSUER_URL"]


def answerers(app: Flask) -> dict[str, Answerer]:
    def answer(environ: dict[str, Any]) -> Answer | None:
        if environ.get("REQUEST_METHOD") != "GET" or environ.get("QUERY_STRING"):
            return None
        if tokens.bearer_value(environ.get("HTTP_AUTHORIZATION")) is None:
            return None
        with serving(app, environ):
            try:
                token = tokens.request_bearer(environ)
            except SQLAlchemyError:
                return None  # Flask's route tries again, and answers an outage in its own words
            if token is None or AccessTokenValidator.scope_insufficient(token.scope, [REQUIRED_SCOPE]):
                return None
            body = app.json.dumps(user_claims(token.user, token.scope)).encode()
            member = logs.member_hash(token.user_id)
        headers = [*default_json_headers, ("Content-Length", str(len(body)))]
        if "HTTP_ORIGIN" in environ:
            headers += BEARER_READ_HEADERS
        return Answer(ENDPOINT, 200, headers, body, token.client.client_id, member)

    return {USERINFO_PATH: answer}
