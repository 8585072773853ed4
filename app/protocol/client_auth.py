"""Who is calling the token, revocation and introspection endpoints: one client, named once,
authenticated one way.

RFC 6749 2.3 lets a client authenticate by exactly one method per request, and 3.2 forbids a
parameter twice. Authlib tries each registered method in turn and takes the first that passes,
and it reads `client_id` from the query and the body merged (query first): a request could name
one app in the query, another in the body and a third in a Basic header, and the parts of the
provider that look at "the client" (authentication, the throttle, CORS) could each see another.
So every reader asks `named_client_id`, which refuses such a request, and `check_request`
refuses a request that carries credentials two ways (or in the URL) before any method runs.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import unquote

from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Request

from app.store.apps import App

# Every credential a request body may carry; none of them may ride in the URL (RFC 6749 2.3.1).
BODY_CREDENTIALS = ("client_secret", "client_assertion", "client_assertion_type")


class MultiValues(Protocol):
    """A form or query string as Werkzeug gives it (several values per name)."""

    def get(self, key: str, default: Any = None) -> Any: ...
    def getlist(self, key: str) -> list[str]: ...


class Lists(Protocol):
    """Several values per name: all that naming the client reads of a form or a query string."""

    def getlist(self, key: str) -> list[str]: ...


class HeaderValues(Protocol):
    """Request headers, as a plain mapping or Werkzeug's Headers: a value with a default."""

    def get(self, key: str, default: str) -> str: ...


def split_basic(headers: HeaderValues) -> tuple[str | None, str | None]:
    """Parse `Authorization: Basic`, tolerating garbage (Authlib's parser raises on bad UTF-8)."""
    auth = headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() != "basic" or not value:
        return None, None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None, None
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        return None, None
    # RFC 6749 2.3.1: both parts are form-urlencoded before being joined.
    return unquote(client_id), unquote(secret)


def _uses_basic(headers: Mapping[str, str]) -> bool:
    return headers.get("Authorization", "").partition(" ")[0].lower() == "basic"


def named_client_id(headers: HeaderValues, form: Lists, args: Lists) -> str | None:
    """The one client a request speaks for: the Basic user name, the body's `client_id` and the
    query's `client_id` must agree where present. InvalidRequestError when they do not, or when a
    `client_id` is sent twice; None when no client is named at all."""
    named = [form.getlist("client_id"), args.getlist("client_id")]
    if any(len(values) > 1 for values in named):
        raise InvalidRequestError("The 'client_id' parameter must be sent once.")
    basic_id, _ = split_basic(headers)
    ids = {value for value in [basic_id, *(v for values in named for v in values)] if value}
    if len(ids) > 1:
        raise InvalidRequestError("The request names more than one client.")
    return ids.pop() if ids else None


def check_request(headers: Mapping[str, str], form: MultiValues, args: MultiValues) -> str | None:
    """Refuse a request that authenticates two ways (a Basic header and credentials in the body)
    or puts credentials in the URL (where logs keep them); return the client it names."""
    if any(args.get(name) is not None for name in BODY_CREDENTIALS):
        raise InvalidRequestError("Client credentials must be sent in the request body, never in the URL.")
    if _uses_basic(headers) and any(form.get(name) is not None for name in BODY_CREDENTIALS):
        raise InvalidRequestError(
            "Use one client authentication method: the Authorization header or the request body, not both."
        )
    return named_client_id(headers, form, args)


# -- the three methods, as Authlib calls them: (query_client, OAuth2Request) -> App | None -----

QueryClient = Callable[[str | None], App | None]


def authenticate_client_secret_basic(query: QueryClient, request: OAuth2Request) -> App | None:
    client_id, secret = split_basic(request.headers)
    client = query(client_id) if client_id and secret else None
    return client if client is not None and secret and client.check_client_secret(secret) else None


def authenticate_client_secret_post(query: QueryClient, request: OAuth2Request) -> App | None:
    if request.headers.get("Authorization"):
        return None  # one authentication mechanism per request (RFC 6749 2.3)
    client_id, secret = request.form.get("client_id"), request.form.get("client_secret")
    client = query(client_id) if client_id and secret else None
    return client if client is not None and client.check_client_secret(secret) else None


def authenticate_none(query: QueryClient, request: OAuth2Request) -> App | None:
    if request.headers.get("Authorization") or request.form.get("client_secret"):
        return None
    client_id = named_client_id(request.headers, request.form, request.args)
    return query(client_id) if client_id else None


# Each method app/core/capabilities.py names, by its name: a method named there without an
# implementation here stops the app at start (a KeyError in init_oauth).
METHODS: dict[str, Callable[[QueryClient, OAuth2Request], App | None]] = {
    "client_secret_basic": authenticate_client_secret_basic,
    "client_secret_post": authenticate_client_secret_post,
    "none": authenticate_none,
}
