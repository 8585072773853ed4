"""The discovery document (OIDC Discovery 1.0 section 3), built once per app and served as
precomputed bytes with an ETag."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from werkzeug.http import parse_etags, unquote_etag

from app.core.assurance import ACR_VALUES
from app.core.capabilities import (
    AUTHORIZE_PATH,
    CODE_CHALLENGE_METHODS,
    END_SESSION_PATH,
    GRANT_TYPES,
    INTROSPECTION_AUTH_METHODS,
    INTROSPECTION_PATH,
    JWKS_PATH,
    PROMPTS,
    REGISTRATION_PATH,
    RESOURCE_METADATA_PATH,
    RESPONSE_MODES,
    RESPONSE_TYPES,
    REVOCATION_AUTH_METHODS,
    REVOCATION_PATH,
    SIGNING_ALG,
    TOKEN_AUTH_METHODS,
    TOKEN_PATH,
    USERINFO_PATH,
)
from app.core.scopes import SCOPES, SUPPORTED_SCOPES


def discovery_document(config: Mapping[str, Any]) -> dict[str, Any]:
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
        # RFC 7591, for AI agents without a metadata document: public clients only (app/protocol/registration.py).
        "registration_endpoint": issuer + REGISTRATION_PATH,
        "scopes_supported": list(SUPPORTED_SCOPES),
        "response_types_supported": list(RESPONSE_TYPES),
        "response_modes_supported": list(RESPONSE_MODES),
        "grant_types_supported": list(GRANT_TYPES),
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [SIGNING_ALG],
        "token_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "code_challenge_methods_supported": list(CODE_CHALLENGE_METHODS),
        "claims_supported": list(dict.fromkeys(claims)),
        # REFEDS assurance profiles: one factor, or two (ask with acr_values=...mfa).
        "acr_values_supported": list(ACR_VALUES),
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "prompt_values_supported": list(PROMPTS),
        "authorization_response_iss_parameter_supported": True,
        "ui_locales_supported": ["en"],
        "display_values_supported": ["page"],
        "claim_types_supported": ["normal"],
        # Client ID Metadata Documents: an AI agent's client id may be the https URL of its own
        # metadata, read by the provider (app/services/agent_clients.py; the MCP authorization spec).
        "client_id_metadata_document_supported": True,
    }


def authorization_server_metadata(config: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 8414 section 2, at /.well-known/oauth-authorization-server: the same facts as OIDC
    discovery (RFC 8414 3 lets the two documents coincide; the OIDC names are the registered
    metadata names), so a client reading either meets the same endpoints and methods."""
    return discovery_document(config)


# What an agent asks for when it signs a member in to the tool server: who they are, their own
# credits, their own analytics (on pro). `offline_access` is the agent's to add (refresh tokens).
AGENT_SCOPES = ("openid", "profile", "credits:read", "analytics:read")


def protected_resource_metadata(config: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 9728 section 2: the tool server as a protected resource - its identifier (MCP_URL,
    what an agent names with `resource=`), the one authorization server that issues its tokens,
    the scopes its tools read, and how a token is sent (the Authorization header only)."""
    return {
        "resource": config["MCP_URL"],
        "authorization_servers": [config["ISSUER_URL"]],
        "scopes_supported": list(AGENT_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "Credits ID tool server",
    }


def resource_metadata_url(mcp_url: str) -> str:
    """Where the tool server publishes its metadata (RFC 9728 3.1: the well-known path inserted
    between the host and the resource's path), the address its 401s point to."""
    url = urlsplit(mcp_url)
    return f"{url.scheme}://{url.netloc}{RESOURCE_METADATA_PATH}{url.path.rstrip('/')}"


class PreparedDocument:
    """JSON bytes and their ETag, computed once."""

    def __init__(self, document: dict[str, Any]) -> None:
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
    app.extensions["as_metadata"] = PreparedDocument(authorization_server_metadata(app.config))
