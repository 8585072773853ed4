"""Where this provider bends Authlib: every override of its behaviour, and every use of its
internals, in one file, each with the reason (Flask's, Flask-WTF's, Flask-Limiter's, limits' and
psycopg's are in app/core/adapters.py).

An upgrade of either library is checked here first, and `tests/unit/test_adapters.py` pins the
library behaviour each piece relies on or corrects: when a new version changes it, that test
fails and names the piece to look at (the versions are locked in requirements.lock).
"""

from __future__ import annotations

from typing import Any

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Request
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Request, UnsupportedResponseTypeError
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc6750 import BearerTokenValidator, InsufficientScopeError, InvalidTokenError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.rpinitiated import EndSessionEndpoint
from flask import request as flask_request
from joserfc.errors import JoseError

from app.core.capabilities import CODE_CHALLENGE_METHODS, RESPONSE_TYPES
from app.protocol.tokens import bearer_value

# -- Authlib ----------------------------------------------------------------------------------------


class S256CodeChallenge(CodeChallenge):
    """PKCE (RFC 7636), S256 only, required of every client unless an admin relaxed it. Authlib's
    CodeChallenge accepts `plain`, defaults a missing method to `plain`, and requires PKCE of
    public clients only; this closes all three gaps."""

    DEFAULT_CODE_CHALLENGE_METHOD = CODE_CHALLENGE_METHODS[0]
    SUPPORTED_CODE_CHALLENGE_METHOD = list(CODE_CHALLENGE_METHODS)

    def validate_code_challenge(self, grant: Any, redirect_uri: str | None) -> None:
        request = grant.request
        challenge = request.payload.data.get("code_challenge")
        method = request.payload.data.get("code_challenge_method")
        if grant.client_requires_pkce(request.client) or challenge or method:
            if not challenge:
                raise InvalidRequestError("PKCE is required: missing 'code_challenge'.")
            if not method:
                raise InvalidRequestError("PKCE is required: missing 'code_challenge_method' (use S256).")
            if method not in CODE_CHALLENGE_METHODS:
                raise InvalidRequestError("Unsupported 'code_challenge_method': only S256 is accepted.")
        super().validate_code_challenge(grant, redirect_uri)


class OnlyCodeResponseType(UnsupportedResponseTypeError):
    """A fixed description: Authlib's echoes the requested value, which may hold anything (and a
    quote or backslash in a description makes Authlib raise ValueError - a 500)."""

    def get_error_description(self) -> str:
        return f"Only response_type={' '.join(RESPONSE_TYPES)} is supported."


class StoredAuthorizationRequest(OAuth2Request):
    """An authorization request rebuilt from the parameters parked in an Interaction, so the flow
    resumes after login or consent without trusting anything the browser sends back. Authlib has
    no such request: it builds one from the HTTP request only."""

    def __init__(self, params: dict[str, str]):
        super().__init__("GET", flask_request.url, headers=flask_request.headers)
        self.payload = BasicOAuth2Payload(params)

    @property
    def args(self) -> dict[str, str]:
        return self.payload.data

    @property
    def form(self) -> dict[str, str]:
        return {}


class FlaskAuthorizationServer(AuthorizationServer):
    """Authlib's Flask server, taking an already built request (a StoredAuthorizationRequest) as
    it is. Client authentication is ours (app/protocol/server.py), through Authlib's public hooks."""

    def create_oauth2_request(self, request: OAuth2Request | None) -> OAuth2Request:
        if isinstance(request, OAuth2Request):
            return request
        # The request object itself, not Flask's proxy to it: Authlib reads the parameters dozens
        # of times per request, and each read through the proxy looks the request up again.
        return FlaskOAuth2Request(flask_request._get_current_object())  # type: ignore[attr-defined]


def is_wired(server: AuthorizationServer) -> bool:
    """Whether grants are registered on `server` already. Authlib's server is a process-wide
    singleton here while apps are created several times per process (the tests), and Authlib
    offers no public way to ask: its `_authorization_grants` list is read."""
    return bool(server._authorization_grants)


class InsufficientScopeChallenge(InsufficientScopeError):
    """RFC 6750 3: a token without the scope the resource needs is refused with a Bearer
    challenge too; Authlib's InsufficientScopeError carries none."""

    def get_headers(self) -> list[tuple[str, str]]:
        challenge = f'Bearer error="{self.error}", error_description="{self.description}"'
        return [*super().get_headers(), ("WWW-Authenticate", challenge)]


class ChallengingBearerTokenValidator(BearerTokenValidator):
    """Authlib's bearer validation, its insufficient-scope refusal with the challenge above."""

    def validate_token(self, token: Any, scopes: Any, request: Any) -> None:
        try:
            super().validate_token(token, scopes, request)
        except InsufficientScopeError as error:
            raise InsufficientScopeChallenge() from error


class BearerOnlyResourceProtector(ResourceProtector):
    """A missing or non-Bearer Authorization is `invalid_token` with a Bearer challenge, as
    node-oidc-provider answers, instead of Authlib's generic `missing_authorization` and
    `unsupported_token_type` errors."""

    def parse_request_authorization(self, request: OAuth2Request) -> tuple[BearerTokenValidator, str]:
        value = bearer_value(request.headers.get("Authorization"))
        if value is None:
            raise InvalidTokenError(description="No valid Bearer access token was provided.")
        return self._token_validators["bearer"], value


BAD_ID_TOKEN_HINT = "The 'id_token_hint' is not a valid ID token from this provider."
MAX_ID_TOKEN_HINT_LENGTH = 8192


class CheckedEndSessionEndpoint(EndSessionEndpoint):
    """Authlib's RP-Initiated Logout endpoint, through public hooks of our own where Authlib keeps
    the decision in private methods:

    - `_validate_id_token_hint` checks only the signature, and puts joserfc's message (which may
      hold a quote) into its error, which then fails with a ValueError: any malformed hint is one
      fixed protocol error here, and `accept_id_token_hint(claims)` decides the rest;
    - `_is_valid_post_logout_redirect_uri` reads RFC 7591 client metadata: `is_registered_post_logout_uri`
      decides instead.
    `read_id_token_hint` is the check for other callers (the authorization endpoint's hint)."""

    def accept_id_token_hint(self, claims: dict[str, Any]) -> bool:
        return True

    def is_registered_post_logout_uri(self, client: Any, uri: str) -> bool:
        return False

    def read_id_token_hint(self, id_token_hint: str) -> dict[str, Any]:
        return self._validate_id_token_hint(id_token_hint)

    def _validate_id_token_hint(self, id_token_hint: str) -> dict[str, Any]:
        if len(id_token_hint) > MAX_ID_TOKEN_HINT_LENGTH:
            raise InvalidRequestError(BAD_ID_TOKEN_HINT)
        try:
            claims: dict[str, Any] = super()._validate_id_token_hint(id_token_hint)
        except (OAuth2Error, JoseError, ValueError, TypeError, KeyError) as exc:
            raise InvalidRequestError(BAD_ID_TOKEN_HINT) from exc
        if not self.accept_id_token_hint(claims):
            raise InvalidRequestError(BAD_ID_TOKEN_HINT)
        return claims

    def _is_valid_post_logout_redirect_uri(self, client: Any, post_logout_redirect_uri: str) -> bool:
        return self.is_registered_post_logout_uri(client, post_logout_redirect_uri)
