"""Registered applications (OAuth clients) and how they authenticate."""

from __future__ import annotations

import hmac
import ipaddress
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import ClientMixin
from sqlalchemy import JSON, Boolean, ForeignKey, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from app.core.capabilities import DEFAULT_SECRET_AUTH_METHOD, GRANT_TYPES, RESPONSE_TYPES
from app.core.extensions import Model
from app.core.scopes import scope_list
from app.models.base import UTCDateTime, sha256_hex, utcnow


def _loopback_ip_host(host: str | None) -> str | None:
    """`127.0.0.1` or `[::1]` as written in a URI's authority, for a loopback IP literal; else None."""
    if not host:
        return None
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        return None
    return (f"[{host}]" if ":" in host else host) if loopback else None


def loopback_redirect_matches(registered: str, requested: str) -> bool:
    """RFC 8252 7.3: a native app listening on the loopback interface gets a port from the system
    when it starts, so a registered `http://127.0.0.1/cb` (or `[::1]`) matches the same URI with
    any port. Everything else - scheme, address, path, query - still matches exactly, and the
    requested authority must be nothing but the address and a port."""
    try:
        reg, req = urlsplit(registered), urlsplit(requested)
        port = req.port
    except ValueError:
        return False
    host = _loopback_ip_host(reg.hostname)
    if reg.scheme != "http" or host is None or reg.netloc not in (host, f"{host}:{reg.port}"):
        return False
    if req.scheme != "http" or port == 0 or req.netloc not in (host, f"{host}:{port}"):
        return False
    return (req.path, req.query, req.fragment) == (reg.path, reg.query, reg.fragment) and "#" not in requested


class ClientType(StrEnum):
    CONFIDENTIAL = "confidential"
    PUBLIC = "public"


class Registration(StrEnum):
    """How an app came to be known to the provider."""

    CONSOLE = "console"  # registered by a developer in the console or with the CLI (billed)
    # An AI agent whose client id is the https URL of its Client ID Metadata Document, read by the
    # provider when the agent first sends a member to sign in (app/services/agent_clients.py).
    METADATA_DOCUMENT = "metadata_document"
    # An AI agent that registered itself at the registration endpoint (RFC 7591), within its limits.
    DYNAMIC = "dynamic"


class ClientStatus(StrEnum):
    ACTIVE = "active"
    DISABLED = "disabled"
    # Kept (not removed) so the fee ledger and the audit trail keep their history and the
    # client id is never handed to another app; to the protocol it does not exist.
    DELETED = "deleted"

    @property
    def is_active(self) -> bool:
        """Only an active app may sign members in or use its tokens."""
        return self is ClientStatus.ACTIVE


class ClientRules(ClientMixin):
    """What the provider asks of an app, for the ORM model (the console's) and the protocol store's
    frozen record alike: one place per rule, whichever way the row was read."""

    if TYPE_CHECKING:  # the columns the rules read (declared by each class that carries them)
        client_id: str
        client_type: str
        status: str
        client_secret_hash: str | None
        previous_secret_hash: str | None
        previous_secret_expires_at: datetime | None
        token_endpoint_auth_method: str
        redirect_uris: list[str]
        allowed_scopes: str

    # -- what the rest of the provider asks of a client -------------------------------

    @property
    def is_public(self) -> bool:
        return self.client_type == ClientType.PUBLIC

    @property
    def is_active(self) -> bool:
        return ClientStatus(self.status).is_active

    @property
    def is_deleted(self) -> bool:
        return self.status == ClientStatus.DELETED

    @property
    def client_metadata(self) -> dict[str, Any]:
        """RFC 7591 metadata Authlib consults (signed userinfo is not offered: plain JSON)."""
        return {}

    # -- authlib.oauth2.rfc6749.ClientMixin ----------------------------------------------

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        # Omitting redirect_uri is allowed only when exactly one is registered.
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        """Unknown or unallowed scopes are dropped, not rejected (issue: 'unknown scopes are dropped')."""
        allowed = set(scope_list(self.allowed_scopes))
        return " ".join(s for s in scope_list(scope) if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """Exact string comparison, as OAuth 2.0 Security BCP (RFC 9700 section 4.1.3) asks, with its
        one exception: the port of a native (public) app's loopback redirect URI (RFC 8252 7.3)."""
        if redirect_uri in self.redirect_uris:
            return True
        return self.is_public and any(loopback_redirect_matches(uri, redirect_uri) for uri in self.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        """The current secret, or the previous one while its grace period lasts. Both are
        compared every time (constant time, whichever matches)."""
        digest = sha256_hex(client_secret)
        current = hmac.compare_digest(digest, self.client_secret_hash or "")
        previous = hmac.compare_digest(digest, self.previous_secret_hash or "")
        in_grace = self.previous_secret_expires_at is not None and utcnow() < self.previous_secret_expires_at
        return current or (previous and in_grace)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        # A client authenticates only the way it was registered (OIDC Registration
        # `token_endpoint_auth_method`); a public client only with `none`.
        return method == self.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type in RESPONSE_TYPES

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in GRANT_TYPES


class Client(Model, ClientRules):
    __tablename__ = "clients"

    id: Mapped[int] = mapped_column(primary_key=True)
    # 255: an agent's client id is its metadata document's URL (Registration.METADATA_DOCUMENT).
    client_id: Mapped[str] = mapped_column(String(255), unique=True)
    # SHA-256 of the secret: client secrets are 256-bit random values, so a fast hash is
    # safe, and a copy of the database does not let anyone authenticate as the client.
    client_secret_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # After a rotation with a grace period the previous secret keeps working until it expires.
    previous_secret_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    name: Mapped[str] = mapped_column(String(120))
    client_type: Mapped[str] = mapped_column(String(16), default=ClientType.CONFIDENTIAL.value)
    token_endpoint_auth_method: Mapped[str] = mapped_column(String(32), default=DEFAULT_SECRET_AUTH_METHOD)
    redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    post_logout_redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    allowed_scopes: Mapped[str] = mapped_column(Text, default="")
    require_pkce: Mapped[bool] = mapped_column(Boolean, default=True)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False)  # first-party: consent skipped
    homepage_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    logo_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    policy_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    tos_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=ClientStatus.ACTIVE.value)
    # Disabled by an administrator (or the operator's CLI): only an administrator enables it
    # again, so a suspension is not undone by the app's own developer.
    disabled_by_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    registration: Mapped[str] = mapped_column(
        String(24), default=Registration.CONSOLE.value, server_default=Registration.CONSOLE.value
    )
    # When an agent's metadata document was last read (the cache's age); None for console apps.
    document_fetched_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    def __repr__(self) -> str:
        return f"<Client {self.client_id}>"
