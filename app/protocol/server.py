"""The authorization server and the resource protector, wired once.

Authlib supplies the protocol machinery; this module plugs in our storage, client
authentication, token generator, grants and extensions."""

from __future__ import annotations

import os

from authlib.integrations.flask_oauth2.signals import client_authenticated, token_authenticated
from authlib.oauth2.rfc6749 import OAuth2Request
from authlib.oauth2.rfc9207 import IssuerParameter
from flask import Flask, current_app, g

from app.core import logs
from app.core.capabilities import TOKEN_AUTH_METHODS
from app.protocol import client_auth, endpoints
from app.protocol.adapters import BearerOnlyResourceProtector, FlaskAuthorizationServer, S256CodeChallenge, is_wired
from app.protocol.grants import AuthorizationCodeGrant, RefreshTokenGrant
from app.protocol.oidc import CodeIDToken, RefreshIDToken
from app.protocol.userinfo import AccessTokenValidator, UserInfo
from app.store import store
from app.store.apps import App
from app.store.tokens import StoredToken


def query_client(client_id: str | None) -> App | None:
    """An active app by its public id (a disabled app does not exist for the protocol)."""
    app = store().apps.by_client_id(client_id)
    return app if app is not None and app.is_active else None


class CreditsAuthorizationServer(FlaskAuthorizationServer):
    def authenticate_client(self, request: OAuth2Request, methods: list[str], endpoint: str = "token") -> App:
        """One client, authenticated one way (app/protocol/client_auth.py), for the token, revocation
        and introspection endpoints alike. The client that authenticated is kept for the rest of the
        request: CORS answers its origins, not those of whatever the request also names."""
        client_auth.check_request(request.headers, request.form, request.args)
        client = super().authenticate_client(request, methods, endpoint)
        g.authenticated_client = client
        return client


class IssuerIdentification(IssuerParameter):
    """RFC 9207: every authorization response names the issuer."""

    def get_issuer(self) -> str:
        return current_app.config["ISSUER_URL"]


def _note_client(sender: object, client: App | None = None, **kwargs: object) -> None:
    """The access line names the app that authenticated at the token endpoint."""
    if client is not None:
        logs.note(client_id=client.client_id)


def _note_token(sender: object, token: StoredToken | None = None, **kwargs: object) -> None:
    """The access line names the app and the member behind a bearer token."""
    if token is not None:
        logs.note(client_id=token.client.client_id, user_id=token.user_id)


server = CreditsAuthorizationServer()
issuer_parameter = IssuerIdentification()
require_oauth = BearerOnlyResourceProtector()
require_oauth.register_token_validator(AccessTokenValidator())


def init_oauth(app: Flask) -> None:
    # Transport security is enforced by the ISSUER_URL check at startup (https outside
    # loopback); behind a TLS-terminating proxy the request itself may arrive over http.
    os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = None
    # No save_token and no token generator of the server's: each grant draws its pair and stores it
    # as it spends the code or refresh token (app/protocol/grants.py: PairStoredAsSpent).
    server.init_app(app, query_client=query_client)
    server.scopes_supported = None  # unknown scopes are dropped by the client filter, not rejected
    for method in TOKEN_AUTH_METHODS:
        server.register_client_auth_method(method, client_auth.METHODS[method])
    if not is_wired(server):  # the singleton is wired once per process
        server.register_grant(AuthorizationCodeGrant, [S256CodeChallenge(required=True), CodeIDToken()])
        server.register_grant(RefreshTokenGrant, [RefreshIDToken()])
        server.register_extension(issuer_parameter)
        server.register_endpoint(UserInfo(resource_protector=require_oauth))
        server.register_endpoint(endpoints.revocation)
        server.register_endpoint(endpoints.introspection)
        server.register_endpoint(endpoints.end_session)
        # Authlib's signals are process-wide: listen to our own server and protector only.
        client_authenticated.connect(_note_client, sender=server)
        token_authenticated.connect(_note_token, sender=require_oauth)
