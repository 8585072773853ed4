"""Races, proven on PostgreSQL with real concurrent HTTP requests against a server (serve.py) with
several workers and threads: single use holds because consumption is one conditional UPDATE
(and consent one INSERT ... ON CONFLICT), never a read followed by a write."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from sqlalchemy import select

from app.core.extensions import db
from app.models import AuthorizationCode, Consent, Token
from tests.factories import make_client, make_member
from tests.flows import USERINFO, Browser, RelyingParty, csrf_token, hidden, query, sign_in
from tests.production.servers import requires_postgres, running

pytestmark = requires_postgres
N = 20


@pytest.fixture(scope="module")
def server(app, settings, tmp_path_factory):
    # 2 workers x 10 threads: all 20 requests are in flight at once, in two processes.
    with running(
        settings, tmp_path_factory.mktemp("race-logs"), workers=2, threads=10, DATABASE_POOL_SIZE="10"
    ) as server:
        yield server


def all_at_once(send, n: int = N) -> list[requests.Response]:
    """Send n requests from n threads released together by a barrier."""
    barrier = threading.Barrier(n)

    def one(_):
        barrier.wait(timeout=60)
        return send()

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(one, range(n)))


def tokens_of(client) -> list[Token]:
    db.session.expire_all()
    return db.session.scalars(select(Token).where(Token.client_id == client.id).order_by(Token.id)).all()


def test_one_code_redeemed_by_20_concurrent_requests(server):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(server.url, client.client_id, secret)
    params, _ = sign_in(server.url, rp, member.email, scope="openid profile offline_access")

    responses = all_at_once(lambda: rp.exchange(params["code"]))

    winners = [r for r in responses if r.status_code == 200]
    losers = [r for r in responses if r.status_code != 200]
    assert len(winners) == 1, [r.text for r in responses]
    assert [(r.status_code, r.json()["error"]) for r in losers] == [(400, "invalid_grant")] * (N - 1)

    # Exactly one pair was ever written, and the reuse revoked it (RFC 6749 4.1.2).
    rows = tokens_of(client)
    assert len(rows) == 1
    assert rows[0].revoked_at is not None
    code = db.session.scalar(select(AuthorizationCode).where(AuthorizationCode.client_id == client.id))
    assert code.used_at is not None and code.grant_id == rows[0].grant_id

    won = winners[0].json()
    userinfo = requests.get(server(USERINFO), headers={"Authorization": f"Bearer {won['access_token']}"}, timeout=30)
    assert userinfo.status_code == 401
    assert rp.refresh(won["refresh_token"]).json()["error"] == "invalid_grant"


def test_one_refresh_token_presented_by_20_concurrent_requests(server):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(server.url, client.client_id, secret)
    params, _ = sign_in(server.url, rp, member.email, scope="openid offline_access")
    first = rp.exchange(params["code"])
    assert first.status_code == 200, first.text
    refresh_token = first.json()["refresh_token"]

    responses = all_at_once(lambda: rp.refresh(refresh_token))

    assert sorted(r.status_code for r in responses) == [200] + [400] * (N - 1), [r.text for r in responses]
    assert {r.json()["error"] for r in responses if r.status_code != 200} == {"invalid_grant"}

    # One new pair, in the same family: never a second family.
    rows = tokens_of(client)
    assert len(rows) == 2
    assert len({row.grant_id for row in rows}) == 1
    assert rows[0].refresh_used_at is not None
    # The same refresh token presented again (even at the same moment) is reuse: the whole
    # family, new pair included, is revoked.
    assert all(row.revoked_at is not None for row in rows)
    new_refresh = next(r for r in responses if r.status_code == 200).json()["refresh_token"]
    assert rp.refresh(new_refresh).json()["error"] == "invalid_grant"


def test_concurrent_consents_for_one_member_and_app_make_one_row(server):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(server.url, client.client_id, secret)
    browser = Browser(server.url)

    # N sign-in requests of one browser, each parked on its consent page.
    pages = []
    for i in range(N):
        page = browser.authorize(rp.auth_params(scope="openid profile email"))
        if i == 0:
            page = browser.login(member.email)
        assert page.status_code == 200 and 'name="decision"' in page.text, page.text[:300]
        pages.append(
            {
                "csrf_token": csrf_token(page.text),
                "interaction": hidden(page.text, "interaction"),
                "decision": "allow",
                "scope": ["openid", "profile", "email"],
            }
        )
    assert len({p["interaction"] for p in pages}) == N
    cookies = browser.session.cookies.get_dict()
    forms = iter(pages)
    lock = threading.Lock()

    def consent():
        with lock:
            form = next(forms)
        return requests.post(server("/consent"), data=form, cookies=cookies, allow_redirects=False, timeout=60)

    responses = all_at_once(consent)

    assert [r.status_code for r in responses] == [302] * N, [r.text[:300] for r in responses if r.status_code != 302]
    codes = {query(r.headers["Location"]).get("code") for r in responses}
    assert None not in codes and len(codes) == N
    db.session.expire_all()
    consents = db.session.scalars(select(Consent).where(Consent.user_id == member.id)).all()
    assert len(consents) == 1
    assert set(consents[0].scope.split()) == {"openid", "profile", "email"}
