"""The stack's floor: the cheapest OpenID provider Flask, Authlib and the HTTP server allow, for `make bench`.

Issue 7 compares Credits ID with node oidc-provider, which keeps everything in one process's
memory and hashes no password. This module is that provider's twin on our stack: the same client,
member, scopes, PKCE rule, refresh rotation and RS256 ID tokens, with Authlib's own grants
(AuthorizationCodeGrant + CodeChallenge + OpenIDCode, RefreshTokenGrant, UserInfoEndpoint), and
nothing else: no database, no audit, no CSRF, no security headers, no access log, no metrics, no
rate limits, no consent records beyond a set, no token hashing. It is not a product and is never
imported by `app/`: it answers one question, "what does Flask + Authlib + the HTTP server cost for
the peer's work before Credits ID adds anything?", so the peer ratios can be read against it.

Serve it with ONE worker process (`bench/run.py` does): its state lives in that process's memory,
like the peer's.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from html import escape

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Error, grants
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import UserInfo, UserInfoEndpoint
from authlib.oidc.core.grants import OpenIDCode, OpenIDToken
from flask import Flask, jsonify, redirect, request, session
from joserfc.jwk import KeySet, RSAKey

CLIENT_ID = "floor-conf"
CLIENT_SECRET = "floor-conf-secret-0123456789abcdef0123456789abcdef"
REDIRECT_URI = "http://127.0.0.1:7199/cb"  # the harness's callback; nothing listens there
USERNAME, PASSWORD = "alice", "correct horse battery staple"
SCOPES = ("openid", "profile", "email", "offline_access")


@cache
def signing_key() -> RSAKey:
    """One RSA key per process, made at first use (the bench imports this module for its
    constants only)."""
    return RSAKey.generate_key(2048, parameters={"kid": "floor-rs256-1", "use": "sig", "alg": "RS256"})


@dataclass
class Member:
    id: str = "user-1"
    name: str = "Alice Example"
    email: str = "alice@example.test"
    email_verified: bool = True

    def get_user_id(self) -> str:
        return self.id


MEMBER = Member()


@dataclass
class Client:
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    redirect_uris: tuple = (REDIRECT_URI,)
    client_metadata = {}

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in (scope or "").split() if s in SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "client_secret_basic"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


CLIENT = Client()


@dataclass
class Code:
    code: str
    redirect_uri: str
    scope: str
    nonce: str | None
    code_challenge: str
    code_challenge_method: str
    auth_time: int
    expires_at: float = field(default_factory=lambda: time.time() + 60)

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None

    def is_expired(self) -> bool:
        return time.time() > self.expires_at


@dataclass
class Token:
    access_token: str
    refresh_token: str | None
    scope: str
    issued_at: float = field(default_factory=time.time)
    expires_in: int = 3600
    revoked: bool = False
    user = MEMBER  # one member and one client, as the peer's configuration has
    client = CLIENT

    def check_client(self, client) -> bool:
        return client.get_client_id() == CLIENT_ID

    def get_client(self) -> Client:
        return self.client

    def get_user(self) -> Member:
        return self.user

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return self.expires_in

    def is_revoked(self) -> bool:
        return self.revoked

    def is_expired(self) -> bool:
        return time.time() > self.issued_at + self.expires_in


class Store:
    """Codes and tokens in memory, as the peer keeps them; one lock, since gthread runs threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes: dict[str, Code] = {}
        self.access: dict[str, Token] = {}
        self.refresh: dict[str, Token] = {}
        self.consented: set[str] = set()
        self.purge_above = CODES_KEPT

    def take_code(self, code: str) -> Code | None:
        with self.lock:
            return self.codes.pop(code, None)


# Codes the SSO test mints and never redeems are dropped once expired, when the store has grown past
# twice what the last purge kept: amortized, so no request pays for walking every code (a purge on
# every request past a fixed size made the floor's SSO cost grow with the test's length).
CODES_KEPT = 10_000
STORE = Store()


def user_info(user: Member, scope: str) -> UserInfo:
    granted = scope.split()
    claims = UserInfo(sub=user.id)
    if "profile" in granted:
        claims["name"] = user.name
    if "email" in granted:
        claims.update(email=user.email, email_verified=user.email_verified)
    return claims


class IDToken:
    """RS256 with the one key; the issuer is the host the request came to (loopback only)."""

    def get_client_algorithm(self, client) -> str:
        return "RS256"

    def get_encode_header(self, client) -> dict:
        return {"alg": "RS256", "kid": signing_key().kid, "typ": "JWT"}

    def resolve_client_private_key(self, client):
        return signing_key()

    def get_client_claims(self, client) -> dict:
        now = int(time.time())
        return {"iss": request.host_url.rstrip("/"), "aud": client.get_client_id(), "iat": now, "exp": now + 3600}

    def get_compatible_claims(self, request) -> dict:
        return self.get_client_claims(request.client)

    def generate_user_info(self, user, scope):
        return user_info(user, scope)


class CodeIDToken(IDToken, OpenIDCode):
    def exists_nonce(self, nonce, request) -> bool:
        return False


class RefreshIDToken(IDToken, OpenIDToken):
    pass


