"""The OpenAPI 3.1 description of `/v1`, served at `/openapi.yaml` and `/api/openapi`.

The document is written by hand (openapi.yaml, next to this module) because it is the contract:
the tests validate real responses against it, so code and document cannot drift apart."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from flask import Blueprint, Response, request

from app.protocol.metadata import not_modified
from app.web.api.versioning import SERVICE_VERSION

DOCUMENT = Path(__file__).with_name("openapi.yaml")

docs = Blueprint("api_docs", __name__)


@dataclass(frozen=True)
class Rendition:
    body: bytes
    mimetype: str
    etag: str


@cache
def _document() -> tuple[Rendition, Rendition]:
    """The YAML as written and the same as JSON, each with its own ETag; read once per process."""
    text = DOCUMENT.read_bytes()
    as_json = json.dumps(yaml.safe_load(text), indent=2).encode()
    digest = hashlib.sha256(text).hexdigest()[:32]
    return Rendition(text, "application/yaml", f'"{digest}"'), Rendition(
        as_json, "application/json", f'"{digest}-json"'
    )


def openapi_document() -> dict:
    return json.loads(_document()[1].body)


def _serve(rendition: Rendition, negotiated: bool = False) -> Response:
    headers = {
        "Cache-Control": "public, max-age=300",
        "ETag": rendition.etag,
        "x-service-version": SERVICE_VERSION,
        "Access-Control-Allow-Origin": "*",
    }
    if negotiated:
        headers["Vary"] = "Accept"  # a cache must not hand the JSON to a client that asked for YAML
    if not_modified(rendition.etag, request.headers.get("If-None-Match")):
        return Response(status=304, headers=headers)
    return Response(rendition.body, mimetype=rendition.mimetype, headers=headers)


@docs.get("/openapi.yaml")
def openapi_yaml() -> Response:
    return _serve(_document()[0])


@docs.get("/api/openapi")
def openapi_negotiated() -> Response:
    """YAML by default; JSON for a client that prefers it (`Accept: application/json`)."""
    as_yaml, as_json = _document()
    best = request.accept_mimetypes.best_match(["application/yaml", "application/json"], default="application/yaml")
    return _serve(as_json if best == "application/json" else as_yaml, negotiated=True)
