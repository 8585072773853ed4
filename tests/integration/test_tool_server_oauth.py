"""An AI agent signs a member in to the tool server with Credits ID, as the MCP authorization spec
has it, driven by the MCP SDK's own OAuth client over real HTTP (serve.py: granian): the 401 points
to the protected resource metadata (RFC 9728), which names the provider, whose authorization server
metadata (RFC 8414) says it reads Client ID Metadata Documents; the agent's client id is the https
URL of its document; the member signs in and consents in the browser (the consent page names the
agent as unverified and where its document lives); the token is asked for with `resource=<MCP_URL>`
(RFC 8707) and reaches only the member's own data, unmetered. And the refusals: each audience
elsewhere, catalog-wide tools, a document that does not check out."""

from __future__ import annotations

import asyncio
import base64
import contextvars
import datetime
import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from app.core.extensions import db
from app.models import ApiUsage, Registration, Token
from app.models import Client as ClientRow
from tests.agent_support import DocumentHost, document_host
from tests.api_support import bearer, make_catalog, mint_token
from tests.conftest import free_port
from tests.factories import make_client, make_member
from tests.flows import Browser
from tests.key_support import index_catalog, make_key
from tests.tool_support import ToolServers, tool_servers

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    with document_host(tmp_path_factory.mktemp("agent-documents")) as host:
        yield host


@pytest.fixture(scope="module")
def servers(app, settings, tmp_path_factory, documents: DocumentHost):
    directory = tmp_path_factory.mktemp("tool-server-oauth")
    with tool_servers(settings, directory, own_issuer=True, CLIENT_DOCUMENT_CA_FILE=str(documents.ca_file)) as running:
        yield running


