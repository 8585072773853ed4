"""Revocation against refreshes in flight, proven on PostgreSQL with real concurrent HTTP requests:
an app keeps several refresh-token chains rotating as fast as it can against a server with several
workers and threads while the member disconnects it, an administrator suspends the member, or an
administrator disables the app. Once that page has answered, no token of the member and app may be
live - not even the successor pair that a refresh in flight at that moment stored - and the chains
end: userinfo answers 401 and the next refresh `invalid_grant`.

At READ COMMITTED the revoking UPDATE cannot see a row that an uncommitted rotation inserts; the
store makes the two serialize (app/store/tokens.py, SpendAndStore and end_grants). Each kind
runs ROUNDS times with CHAINS chains: before that, about one round in three left a chain alive."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import requests
from sqlalchemy import select

from app.core.extensions import db
from app.models import Token
from tests.factories import make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import fresh, post_form, signed_in, userinfo
from tests.production.servers import requires_postgres, running

pytestmark = requires_postgres
CHAINS = 4  # refresh-token chains of one member and app, each refreshing in its own thread
ROUNDS = int(os.environ.get("REVOCATION_RACE_ROUNDS", "6"))  # per kind of revocation
SCOPE = "openid profile offline_access"  # with an ID token in each answer, as apps refresh


@pytest.fixture(scope="module")
def server(app, settings, tmp_path_factory):
    with running(
        settings, tmp_path_factory.mktemp("revocation-race-logs"), workers=2, threads=8, DATABASE_POOL_SIZE="8"
    ) as server:
        yield server


@pytest.fixture
def admin_console(server):
    """An administrator signed in to the console (every test starts with empty tables)."""
    admin = make_member(role="admin")
    return signed_in(server.url, admin.email, "/console/users")


@dataclass
class Chain:
    """One refresh-token chain, refreshed in a loop until refused (or, if revocation missed it,
    until it has shown that it outlived the revocation)."""

    rp: RelyingParty
    access_token: str
    refresh_token: str
    rotations: int = 0
    after_revocation: list[int] = field(default_factory=list)  # statuses of refreshes sent after it answered
    last_error: str | None = None

    def run(self, revoked: threading.Event, give_up: threading.Event) -> None:
        while not give_up.is_set():
            sent_after = revoked.is_set()
            response = self.rp.refresh(self.refresh_token)
            if sent_after:
                self.after_revocation.append(response.status_code)
            if response.status_code != 200:
                self.last_error = response.json().get("error")
                return
            body = response.json()
            self.access_token, self.refresh_token = body["access_token"], body["refresh_token"]
            self.rotations += 1
            if len(self.after_revocation) >= 5:
                return  # alive well after the revocation answered: shown, no need to go on


def connected_chains(server, member, client, secret) -> tuple[list[Chain], Browser]:
    """CHAINS grants of one member to one app (one sign-in, then single sign-on), each redeemed."""
    rp = RelyingParty(server.url, client.client_id, secret)
    chains, browser = [], None
    for _ in range(CHAINS):
        params, browser = sign_in(server.url, rp, member.email, scope=SCOPE, browser=browser)
        tokens = rp.exchange(params["code"])
        assert tokens.status_code == 200, tokens.text
        chains.append(Chain(RelyingParty(server.url, client.client_id, secret), **_pair(tokens.json())))
    return chains, browser


def _pair(body: dict) -> dict:
    return {"access_token": body["access_token"], "refresh_token": body["refresh_token"]}


def race(chains: list[Chain], revoke: Callable[[], requests.Response]) -> None:
    """Run every chain; once each has rotated a few times, revoke (the page's request); then let
    the chains run into the revocation."""
    revoked, give_up = threading.Event(), threading.Event()
    threads = [threading.Thread(target=chain.run, args=(revoked, give_up)) for chain in chains]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while min(chain.rotations for chain in chains) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        answer = revoke()
        assert answer.status_code in (302, 303), answer.text[:300]
    finally:
        revoked.set()
        for thread in threads:
            thread.join(timeout=10)
        give_up.set()
        for thread in threads:
            thread.join(timeout=30)


def assert_all_dead(chains: list[Chain], *, user_id: str, client_pk: int, refused: str = "invalid_grant") -> None:
    """No token row of the member and app is live, no refresh sent after the revocation answered
    got a pair, and each chain's last tokens are refused (`refused`: the token endpoint's error)."""
    fresh()
    live = db.session.scalars(
        select(Token.id).where(Token.user_id == user_id, Token.client_id == client_pk, Token.revoked_at.is_(None))
    ).all()
    survived = [chain.after_revocation for chain in chains if 200 in chain.after_revocation]
    assert live == [] and survived == [], f"live token rows {live}; chains refreshed after the revocation: {survived}"
    for chain in chains:
        assert chain.last_error in ("invalid_grant", refused), chain  # a refresh in flight loses as invalid_grant
        assert userinfo(chain.rp.base, chain.access_token).status_code == 401
        assert chain.rp.refresh(chain.refresh_token).json()["error"] == refused


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_a_disconnect_ends_every_chain_whatever_is_in_flight(server, round_):
    member = make_member()
    client, secret = make_client()
    chains, browser = connected_chains(server, member, client, secret)

    race(chains, lambda: post_form(browser, "/account", f"/account/apps/{client.client_id}/revoke"))

    assert_all_dead(chains, user_id=member.id, client_pk=client.id)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_a_suspension_ends_every_chain_whatever_is_in_flight(server, admin_console, round_):
    member = make_member()
    client, secret = make_client()
    chains, _ = connected_chains(server, member, client, secret)
    page = admin_console.get(f"/console/users?q={member.email}")

    race(
        chains,
        lambda: admin_console.post(
            f"/console/users/{member.id}/suspend",
            data={"csrf_token": csrf_token(page.text), "reason": "Abuse report 42"},
        ),
    )

    assert_all_dead(chains, user_id=member.id, client_pk=client.id)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_disabling_the_app_ends_every_chain_whatever_is_in_flight(server, admin_console, round_):
    member = make_member()
    client, secret = make_client()
    chains, _ = connected_chains(server, member, client, secret)

    app_page = f"/console/apps/{client.client_id}"
    race(chains, lambda: post_form(admin_console, app_page, f"{app_page}/disable"))

    # A disabled app is unknown to the token endpoint: its refreshes are refused as `invalid_client`.
    assert_all_dead(chains, user_id=member.id, client_pk=client.id, refused="invalid_client")
