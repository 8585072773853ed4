"""Client ID Metadata Documents: an AI agent's client id is the https URL of a JSON document
describing it (its name, its redirect URIs), which the provider reads itself - the way current MCP
clients register (MCP authorization spec; draft-ietf-oauth-client-id-metadata-document). This
module reads and checks one document; app/services/agent_clients.py keeps what it read.

Reading a URL a stranger chose is a server-side request forgery risk, so the read is fenced:
- the URL: https, a path, no fragment, query, user information or dot segments, at most 255
  characters (development also takes `http` on a loopback host);
- the address: the host is resolved once and every address it has must be a public one - no
  private, loopback, link-local, shared, reserved, multicast or unspecified address (IPv4-mapped
  IPv6 included) outside development - and the connection goes to that checked address, with the
  name kept for TLS (SNI and certificate) and `Host`, so a second resolution (DNS rebinding)
  cannot move it;
- the exchange: no redirects, a connect and read timeout and an overall deadline that a server
  trickling bytes cannot stretch, at most `max_bytes` of body (5 KB: a document is a few hundred
  bytes), status 200, a JSON content type;
- the document: a JSON object whose `client_id` is exactly the URL, with 1 to 10 redirect URIs
  (https, or http on a loopback host for an agent on the member's own machine), a public client
  (`token_endpoint_auth_method` none), the authorization code grant.
Each refusal is a `DocumentRefused` whose message says what to fix, never the body read."""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3

from app.core.capabilities import GRANT_TYPES, PUBLIC_AUTH_METHOD, RESPONSE_TYPES
from app.core.scopes import SUPPORTED_SCOPES

MAX_CLIENT_ID_LENGTH = 255
MAX_REDIRECT_URIS = 10
MAX_URI_LENGTH = 500
MAX_NAME_LENGTH = 120
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
USER_AGENT = "Credits-ID client-metadata-fetcher"


class DocumentRefused(Exception):
    """A client id document that cannot be used, and why (shown to the member and the developer)."""


class _Unreachable(Exception):
    """One address of the host refused the connection: the next one is tried."""


@dataclass(frozen=True)
class AgentDocument:
    """What the provider keeps of a valid document."""

    client_id: str
    name: str
    redirect_uris: list[str]
    scope: str
    homepage_url: str | None


def _is_loopback_name(host: str | None) -> bool:
    return host is not None and host.lower() in LOOPBACK_NAMES


def looks_like_document_id(client_id: str) -> bool:
    """Whether a client id names a metadata document (an http(s) URL) rather than a registered app
    (whose ids are random strings): the authorization endpoint's fork."""
    return client_id.startswith(("https://", "http://"))


def check_client_id_url(client_id: str, development: bool) -> tuple[str, str, int, str]:
    """The URL's scheme, host, port and request target, if it may name a document; else DocumentRefused."""
    if len(client_id) > MAX_CLIENT_ID_LENGTH:
        raise DocumentRefused(f"The client id is longer than {MAX_CLIENT_ID_LENGTH} characters.")
    try:
        url = urlsplit(client_id)
        port = url.port
    except ValueError:
        raise DocumentRefused("The client id is not a valid URL.") from None
    host = url.hostname
    if url.scheme != "https" and not (development and url.scheme == "http" and _is_loopback_name(host)):
        raise DocumentRefused("The client id must be an https URL.")
    if not host or url.username is not None or url.password is not None:
        raise DocumentRefused("The client id URL must name a host, without user information.")
    if url.fragment or "#" in client_id or url.query:
        raise DocumentRefused("The client id URL must not carry a query or fragment.")
    segments = url.path.split("/")
    if url.path in ("", "/") or any(s in (".", "..") for s in segments):
        raise DocumentRefused("The client id URL must have a path, without . or .. segments.")
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in client_id):
        raise DocumentRefused("The client id URL must be plain ASCII without spaces.")
    return url.scheme, host, port or (443 if url.scheme == "https" else 80), url.path


