"""The OpenAPI 3.1 description of `/v1`, served at `/openapi.yaml` and `/api/openapi`.

The document is written by hand (openapi.yaml, next to this module) because it is the contract:
the tests validate real responses against it, so code and document cannot drift apart."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import yaml
from flask import Blueprint, Response, request

from app.api.limits import SERVICE_VERSION

DOCUMENT = Path(__file__).with_name("openapi.yaml")

docs = Blueprint("api_docs", __name__)


@cache
def _document() -> tuple[bytes, bytes, str]:
    """The YAML as written, the same as JSON, and an ETag; read once per process."""
    text = DOCUMENT.read_bytes()
    as_json = json.dumps(yaml.safe_load(text), indent=2).encode()
    return text, as_json, '"' + hashlib.sha256(text).hexdigest()[:32] + '"'


def openapi_document() -> dict:
    return json.loads(_document()[1])


def _serve(body: bytes, mimetype: str, etag: str) -> Response:
    headers = {"Cache-Control": "public, max-age=300", "ETag": etag, "x-service-version": SERVICE_VERSION,
               "Access-Control-Allow-Origin": "*"}
    if etag in request.headers.get("If-None-Match", ""):
        return Response(status=304, headers=headers)
    return Response(body, mimetype=mimetype, headers=headers)


@docs.get("/openapi.yaml")
def openapi_yaml() -> Response:
    text, _, etag = _document()
    return _serve(text, "application/yaml", etag)


@docs.get("/api/openapi")
def openapi_negotiated() -> Response:
    """YAML by default; JSON for a client that prefers it (`Accept: application/json`)."""
    text, as_json, etag = _document()
    best = request.accept_mimetypes.best_match(["application/yaml", "application/json"], default="application/yaml")
    if best == "application/json":
        return _serve(as_json, "application/json", etag + "-json")
    return _serve(text, "application/yaml", etag)
