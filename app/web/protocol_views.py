"""The protocol routes. Thin: each hands the request to Authlib or to authorize.py."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, request
from werkzeug.wrappers import Response as BaseResponse

from app.core.capabilities import (
    AS_METADATA_PATH,
    AUTHORIZE_PATH,
    DISCOVERY_PATH,
    INTROSPECTION_PATH,
    JWKS_PATH,
    REGISTRATION_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    USERINFO_PATH,
)
from app.core.extensions import csrf
from app.protocol import authorize, registration, token_endpoint
from app.protocol.jwks import keystore
from app.protocol.metadata import not_modified, published_headers
from app.protocol.server import server

bp = Blueprint("oauth", __name__)


def _cached_json(body: bytes, etag: str) -> Response:
    """Public, cacheable JSON with conditional GET (discovery and the key set, when the WSGI
    front (app/protocol/front.py, published.py) hands the request on)."""
    headers = published_headers(etag, int(current_app.config["JWKS_MAX_AGE"]))
    if not_modified(etag, request.headers.get("If-None-Match")):
        return Response(status=304, headers=headers)
    return Response(body, mimetype="application/json", headers=headers)


@bp.get(DISCOVERY_PATH)
def discovery() -> Response:
    doc = current_app.extensions["discovery"]
    return _cached_json(doc.body, doc.etag)


@bp.get(AS_METADATA_PATH)
def as_metadata() -> Response:
    """RFC 8414 authorization server metadata: OIDC discovery's facts (app/protocol/metadata.py)."""
    doc = current_app.extensions["as_metadata"]
    return _cached_json(doc.body, doc.etag)


@bp.get(JWKS_PATH)
def jwks() -> Response:
    snap = keystore.snapshot()
    return _cached_json(snap.jwks_body, snap.jwks_etag)


@bp.route(AUTHORIZE_PATH, methods=["GET", "POST"])
@csrf.exempt  # relying parties may POST the authorization request (OIDC Core 3.1.2.1)
def authorize_endpoint() -> BaseResponse:
    return authorize.run(server.create_oauth2_request(None))


@bp.post(REGISTRATION_PATH)
@csrf.exempt  # an agent's JSON POST, no cookie
def register_client() -> Response:
    """Dynamic client registration (RFC 7591) for AI agents: app/protocol/registration.py."""
    return registration.register(request._get_current_object())  # type: ignore[attr-defined]


@bp.post(TOKEN_PATH)
@csrf.exempt
def token() -> Response:
    """Answered at the front for a relying party's plain form POST (app/protocol/token_endpoint.py)."""
    return token_endpoint.respond(request._get_current_object())  # type: ignore[attr-defined]


@bp.route(USERINFO_PATH, methods=["GET", "POST"])
@csrf.exempt
def userinfo() -> Response:
    return server.create_endpoint_response("userinfo")


@bp.post(REVOCATION_PATH)
@csrf.exempt
def revoke() -> Response:
    return server.create_endpoint_response("revocation")


@bp.post(INTROSPECTION_PATH)
@csrf.exempt
def introspect() -> Response:
    return server.create_endpoint_response("introspection")
