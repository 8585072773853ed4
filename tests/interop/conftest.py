"""Interop set-up: a registered app, a member, and the member's browser (tests/flows.Browser over
HTTP) for the front channel, so that each client library runs the rest exactly as its docs show."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin

import pytest

from tests.conftest import unavailable
from tests.factories import REDIRECT_URI, make_client, make_member
from tests.flows import Browser

SCOPE = "openid profile email credits:read analytics:read offline_access"


def tool_unavailable(reason: str) -> None:
    unavailable(reason, "the interop tests")


@dataclass
class Setup:
    base: str
    client_id: str
    client_secret: str
    redirect_uri: str
    email: str
    member: object


@pytest.fixture
def setup(live_server) -> Setup:
    member = make_member(tier="pro", name="Parker Pro")
    client, secret = make_client(name="Interop App", redirect_uris=[REDIRECT_URI])
    return Setup(live_server.url, client.client_id, secret, REDIRECT_URI, member.email, member)


def front_channel(
    base: str, authorization_url: str, email: str, browser: Browser | None = None, allow: bool = True
) -> str:
    """The member's part: open the app's authorization URL, sign in, answer the consent page;
    returns the address the provider sends the browser back to (the app's callback)."""
    browser = browser or Browser(base)
    response = browser.follow(browser.get(authorization_url))
    if response.status_code == 200 and 'type="password"' in response.text:
        response = browser.login(email)
    if response.status_code == 200 and 'name="decision"' in response.text:
        response = browser.consent(allow=allow)
    assert response.status_code == 302, response.text[:500]
    return urljoin(response.url, response.headers["Location"])