class Memory:
    """The agent's token storage (TokenStorage)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def agent_document(client_id: str, redirect_uri: str, **extra) -> dict:
    return {
        "client_id": client_id,
        "client_name": "Test Agent",
        "client_uri": "https://agent.example.test",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }


def run_in_thread(coroutine_function):
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(context.run, asyncio.run, coroutine_function()).result()


def test_an_agent_signs_a_member_in_and_reads_only_their_own_data(servers: ToolServers, documents: DocumentHost):
    catalog = make_catalog()
    index_catalog()
    member = make_member(tier="pro", profile_id=catalog.mine)
    redirect_uri = f"http://localhost:{free_port()}/callback"
    client_id = documents.serve(
        "/agents/test-agent.json", agent_document(documents.base + "/agents/test-agent.json", redirect_uri)
    )
    browser = Browser(servers.rest)
    seen: dict[str, str] = {}

    def consent_in_the_browser(authorization_url: str) -> str:
        """What the member does: open the link, sign in, read the consent page, allow."""
        response = browser.follow(browser.get(authorization_url))
        response = browser.login(member.email)
        assert response.status_code == 200 and 'name="decision"' in response.text, response.text[:500]
        seen["consent"] = response.text
        response = browser.consent(allow=True)
        assert response.status_code == 302
        return response.headers["Location"]

    async def redirect_handler(authorization_url: str) -> None:
        seen["authorize"] = authorization_url
        seen["callback"] = await anyio.to_thread.run_sync(consent_in_the_browser, authorization_url)

    async def callback_handler() -> AuthorizationCodeResult:
        params = {k: v[0] for k, v in parse_qs(urlsplit(seen["callback"]).query).items()}
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    storage = Memory()
    provider = OAuthClientProvider(
        servers.mcp,
        OAuthClientMetadata(
            redirect_uris=[redirect_uri], client_name="Test Agent", grant_types=["authorization_code", "refresh_token"]
        ),
        storage,
        redirect_handler,
        callback_handler,
        client_metadata_url=client_id,
    )

    async def session():
        async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
            async with Client(streamable_http_client(servers.mcp, http_client=http)) as client:
                return (
                    await client.call_tool("get_profile", {"id_value": catalog.mine}),
                    await client.call_tool("get_profile_charts", {"id_value": catalog.mine}),
                    await client.call_tool("get_profile", {"id_value": catalog.other}),
                    await client.call_tool("search", {"keyword": "track"}),
                )

    own, charts, other, catalog_wide = run_in_thread(session)

    # The authorization request: the document's URL as client id, the tool server as resource, PKCE S256.
    asked = {k: v[0] for k, v in parse_qs(urlsplit(seen["authorize"]).query).items()}
    assert asked["client_id"] == client_id and asked["resource"] == servers.mcp
    assert asked["code_challenge_method"] == "S256" and "openid" in asked["scope"].split()
    # The consent page names the agent, unverified, and where its document lives.
    assert "Test Agent" in seen["consent"] and "Unverified AI agent" in seen["consent"]
    assert client_id in seen["consent"]
    # The member's own data, as /v1 answers it.
    assert not own.is_error and own.structured_content["id"] == catalog.mine
    assert not charts.is_error
    # Another member's profile: 403, as on /v1; the catalog: 403 insufficient_scope.
    assert other.is_error and other.structured_content["code"] == 403
    assert catalog_wide.is_error and catalog_wide.structured_content["code"] == 403
    assert catalog_wide.structured_content["error"] == "insufficient_scope"
    # Sign-in access is not metered; the agent is known by its document, not billed.
    db.session.remove()
    assert db.session.scalar(db.select(db.func.count()).select_from(ApiUsage)) == 0
    agent = db.session.scalar(db.select(ClientRow).where(ClientRow.client_id == client_id))
    assert agent.registration == Registration.METADATA_DOCUMENT and agent.name == "Test Agent"
    assert agent.client_type == "public" and agent.document_fetched_at is not None
    row = db.session.scalar(db.select(Token).where(Token.client_id == agent.id))
    assert row.resource == servers.mcp
    # The member sees the agent among their connected apps, to disconnect it like any other.
    account = browser.get("/account")
    assert account.status_code == 200 and "Test Agent" in account.text

    # The agent's token is for the tool server alone: /v1 and userinfo refuse it.
    token = storage.tokens.access_token
    refused = requests.get(servers.rest + "/v1/me", headers=bearer(token), timeout=30)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    userinfo = requests.get(servers.rest + "/api/auth/oauth2/userinfo", headers=bearer(token), timeout=30)
    assert userinfo.status_code == 401

    # A refresh keeps the audience; naming another resource is invalid_target.
    refresh = storage.tokens.refresh_token
    assert refresh
    wrong = requests.post(
        servers.rest + "/api/auth/oauth2/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh,
            "client_id": client_id,
            "resource": servers.rest + "/v1",
        },
        timeout=30,
    )
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_target"
    again = requests.post(
        servers.rest + "/api/auth/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id, "resource": servers.mcp},
        timeout=30,
    )
    assert again.status_code == 200, again.text
    fresh = again.json()["access_token"]
    assert requests.get(servers.rest + "/v1/me", headers=bearer(fresh), timeout=30).status_code == 401
    listed = requests.post(
        servers.mcp,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            **bearer(fresh),
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
        timeout=30,
    )
    assert listed.status_code == 200, listed.text


def test_discovery_documents_lead_from_the_tool_server_to_the_provider(servers: ToolServers):
    challenge = requests.post(servers.mcp, json={}, timeout=30)
    assert challenge.status_code == 401
    header = challenge.headers["WWW-Authenticate"]
    origin = servers.mcp.rsplit("/mcp", 1)[0]
    metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
    assert header.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in header
    assert 'scope="openid profile credits:read analytics:read"' in header
    for url in (metadata_url, origin + "/.well-known/oauth-protected-resource"):
        document = requests.get(url, timeout=30)
        assert document.status_code == 200 and document.headers["Access-Control-Allow-Origin"] == "*"
        resource = document.json()
        assert resource["resource"] == servers.mcp
        assert resource["authorization_servers"] == [servers.rest]
        assert resource["bearer_methods_supported"] == ["header"]
    server = requests.get(servers.rest + "/.well-known/oauth-authorization-server", timeout=30).json()
    oidc = requests.get(servers.rest + "/.well-known/openid-configuration", timeout=30).json()
    assert server == oidc and server["issuer"] == servers.rest
    assert server["client_id_metadata_document_supported"] is True
    assert (
        server["code_challenge_methods_supported"] == ["S256"]
        and "none" in server["token_endpoint_auth_methods_supported"]
    )


def test_a_sign_in_token_for_the_provider_is_refused_at_the_tool_server(servers: ToolServers):
    member = make_member(tier="pro")
    app_row, _ = make_client()
    token = mint_token(member, app_row)  # a relying party's token: no resource, the provider's own APIs
    response = requests.post(
        servers.mcp,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={**bearer(token), "Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert response.status_code == 401
    header = response.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in header and "resource_metadata=" in header
    assert response.json()["error"]["message"] == "The access token is invalid, expired or revoked"
    # A key still takes the key door beside a token.
    _, secret = make_key()
    keyed = requests.post(
        servers.mcp,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            **bearer(token),
            "x-api-key": secret,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
        timeout=30,
    )
    assert keyed.status_code == 200, keyed.text


def _authorize(servers: ToolServers, client_id: str, redirect_uri: str, **extra) -> requests.Response:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": "openid credits:read",
        "state": "s",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "resource": servers.mcp,
        **extra,
    }
    return requests.get(servers.rest + "/api/auth/oauth2/authorize", params=params, allow_redirects=False, timeout=30)


@pytest.mark.parametrize(
    ("case", "reply", "says"),
    [
        ("wrong-id", {"document": "other-id"}, "client_id must equal the URL"),
        ("bad-redirect", {"redirect": "http://evil.example.test/cb"}, "must be https"),
        ("secret-client", {"extra": {"token_endpoint_auth_method": "client_secret_basic"}}, "public clients"),
        ("oversize", {"pad": 6000}, "larger than 5120 bytes"),
        ("oversize-unannounced", {"pad": 6000, "no_length": True}, "larger than 5120 bytes"),
        ("slow", {"trickle": 0.05}, "took too long"),
        ("not-json", {"raw": b"<html>hello</html>"}, "not JSON"),
        ("missing", {"status": 404}, "answered HTTP 404"),
    ],
)
def test_a_document_that_does_not_check_out_refuses_the_sign_in(servers, documents, case, reply, says):
    redirect_uri = "http://localhost:7301/callback"
    path = f"/agents/{case}.json"
    url = documents.base + path
    document = agent_document(
        url if reply.get("document") is None else documents.base + "/elsewhere.json",
        reply.get("redirect", redirect_uri),
        **reply.get("extra", {}),
    )
    if "pad" in reply:
        document["padding"] = "x" * reply["pad"]
    body = reply.get("raw") or __import__("json").dumps(document).encode()
    documents.serve(
        path,
        body,
        status=reply.get("status", 200),
        trickle=reply.get("trickle", 0.0),
        no_length=reply.get("no_length", False),
    )
    if case == "missing":
        documents.replies.pop(path)
    response = _authorize(servers, url, redirect_uri)
    assert response.status_code == 400, response.text[:300]
    assert "Agent not recognised" in response.text and says in response.text
    assert "Location" not in response.headers  # never a redirect to an unchecked address
    db.session.remove()
    assert db.session.scalar(db.select(ClientRow).where(ClientRow.client_id == url)) is None


def test_an_unprotected_resource_or_an_unregistered_redirect_is_refused(servers, documents):
    redirect_uri = "http://localhost:7302/callback"
    url = documents.serve("/agents/good.json", agent_document(documents.base + "/agents/good.json", redirect_uri))
    unknown = _authorize(servers, url, redirect_uri, resource="https://elsewhere.example.test/mcp")
    assert unknown.status_code == 302
    assert "error=invalid_target" in unknown.headers["Location"] and unknown.headers["Location"].startswith(
        redirect_uri
    )
    elsewhere = _authorize(servers, url, "http://localhost:7302/other")
    assert elsewhere.status_code == 400 and "Location" not in elsewhere.headers
    # The document was read once: the second request used the kept copy.
    assert documents.hits["/agents/good.json"] == 1


def test_a_code_redeemed_for_another_resource_is_invalid_target_and_burnt(servers, documents):
    member = make_member(tier="basic")
    redirect_uri = "http://localhost:7303/callback"
    url = documents.serve("/agents/burn.json", agent_document(documents.base + "/agents/burn.json", redirect_uri))
    browser = Browser(servers.rest)
    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    response = browser.follow(
        browser.get(
            "/api/auth/oauth2/authorize",
            params={
                "response_type": "code",
                "client_id": url,
                "redirect_uri": redirect_uri,
                "scope": "openid credits:read",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": servers.mcp,
            },
        )
    )
    response = browser.login(member.email)
    response = browser.consent(allow=True)
    code = parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]
    token = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "client_id": url}
    token["code_verifier"] = verifier
    wrong = requests.post(servers.rest + "/api/auth/oauth2/token", data={**token, "resource": servers.rest}, timeout=30)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_target"
    again = requests.post(servers.rest + "/api/auth/oauth2/token", data={**token, "resource": servers.mcp}, timeout=30)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"  # one try per code
    db.session.remove()
    assert db.session.scalar(db.select(db.func.count()).select_from(Token)) == 0


def test_an_agent_without_a_document_registers_itself_and_signs_a_member_in(servers: ToolServers):
    """The SDK's dynamic registration path (RFC 7591): no client_metadata_url."""
    catalog = make_catalog()
    member = make_member(tier="basic", profile_id=catalog.mine)
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    browser = Browser(servers.rest)
    seen: dict[str, str] = {}

    def consent_in_the_browser(authorization_url: str) -> str:
        browser.follow(browser.get(authorization_url))
        response = browser.login(member.email)
        seen["consent"] = response.text
        return browser.consent(allow=True).headers["Location"]

    async def redirect_handler(authorization_url: str) -> None:
        seen["callback"] = await anyio.to_thread.run_sync(consent_in_the_browser, authorization_url)

    async def callback_handler() -> AuthorizationCodeResult:
        params = {k: v[0] for k, v in parse_qs(urlsplit(seen["callback"]).query).items()}
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    storage = Memory()
    metadata = OAuthClientMetadata(
        redirect_uris=[redirect_uri], client_name="Registered Agent", token_endpoint_auth_method="none"
    )
    provider = OAuthClientProvider(servers.mcp, metadata, storage, redirect_handler, callback_handler)

    async def session():
        async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
            async with Client(streamable_http_client(servers.mcp, http_client=http)) as client:
                return await client.call_tool("get_profile_credits", {"id_value": catalog.mine})

    credits = run_in_thread(session)
    assert not credits.is_error and credits.structured_content["totalCount"] > 0
    assert storage.client_info.client_id.startswith("agent_")
    assert "Registered Agent" in seen["consent"] and "registered itself" in seen["consent"]
    db.session.remove()
    agent = db.session.scalar(db.select(ClientRow).where(ClientRow.client_id == storage.client_info.client_id))
    assert agent.registration == Registration.DYNAMIC and agent.client_type == "public"
    assert agent.client_secret_hash is None and not agent.trusted


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"redirect_uris": ["http://evil.example.test/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        (
            {"redirect_uris": ["https://a.example.test/cb"], "token_endpoint_auth_method": "client_secret_basic"},
            "invalid_client_metadata",
        ),
        (
            {"redirect_uris": ["https://a.example.test/cb"], "grant_types": ["client_credentials"]},
            "invalid_client_metadata",
        ),
        ([], "invalid_client_metadata"),
    ],
)
def test_registrations_that_do_not_check_out(servers: ToolServers, metadata, error):
    response = requests.post(servers.rest + "/api/auth/oauth2/register", json=metadata, timeout=30)
    assert response.status_code == 400 and response.json()["error"] == error
    db.session.remove()
    assert db.session.scalar(db.select(db.func.count()).select_from(ClientRow)) == 0


