"""The protocol endpoints beyond authorize/token/userinfo, as Authlib endpoint subclasses:

- revocation (RFC 7009): a client revokes its own tokens; revoking a refresh token ends the
  whole grant family (every access and refresh token descended from the same code);
- introspection (RFC 7662): a client asks whether one of its tokens is active, and what for;
- end session (OpenID Connect RP-Initiated Logout 1.0): an app signs the member out of the
  provider, identified by an ID token it holds (`id_token_hint`), even an expired one.

Authlib drives the protocol; these subclasses supply our storage (tokens are found by hash), the
key set the ID tokens are verified against, and robust handling of hostile input.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Request
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from flask import current_app, g

from app.core.capabilities import INTROSPECTION_AUTH_METHODS, REVOCATION_AUTH_METHODS, SIGNING_ALG
from app.core.extensions import db
from app.core.scopes import grantable, join, scope_list
from app.models.base import utcnow
from app.protocol.adapters import CheckedEndSessionEndpoint
from app.protocol.jwks import keystore
from app.services.sessions import end_login
from app.store import store, tokens
from app.store.apps import App

ACCESS_TOKEN = "access_token"
REFRESH_TOKEN = "refresh_token"


@dataclass
class PresentedToken:
    """A token row seen through the token that was presented: the access token or the refresh
    token of that row, which expire and stop being usable at different times."""

    row: tokens.StoredToken
    kind: str

    def check_client(self, client: App) -> bool:
        return self.row.client_id == client.id

    def expires_at(self) -> datetime | None:
        return self.row.access_expires_at if self.kind == ACCESS_TOKEN else self.row.refresh_expires_at

    def is_expired(self) -> bool:
        expires = self.expires_at()
        return expires is None or utcnow() >= expires

    def is_revoked(self) -> bool:
        # A rotated-out refresh token is no longer usable, nor a suspended member's or a disabled
        # app's token: for introspection each is inactive.
        return (
            self.row.revoked_at is not None
            or (self.kind == REFRESH_TOKEN and self.row.refresh_used_at is not None)
            or self.row.is_barred()
        )


def find_presented_token(value: str, hint: str | None) -> PresentedToken | None:
    """The token `value` names, looking first where the hint points (a hint is only a hint:
    RFC 7009 section 2.1 and RFC 7662 section 2.1 ask the server to look further)."""
    finders = [(ACCESS_TOKEN, store().tokens.find_access), (REFRESH_TOKEN, store().tokens.find_refresh)]
    if hint == REFRESH_TOKEN:
        finders.reverse()
    for kind, find in finders:
        row = find(value)
        if row is not None:
            return PresentedToken(row, kind)
    return None


class TokenParameter:
    """`token` is required; `token_type_hint` is only a hint, so an unknown value is ignored
    (RFC 7662 section 2.1) rather than refused with Authlib's 401 `unsupported_token_type`."""

    def check_params(self, request: OAuth2Request, client: App) -> None:
        if not request.form.get("token"):
            raise InvalidRequestError("Missing 'token' parameter.")


class Revocation(TokenParameter, RevocationEndpoint):
    """RFC 7009. Authlib answers 200 for an unknown token and refuses a token of another
    client; we decide what revoking means."""

    CLIENT_AUTH_METHODS = list(REVOCATION_AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> PresentedToken | None:
        return find_presented_token(token_string, token_type_hint)

    def revoke_token(self, token: PresentedToken, request: OAuth2Request) -> None:
        """A refresh token: the whole grant family (every token descended from the same
        authorization code). An access token: its row, so the refresh token issued with it
        goes too (RFC 7009 section 2.1 allows it; the app asked to end this access)."""
        if token.kind == REFRESH_TOKEN:
            store().tokens.revoke_grant(token.row.grant_id)
        else:
            store().tokens.revoke(token.row.id)
        db.session.commit()


class Introspection(TokenParameter, IntrospectionEndpoint):
    """RFC 7662. Only the client a token was issued to may introspect it; for anyone else, and
    for an unknown, expired, revoked or rotated-out token, the answer is `{"active": false}`."""

    CLIENT_AUTH_METHODS = list(INTROSPECTION_AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> PresentedToken | None:
        return find_presented_token(token_string, token_type_hint)

    def check_permission(self, token: PresentedToken, client: App, request: OAuth2Request) -> bool:
        return token.check_client(client)

    def introspect_token(self, token: PresentedToken) -> dict[str, Any]:
        row = token.row
        expires_at = token.expires_at()
        assert expires_at is not None  # an active token has the expiry of its kind
        payload: dict[str, Any] = {
            "active": True,
            # Reach follows the membership now, not at consent: a downgraded member's token no
            # longer carries the scopes the lower tier lacks (the one rule in app/core/scopes.py).
            "scope": join(grantable(scope_list(row.scope), row.user.tier)),
            "client_id": row.client.client_id,
            "sub": row.user.sub,
            "iss": current_app.config["ISSUER_URL"],
            "exp": int(expires_at.timestamp()),
            "iat": int(row.issued_at.timestamp()),
        }
        if token.kind == ACCESS_TOKEN:
            payload["token_type"] = "Bearer"  # RFC 6749 section 5.1 types describe access tokens only
        if row.resource is not None:
            payload["aud"] = row.resource  # RFC 8707: the one resource the token is for
        return payload


class EndSession(CheckedEndSessionEndpoint):
    """RP-Initiated Logout 1.0. The hint is verified against the published key set - which
    still holds a retired key until every token it signed has expired - and accepted even when
    expired, as the spec asks. Redirects only to a post-logout URI registered for the client."""

    def get_server_jwks(self) -> dict[str, Any]:
        return keystore.public_key_set()

    def get_algorithms(self) -> list[str]:
        return [SIGNING_ALG]

    def accept_id_token_hint(self, claims: dict[str, Any]) -> bool:
        """Signed by one of our keys is not enough: the issuer must be us, with a subject."""
        return claims.get("iss") == current_app.config["ISSUER_URL"] and isinstance(claims.get("sub"), str)

    def is_registered_post_logout_uri(self, client: App, uri: str) -> bool:
        # Exact string match against the client's registered list (our column, not RFC 7591 metadata).
        return uri in (client.post_logout_redirect_uris or [])

    def is_post_logout_redirect_uri_legitimate(
        self, request: OAuth2Request, post_logout_redirect_uri: str, client: App, logout_hint: str | None
    ) -> bool:
        """Without an ID token, the redirect is legitimate once the member confirmed the sign-out
        on our page (the URI is still exactly one registered for the client)."""
        return bool(g.get("end_session_confirmed"))

    def end_session(self, end_session_request: Any) -> None:
        end_login()
        db.session.commit()


revocation = Revocation()
introspection = Introspection()
end_session = EndSession()


def read_id_token_hint(id_token_hint: str) -> dict[str, Any]:
    """The claims of an ID token this provider issued (expired or not), or InvalidRequestError.
    Shared by the end-session endpoint and the authorization endpoint's `id_token_hint`."""
    return end_session.read_id_token_hint(id_token_hint)
