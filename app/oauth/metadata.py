"""The discovery document (OIDC Discovery 1.0 section 3), built once per app and served as
precomputed bytes with an ETag."""

from __future__ import annotations

import hashlib
import json

from flask import Flask
from werkzeug.http import parse_etags, unquote_etag

from app.auth.second_factor import ACR_VALUES
from app.oauth.endpoints import INTROSPECTION_AUTH_METHODS, REVOCATION_AUTH_METHODS
from app.scopes import SCOPES, SUPPORTED_SCOPES

DISCOVERY_PATH = "/.well-known/openid-configuration"
AUTHORIZE_PATH = "/api/auth/oauth2/authorize"
TOKEN_PATH = "/api/auth/oauth2/token"
USERINFO_PATH = "/api/auth/oauth2/userinfo"
JWKS_PATH = "/api/auth/jwks"
REVOCATION_PATH = "/api/auth/oauth2/revoke"
INTROSPECTION_PATH = "/api/auth/oauth2/introspect"
END_SESSION_PATH = "/api/auth/oauth2/endsession"


def discovery_document(config: dict) -> dict:
    issuer = config["ISSUER_URL"]
    claims = sorted({c for s in SCOPES.values() for c in s.claims})
    claims += ["iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "amr", "acr", config["USER_ID_CLAIM"]]
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + AUTHORIZE_PATH,
        "token_endpoint": issuer + TOKEN_PATH,
        "userinfo_endpoint": issuer + USERINFO_PATH,
        "jwks_uri": issuer + JWKS_PATH,
        "revocation_endpoint": issuer + REVOCATION_PATH,
        "revocation_endpoint_auth_methods_supported": list(REVOCATION_AUTH_METHODS),
        "introspection_endpoint": issuer + INTROSPECTION_PATH,
        "introspection_endpoint_auth_methods_supported": list(INTROSPECTION_AUTH_METHODS),
        "end_session_endpoint": issuer + END_SESSION_PATH,
        "scopes_supported": list(SUPPORTED_SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": list(dict.fromkeys(claims)),
        # REFEDS assurance profiles: one factor, or two (ask with acr_values=...mfa).
        "acr_values_supported": list(ACR_VALUES),
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "prompt_values_supported": ["none", "login", "consent"],
        "authorization_response_iss_parameter_supported": True,
        "ui_locales_supported": ["en"],
        "display_values_supported": ["page"],
        "claim_types_supported": ["normal"],
    }


class PreparedDocument:
    """JSON bytes and their ETag, computed once."""

    def __init__(self, document: dict):
        self.body = json.dumps(document, separators=(",", ":")).encode()
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'


def published_headers(etag: str, max_age: int) -> list[tuple[str, str]]:
    """What discovery and the key set carry besides their body: cacheable by anyone for `max_age`
    seconds (JWKS_MAX_AGE), revalidated by ETag, readable from browser apps on other origins."""
    return [("Cache-Control", f"public, max-age={max_age}"), ("ETag", etag), ("Access-Control-Allow-Origin", "*")]


def not_modified(etag: str, if_none_match: str | None) -> bool:
    """A conditional GET that already holds this version (RFC 9110 13.1.2: a list of tags, weak
    comparison, `*`). Parsed, not searched as text: one tag may be a prefix of another."""
    if not if_none_match:
        return False
    return parse_etags(if_none_match).contains_weak(unquote_etag(etag)[0])


def init_metadata(app: Flask) -> None:
    app.extensions["discovery"] = PreparedDocument(discovery_document(app.config))