def permitted_address(address: str, allow_private: bool) -> bool:
    """Whether the provider may connect to `address`: a public unicast one (or anything, in development)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if allow_private:
        return True
    return ip.is_global and not ip.is_multicast and not ip.is_reserved and not ip.is_unspecified


@dataclass(frozen=True)
class DocumentFetcher:
    """Reads documents within the fences above. `allow_private`: development's loopback agents;
    `ca_file`: certificates trusted besides the system's (a development agent's own)."""

    allow_private: bool = False
    timeout: float = 3.0
    max_bytes: int = 5120
    ca_file: str | None = None

    def fetch(self, client_id: str) -> AgentDocument:
        scheme, host, port, target = check_client_id_url(client_id, self.allow_private)
        addresses = self._resolve(host, port)
        for address in addresses[:-1]:
            try:
                return parse_document(client_id, self._get(scheme, host, port, target, address))
            except _Unreachable:
                continue  # the next address the name has (`localhost`: ::1, then 127.0.0.1)
        try:
            return parse_document(client_id, self._get(scheme, host, port, target, addresses[-1]))
        except _Unreachable:
            raise DocumentRefused("The client metadata document could not be read: the connection failed.") from None

    def _resolve(self, host: str, port: int) -> list[str]:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError):
            raise DocumentRefused(f"The host {host} of the client id could not be resolved.") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses or not all(permitted_address(a, self.allow_private) for a in addresses):
            raise DocumentRefused(f"The host {host} resolves to a private or reserved address; it is not fetched.")
        return addresses

    def _get(self, scheme: str, host: str, port: int, target: str, address: str) -> bytes:
        deadline = time.monotonic() + self.timeout
        timeout = urllib3.Timeout(connect=self.timeout, read=self.timeout)
        pool: urllib3.HTTPConnectionPool
        if scheme == "https":
            context = ssl.create_default_context()
            if self.ca_file:
                context.load_verify_locations(self.ca_file)
            pool = urllib3.HTTPSConnectionPool(
                address, port, timeout=timeout, retries=False, ssl_context=context,
                server_hostname=host, assert_hostname=host,
            )  # fmt: skip
        else:
            pool = urllib3.HTTPConnectionPool(address, port, timeout=timeout, retries=False)
        netloc = host if port == (443 if scheme == "https" else 80) else f"{host}:{port}"
        headers = {"Host": netloc, "Accept": "application/json", "User-Agent": USER_AGENT}
        try:
            response = pool.urlopen("GET", target, headers=headers, redirect=False, preload_content=False)
            try:
                if response.status != 200:
                    raise DocumentRefused(f"The client id URL answered HTTP {response.status}, not 200.")
                kind = (response.headers.get("Content-Type") or "").partition(";")[0].strip().lower()
                if kind != "application/json" and not kind.endswith("+json"):
                    raise DocumentRefused("The client id URL must answer application/json.")
                declared = response.headers.get("Content-Length")
                if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                    raise DocumentRefused(f"The client metadata document is larger than {self.max_bytes} bytes.")
                body = b""
                while True:
                    chunk = response.read(1024)
                    if not chunk:
                        return body
                    body += chunk
                    if len(body) > self.max_bytes:
                        raise DocumentRefused(f"The client metadata document is larger than {self.max_bytes} bytes.")
                    if time.monotonic() > deadline:
                        raise DocumentRefused("The client metadata document took too long to arrive.")
            finally:
                response.release_conn()
        except DocumentRefused:
            raise
        except urllib3.exceptions.NewConnectionError:
            raise _Unreachable() from None
        except (urllib3.exceptions.TimeoutError, TimeoutError):
            raise DocumentRefused("The client metadata document took too long to arrive.") from None
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            reason = "its TLS certificate was refused" if "SSL" in type(error).__name__ else "the connection failed"
            raise DocumentRefused(f"The client metadata document could not be read: {reason}.") from None
        finally:
            pool.close()


def _redirect_uri(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_URI_LENGTH:
        raise DocumentRefused("Each redirect URI must be a string of at most 500 characters.")
    try:
        url = urlsplit(value)
        url.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise DocumentRefused(f"The redirect URI {value!r} is not a valid URL.") from None
    if url.fragment or "#" in value or url.username is not None or not url.hostname:
        raise DocumentRefused(f"The redirect URI {value!r} must be absolute, without fragment or user information.")
    if url.scheme == "https" or (url.scheme == "http" and _is_loopback_name(url.hostname)):
        return value
    raise DocumentRefused(f"The redirect URI {value!r} must be https (or http on a loopback address).")


def _text(document: dict[str, Any], name: str, most: int) -> str | None:
    value = document.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > most or any(ord(c) < 0x20 for c in value):
        raise DocumentRefused(f"'{name}' must be a line of text of at most {most} characters.")
    return value.strip() or None


def parse_document(client_id: str, body: bytes) -> AgentDocument:
    """The document's facts, checked (see the module's docstring)."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise DocumentRefused("The client metadata document is not JSON.") from None
    if not isinstance(document, dict):
        raise DocumentRefused("The client metadata document must be a JSON object.")
    if document.get("client_id") != client_id:
        raise DocumentRefused("The document's client_id must equal the URL it is served from.")
    return agent_metadata(document, client_id, urlsplit(client_id).hostname or client_id)


def agent_metadata(document: dict[str, Any], client_id: str, fallback_name: str) -> AgentDocument:
    """An agent's client metadata (RFC 7591 2 names), checked: what a metadata document says,
    and what an agent sends to the registration endpoint (app/protocol/registration.py)."""
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= MAX_REDIRECT_URIS:
        raise DocumentRefused(f"'redirect_uris' must list 1 to {MAX_REDIRECT_URIS} redirect URIs.")
    redirect_uris = list(dict.fromkeys(_redirect_uri(uri) for uri in uris))
    method = document.get("token_endpoint_auth_method", PUBLIC_AUTH_METHOD)
    if method != PUBLIC_AUTH_METHOD:
        raise DocumentRefused("AI agents are public clients: token_endpoint_auth_method 'none'.")
    grants = document.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or "authorization_code" not in grants or not set(grants) <= set(GRANT_TYPES):
        raise DocumentRefused("'grant_types' must include authorization_code and name only it and refresh_token.")
    responses = document.get("response_types", ["code"])
    if not isinstance(responses, list) or not set(responses) <= set(RESPONSE_TYPES) or not responses:
        raise DocumentRefused("'response_types' may name only 'code'.")
    scope_text = _text(document, "scope", 1000)
    scopes = [s for s in SUPPORTED_SCOPES if scope_text is None or s in scope_text.split()]
    homepage = _text(document, "client_uri", MAX_URI_LENGTH)
    if homepage is not None and not homepage.startswith("https://"):
        homepage = None  # shown as a link on the consent page: https only
    name = _text(document, "client_name", MAX_NAME_LENGTH) or fallback_name
    return AgentDocument(client_id, name, redirect_uris, " ".join(scopes), homepage)