def test_registrations_have_their_own_budget(app, monkeypatch):
    monkeypatch.setitem(app.config, "CLIENT_REGISTRATION_LIMIT", "3 per hour")
    client = app.test_client()
    metadata = {"redirect_uris": ["http://127.0.0.1:9/cb"], "client_name": "Budget Agent"}
    answers = [
        client.post("/api/auth/oauth2/register", json=metadata, environ_base={"REMOTE_ADDR": "198.51.100.7"})
        for _ in range(4)
    ]
    assert [a.status_code for a in answers] == [201, 201, 201, 429]
    assert answers[-1].json["error"] == "slow_down" and int(answers[-1].headers["Retry-After"]) > 0
    assert answers[0].json["token_endpoint_auth_method"] == "none"
    assert answers[0].json["redirect_uris"] == metadata["redirect_uris"]


def test_a_kept_document_is_read_again_once_stale_and_a_disable_stands(servers, documents):
    redirect_uri = "http://localhost:7304/callback"
    path = "/agents/stale.json"
    url = documents.serve(path, agent_document(documents.base + path, redirect_uri))
    assert _authorize(servers, url, redirect_uri).status_code == 302  # to the login page
    assert documents.hits[path] == 1
    documents.serve(path, agent_document(url, redirect_uri, client_name="Renamed Agent"))
    assert _authorize(servers, url, redirect_uri).status_code == 302
    assert documents.hits[path] == 1  # fresh: the kept copy answered
    db.session.remove()
    agent = db.session.scalar(db.select(ClientRow).where(ClientRow.client_id == url))
    agent.document_fetched_at = agent.document_fetched_at - datetime.timedelta(hours=2)
    agent.status = "disabled"
    agent.disabled_by_admin = True
    db.session.commit()
    time.sleep(0.5)  # on PostgreSQL the server drops its copy of the app once the change's notice arrives
    refused = _authorize(servers, url, redirect_uri)
    assert documents.hits[path] == 2  # stale: read again
    assert refused.status_code == 403 and "Application disabled" in refused.text
    db.session.remove()
    agent = db.session.scalar(db.select(ClientRow).where(ClientRow.client_id == url))
    assert agent.name == "Renamed Agent" and agent.status == "disabled"  # the new name; still disabled
