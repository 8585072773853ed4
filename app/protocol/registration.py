"""Dynamic client registration (RFC 7591) for AI agents that do not publish a Client ID Metadata
Document (MCP clients that predate them register this way): POST the client's metadata as JSON,
get a client id back.

Open registration (no initial access token), so it is fenced: only public clients (PKCE S256, no
secret: `token_endpoint_auth_method` none), redirect URIs checked as a document's are (https, or
http on a loopback address), the authorization code grant; and a budget per client address
(CLIENT_REGISTRATION_LIMIT), past which 429 with `Retry-After`. A registered agent is never
trusted (the member always consents, on a page that calls it unverified) and never billed. Errors
are RFC 7591 3.2.2's: `invalid_redirect_uri`, `invalid_client_metadata`."""

from __future__ import annotations

import json
from typing import Any

from flask import Response, current_app, jsonify
from werkzeug.wrappers import Request

from app.core.capabilities import PUBLIC_AUTH_METHOD, RESPONSE_TYPES
from app.core.scopes import scope_list
from app.protocol.errors import machine_error
from app.services import throttle
from app.services.agent_clients import register_agent
from app.services.client_documents import DocumentRefused, agent_metadata
from app.store.unit_of_work import commit

LIMIT_SCOPE = "client-registration"
MAX_BODY = 16 * 1024
FALLBACK_NAME = "Unnamed AI agent"


def _refusal(error: str, description: str) -> Response:
    response = jsonify(error=error, error_description=description)
    response.status_code = 400
    response.headers["Cache-Control"] = "no-store"
    return response


def register(req: Request) -> Response:
    """One registration request: 201 with the client's information, or the error that says why."""
    spent = throttle.spend(
        throttle.parsed_limit(current_app.config["CLIENT_REGISTRATION_LIMIT"]), LIMIT_SCOPE, throttle.client_ip(req)
    )
    if spent is not None and not spent.allowed:
        response = machine_error(429, "Too many client registrations from this address. Retry later.")
        response.headers["Retry-After"] = str(spent.reset)
        return response
    if req.mimetype != "application/json":
        return _refusal("invalid_client_metadata", "Send the client metadata as application/json.")
    if (req.content_length or 0) > MAX_BODY:
        return _refusal("invalid_client_metadata", "The client metadata is too large.")
    try:
        document = json.loads(req.get_data(cache=False)[: MAX_BODY + 1])
    except (ValueError, UnicodeDecodeError):
        return _refusal("invalid_client_metadata", "The client metadata is not JSON.")
    if not isinstance(document, dict):
        return _refusal("invalid_client_metadata", "The client metadata must be a JSON object.")
    try:
        metadata = agent_metadata(document, "", FALLBACK_NAME)
    except DocumentRefused as refused:
        error = "invalid_redirect_uri" if "redirect" in str(refused).lower() else "invalid_client_metadata"
        return _refusal(error, str(refused))
    agent = register_agent(metadata)
    commit()
    body: dict[str, Any] = {
        "client_id": agent.client_id,
        "client_id_issued_at": int(agent.created_at.timestamp()),
        "client_name": agent.name,
        "redirect_uris": agent.redirect_uris,
        "grant_types": list(document.get("grant_types", ["authorization_code"])),
        "response_types": list(RESPONSE_TYPES),
        "token_endpoint_auth_method": PUBLIC_AUTH_METHOD,
        "scope": " ".join(scope_list(agent.allowed_scopes)),
    }
    if agent.homepage_url:
        body["client_uri"] = agent.homepage_url
    response = jsonify(body)
    response.status_code = 201
    response.headers["Cache-Control"] = "no-store"
    return response