class PKCEForEveryClient(CodeChallenge):
    """S256 from every client, as the peer requires (Authlib's `required=True` covers public
    clients only)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri):
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge'")
        if data.get("code_challenge_method") != "S256":  # absent means "plain" (RFC 7636 4.3)
            raise InvalidRequestError("Unsupported 'code_challenge_method'")
        super().validate_code_challenge(grant, redirect_uri)


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

    def save_authorization_code(self, code: str, request) -> Code:
        data = request.payload.data
        item = Code(
            code,
            request.payload.redirect_uri,
            request.payload.scope,
            data.get("nonce"),
            data["code_challenge"],
            data["code_challenge_method"],
            session["auth_time"],
        )
        with STORE.lock:
            STORE.codes[code] = item
            if len(STORE.codes) > STORE.purge_above:
                STORE.codes = {k: v for k, v in STORE.codes.items() if not v.is_expired()}
                STORE.purge_above = max(CODES_KEPT, 2 * len(STORE.codes))
        return item

    def query_authorization_code(self, code: str, client) -> Code | None:
        item = STORE.codes.get(code)
        return item if item is not None and not item.is_expired() else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        STORE.take_code(authorization_code.code)

    def authenticate_user(self, authorization_code: Code) -> Member:
        return MEMBER


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation, as the peer

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        token = STORE.refresh.get(refresh_token)
        return token if token is not None and not token.revoked else None

    def authenticate_user(self, refresh_token: Token) -> Member:
        return refresh_token.user

    def revoke_old_credential(self, refresh_token: Token) -> None:
        with STORE.lock:
            refresh_token.revoked = True
            STORE.refresh.pop(refresh_token.refresh_token, None)
            STORE.access.pop(refresh_token.access_token, None)


def save_token(token: dict, request) -> None:
    item = Token(token["access_token"], token.get("refresh_token"), token["scope"])
    with STORE.lock:
        STORE.access[item.access_token] = item
        if item.refresh_token:
            STORE.refresh[item.refresh_token] = item


def query_client(client_id: str) -> Client | None:
    return CLIENT if client_id == CLIENT_ID else None


class TokenValidator(BearerTokenValidator):
    def authenticate_token(self, token_string: str) -> Token | None:
        return STORE.access.get(token_string)


class UserInfo_(UserInfoEndpoint):
    def get_issuer(self) -> str:
        return request.host_url.rstrip("/")

    def generate_user_info(self, user, scope):
        return user_info(user, scope)


def create_app() -> Flask:
    app = Flask(__name__)
    app.secret_key = secrets.token_bytes(32)
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = lambda *a, **k: secrets.token_urlsafe(32)
    server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
    server.register_grant(AuthorizationCodeGrant, [PKCEForEveryClient(), CodeIDToken(require_nonce=False)])
    server.register_grant(RefreshTokenGrant, [RefreshIDToken()])
    protector = ResourceProtector()
    protector.register_token_validator(TokenValidator())
    server.register_endpoint(UserInfo_(resource_protector=protector))

    @app.get("/.well-known/openid-configuration")
    def discovery():
        issuer = request.host_url.rstrip("/")
        return jsonify(
            issuer=issuer,
            authorization_endpoint=issuer + "/authorize",
            token_endpoint=issuer + "/token",
            userinfo_endpoint=issuer + "/userinfo",
            jwks_uri=issuer + "/jwks",
            response_types_supported=["code"],
            subject_types_supported=["public"],
            id_token_signing_alg_values_supported=["RS256"],
            scopes_supported=list(SCOPES),
            code_challenge_methods_supported=["S256"],
            token_endpoint_auth_methods_supported=["client_secret_basic"],
            grant_types_supported=["authorization_code", "refresh_token"],
        )

    key_set = KeySet([signing_key()]).as_dict(private=False)

    @app.get("/jwks")
    def jwks():
        return jsonify(key_set)

    @app.route("/authorize", methods=["GET", "POST"])
    def authorize():
        """Login when there is no session, consent when asked (prompt=consent) or not yet given,
        then the code: the peer's interaction flow, without its interaction records."""
        if "uid" not in session:
            session["resume"] = request.full_path
            return redirect("/login")
        try:
            grant = server.get_consent_grant(end_user=MEMBER)  # validates the request first
        except OAuth2Error as error:
            return server.handle_error_response(None, error)
        wants_consent = request.values.get("prompt") == "consent" or CLIENT_ID not in STORE.consented
        if request.method == "GET" and wants_consent:
            return (
                f"<!doctype html><title>Consent</title><p>{escape(grant.client.client_id)} wants "
                f'{escape(grant.request.payload.scope)}</p><form method="post" action="{escape(request.full_path)}">'
                '<button type="submit" name="decision" value="allow">Allow</button></form>'
            )
        if request.method == "POST":
            STORE.consented.add(CLIENT_ID)
        # The request was validated above: answer from the grant, instead of
        # `server.create_authorization_response`, which would validate it all over again.
        try:
            return server.handle_response(*grant.create_authorization_response(grant.redirect_uri, MEMBER))
        except OAuth2Error as error:
            return server.handle_error_response(None, error)

    @app.route("/login", methods=["GET", "POST"])
    def login():
        if request.method == "GET":
            return (
                '<!doctype html><title>Sign in</title><form method="post" action="/login">'
                '<input type="text" name="username"><input type="password" name="password">'
                '<button type="submit">Sign in</button></form>'
            )
        if request.form.get("username") != USERNAME or not secrets.compare_digest(
            request.form.get("password", ""), PASSWORD
        ):
            return "bad credentials", 401
        session["uid"], session["auth_time"] = MEMBER.id, int(time.time())
        return redirect(session.pop("resume", "/"))

    @app.post("/token")
    def token():
        return server.create_token_response()

    @app.route("/userinfo", methods=["GET", "POST"])
    def userinfo():
        return server.create_endpoint_response("userinfo")

    return app


def __getattr__(name: str):
    """`granian bench.floor_provider:app` builds the app on first access, so importing the
    module for its constants builds nothing."""
    if name == "app":
        globals()["app"] = create_app()
        return globals()["app"]
    raise AttributeError(name)
