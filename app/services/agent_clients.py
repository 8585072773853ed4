"""AI agents known by their Client ID Metadata Document: the provider's copy of each document,
kept on the agent's `clients` row (registration `metadata_document`) and read again once it is
older than CLIENT_DOCUMENT_TTL.

The authorization endpoint asks `agent_app(client_id)` for a client id that is a URL: a fresh copy
answers at once; otherwise the document is fetched (app/services/client_documents.py, within its
fences), within a per-host budget (CLIENT_DOCUMENT_FETCH_LIMIT: the provider is nobody's request
amplifier), and the row written with what it says now - name, redirect URIs, scopes, site. The
token endpoint and the consent page read the row only. A document that can no longer be read or
no longer checks out refuses the sign-in; the row, and an administrator's disable, stay.

An agent is a public client (PKCE S256, no secret), never trusted (the member always consents),
and not billed (no developer registered it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import current_app

from app.core.capabilities import PUBLIC_AUTH_METHOD
from app.models import ClientType, Registration
from app.models.base import new_secret, utcnow
from app.services import throttle
from app.services.client_documents import AgentDocument, DocumentFetcher, DocumentRefused
from app.store import store
from app.store.apps import App, ClientIdTaken, RegisteredApp

FETCH_SCOPE = "client-document"
DYNAMIC_PREFIX = "agent_"  # a self-registered agent's client id (never a URL: the authorization endpoint's fork)


def fetcher() -> DocumentFetcher:
    """The fetcher the settings describe: private addresses only in development."""
    config = current_app.config
    return DocumentFetcher(
        allow_private=config["APP_ENV"] == "development",
        timeout=float(config["CLIENT_DOCUMENT_TIMEOUT"]),
        max_bytes=int(config["CLIENT_DOCUMENT_MAX_BYTES"]),
        ca_file=config["CLIENT_DOCUMENT_CA_FILE"] or None,
    )


def _fresh(app: App) -> bool:
    fetched = app.document_fetched_at
    ttl = timedelta(seconds=int(current_app.config["CLIENT_DOCUMENT_TTL"]))
    return fetched is not None and utcnow() - fetched < ttl


def agent_app(client_id: str) -> App:
    """The agent `client_id` names, from a fresh copy of its document or a new read of it; else
    DocumentRefused. The caller commits (the row is written in the request's unit of work)."""
    known = store().apps.by_client_id(client_id)
    if known is not None and known.document_url is not None and _fresh(known):
        return known
    host = urlsplit(client_id).hostname or "?"
    limit = throttle.parsed_limit(current_app.config["CLIENT_DOCUMENT_FETCH_LIMIT"])
    spent = throttle.spend(limit, FETCH_SCOPE, host.lower()[:255])
    if spent is not None and not spent.allowed:
        raise DocumentRefused(f"Too many client metadata documents read from {host} lately; try again in a minute.")
    try:
        return store().apps.keep_agent(
            client_id, {**_columns(fetcher().fetch(client_id)), "document_fetched_at": utcnow()}
        )
    except ClientIdTaken:
        raise DocumentRefused("This client id belongs to an application registered another way.") from None


def register_agent(metadata: AgentDocument) -> RegisteredApp:
    """An agent that registers itself (RFC 7591, app/protocol/registration.py): a new public client
    under a random id, with the metadata it sent, checked as a document's would be. The caller
    budgets the registrations and commits."""
    client_id = DYNAMIC_PREFIX + new_secret(18)
    return store().apps.insert(
        {**_columns(metadata), "client_id": client_id, "registration": Registration.DYNAMIC.value}
    )


def _columns(document: AgentDocument) -> dict[str, Any]:
    """An agent's row, as its metadata describes it: a public client, never trusted."""
    return {
        "name": document.name,
        "client_type": ClientType.PUBLIC.value,
        "token_endpoint_auth_method": PUBLIC_AUTH_METHOD,
        "redirect_uris": document.redirect_uris,
        "post_logout_redirect_uris": [],
        "allowed_scopes": document.scope,
        "require_pkce": True,
        "trusted": False,
        "homepage_url": document.homepage_url,
        "logo_url": None,  # a stranger's image on the consent page: not shown
    }
